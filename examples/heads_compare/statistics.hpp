// heads_compare::statistics: the statistics of a multi-seed study: binomial and mean intervals,
// Kaplan-Meier time-to-event curves, paired comparisons, and change points of a curve.
//
// Plain std::vector<double> in, plain structs out; no tensors. Every function validates its
// arguments first and throws headgrad::ValueError naming itself and the offending values.
// Confidence levels are two-sided and must lie strictly inside (0, 1). Resampling is
// deterministic: a splitmix64 stream seeded by the caller, never a global generator, so the
// same inputs and seed give the same bits.
#pragma once

#include <cstdint>
#include <vector>

namespace heads_compare::statistics {

// A point estimate and a two-sided interval around it.
// Every field has a default, so a result that was never computed reads as zeros (n = 0:
// left out of every family), never as indeterminate memory.
struct Interval {
  double estimate = 0;
  double low = 0;
  double high = 0;
};

// --- quantiles ------------------------------------------------------------------------

// The standard normal quantile Phi^-1(p). Acklam's rational approximation (relative error
// below 1.15e-9) followed by one Halley step on Phi(x) - p computed with std::erfc (on the
// lower half, p <= 1/2, so that 1 - p never rounds). Checked against mpmath for p in
// [1e-300, 1 - 2^-52]: error below 2e-16 |x| + 1e-16 (near p = 1/2, where x is near 0,
// the error is absolute: the rounding of p itself). p = 0 gives -inf, p = 1 gives +inf;
// p outside [0, 1] or NaN throws ValueError.
// Reference: P. J. Acklam, "An algorithm for computing the inverse normal cumulative
// distribution function" (2003), with the Halley refinement given there.
double normal_quantile(double p);

// The quantile of Student's t distribution with `dof` degrees of freedom (dof > 0, real;
// +inf gives the normal quantile). For dof <= 1e4 the upper tail
//   P(T > t) = I_x(dof/2, 1/2) / 2,  x = dof / (dof + t^2)
// (I the regularized incomplete beta function, by its continued fraction with the modified
// Lentz method, Numerical Recipes 6.4; log B(dof/2, 1/2) by a Stirling series for large
// dof) is inverted by bracketing and bisection to the last bit of t. For dof > 1e4 the
// Cornish-Fisher expansion of t in powers of 1/dof (Abramowitz & Stegun 26.7.5, four terms)
// is used. Checked against mpmath for dof in [0.5, 1e6] and p in [1e-10, 1 - 1e-10]:
// error below 5e-14 |t| + 2e-15 (relative in the tails, absolute near p = 1/2).
// p = 0 or 1 gives -inf or +inf, as does a quantile beyond 1e300 (tiny dof, extreme p).
double student_t_quantile(double p, double dof);

// --- binomial proportions -------------------------------------------------------------

// The Wilson score interval for a proportion: with p = successes / n and z the
// (1 + confidence) / 2 normal quantile, the bounds are the roots in q of
//   (p - q)^2 = z^2 q (1 - q) / n,
// i.e. (p + z^2/2n -+ z sqrt(p(1-p)/n + z^2/4n^2)) / (1 + z^2/n).
// estimate = p. The bound nearer 0 (or 1) is taken as product / other root, so a tiny
// bound keeps its digits. The bounds are exactly 0 when successes = 0 and exactly 1 when
// successes = n. n = 0 gives {NaN, 0, 1}. Requires 0 <= successes <= n.
// Reference: E. B. Wilson, "Probable inference, the law of succession, and statistical
// inference", JASA 22 (1927); Agresti & Coull, The American Statistician 52 (1998).
Interval wilson_interval(std::int64_t successes, std::int64_t n, double confidence = 0.95);

// --- time to event --------------------------------------------------------------------

// A Kaplan-Meier curve as a right-continuous step function: survival[k] holds on
// [time[k], time[k + 1]). Point 0 is time 0, survival 1, at_risk = the number of subjects,
// events = 0, low = high = 1; each later point is a distinct event time t_j with
//   at_risk[j] = n_j = #{subjects with time >= t_j}  (censored at t_j still count),
//   events[j]  = d_j = #{events at t_j},
//   survival   S(t_j) = prod_{i <= j} (1 - d_i / n_i).
// Censored subjects leave the risk set after their time without an event. The pointwise
// band is the log(-log) (complementary log-log) interval on Greenwood's variance:
//   G_j = sum_{i <= j} d_i / (n_i (n_i - d_i)),  Var S = S^2 G  (Greenwood),
//   se of log(-log S) = sqrt(G) / |log S|,  [low, high] = S^exp(+-z se);
// it stays inside [0, 1]. Where S = 0 the band is [0, 0]. (R: survfit(...,
// conf.type = "log-log"); Kalbfleisch & Prentice, The Statistical Analysis of Failure Time
// Data, 1980; Greenwood, 1926.)
struct SurvivalCurve {
  std::vector<double> time;
  std::vector<double> survival;
  std::vector<double> low;
  std::vector<double> high;
  std::vector<std::int64_t> at_risk;
  std::vector<std::int64_t> events;
};

// The Kaplan-Meier estimate from per-subject times (finite, >= 0) and event flags (true =
// the event happened at that time, false = censored then). Empty input gives the single
// point {time 0, survival 1}. Throws ValueError for mismatched sizes, a negative or
// non-finite time, or a confidence outside (0, 1).
// Reference: Kaplan & Meier, "Nonparametric estimation from incomplete observations",
// JASA 53 (1958).
SurvivalCurve kaplan_meier(const std::vector<double>& times, const std::vector<bool>& event,
                           double confidence = 0.95);

// The median time to event and its interval, by R survival's rule (median.survfit): each
// of the estimate, low and high is the first time at which its curve (survival, the lower
// band, the upper band) is <= 0.5 within a tolerance of sqrt(DBL_EPSILON) (so a product
// that should be exactly 0.5 and rounds to 0.5000000000000001 counts); where that curve
// rests at 0.5 (within the tolerance) over a flat segment and drops later, the midpoint of
// the segment (its start and the next lower point's time). The horizontal line at 0.5 is
// read against the band, as Brookmeyer & Crowley (Biometrics 38, 1982) invert a test. A
// level never reached gives +inf: a median beyond the follow-up is +inf with a finite low
// when the lower band crosses.
Interval km_median(const SurvivalCurve& curve);

// The fraction of subjects with the event by time t: 1 - S(t), S the curve's step function
// (0 for t before the first event time, including t < 0). t must not be NaN.
double km_fraction_by(const SurvivalCurve& curve, double t);

// --- means and paired comparisons -----------------------------------------------------

// The Student t interval of the mean: mean -+ t_{(1+c)/2, n-1} s / sqrt(n), s the sample
// standard deviation (divisor n - 1). n = 1 gives {x[0], -inf, +inf}; n = 0 gives
// {NaN, -inf, +inf}. Values must be finite.
Interval mean_interval(const std::vector<double>& x, double confidence = 0.95);

// The percentile bootstrap interval of the mean (Efron & Tibshirani, An Introduction to the
// Bootstrap, 1993, ch. 13): `resamples` resamples of size n drawn with replacement (indices
// from splitmix64 seeded by `seed`, unbiased by rejection), their means sorted, and the
// (1-c)/2 and (1+c)/2 quantiles read with linear interpolation between order statistics
// (R's type 7, numpy's default). estimate = the sample mean. n = 0 gives {NaN, -inf, +inf};
// n = 1 gives {x[0], x[0], x[0]}. Requires resamples >= 1 and finite values.
Interval bootstrap_mean_interval(const std::vector<double>& x, std::int64_t resamples = 10000,
                                 std::uint64_t seed = 0, double confidence = 0.95);

// The Hodges-Lehmann estimate of a shift (the median of the n (n + 1) / 2 Walsh averages
// (d_i + d_j) / 2, i <= j) with the exact interval of the Wilcoxon signed-rank test
// inverted: [W_(k), W_(M + 1 - k)] of the sorted Walsh averages W, k the largest with
// coverage 1 - 2 P(T+ <= k - 1) >= confidence, T+ the signed-rank statistic under the null
// (its exact distribution for n distinct ranks). The interval moves only when the data do:
// no resampling, and ties (d_i = 0, or equal d_i) give the Walsh averages they give, not a
// degenerate percentile. Where no k reaches the confidence (n <= 5 at 0.95) the interval is
// [W_(1), W_(M)] with its own coverage 1 - 2^(1 - n). (Hollander, Wolfe & Chicken,
// Nonparametric Statistical Methods, 3rd ed., 2014, 3.2; R's wilcox.test(conf.int = TRUE)
// with exact = TRUE.) n = 0 gives {NaN, -inf, +inf} with coverage 1.
struct ShiftInterval {
  Interval shift;
  double coverage = 0;  // the interval's exact coverage under the null's symmetry
};
ShiftInterval hodges_lehmann_interval(const std::vector<double>& d, double confidence = 0.95);

// A comparison of paired measurements a[i] and b[i] (e.g. two configurations trained with
// the same seed i), on the differences d_i = a[i] - b[i].
struct PairedComparison {
  Interval mean_difference;   // bootstrap_mean_interval(d, resamples, seed, confidence)
  ShiftInterval shift;        // hodges_lehmann_interval(d, confidence): the reported interval
  std::int64_t n = 0;         // pairs (0: not computed, in no family)
  std::int64_t positive = 0;  // d_i > 0
  std::int64_t negative = 0;  // d_i < 0
  std::int64_t ties = 0;      // d_i == 0
  double sign_test_p = 0;     // exact two-sided sign test
  double holm_p = 0;          // sign_test_p after Holm's correction over a family (NaN: none)
};

// Paired comparison of a and b (equal sizes, finite values). The sign test drops ties:
// with m = positive + negative and k = min(positive, negative),
//   p = min(1, 2 P(X <= k)),  X ~ Binomial(m, 1/2);  m = 0 gives p = 1.
// (Conover, Practical Nonparametric Statistics, 3rd ed., 1999, section 3.4.) holm_p is NaN
// until holm_adjust sets it over the comparison's family.
PairedComparison paired_compare(const std::vector<double>& a, const std::vector<double>& b,
                                std::int64_t resamples = 10000, std::uint64_t seed = 0,
                                double confidence = 0.95);

// Holm's step-down adjustment of a family of p-values (Holm, Scand. J. Statist. 6, 1979;
// R's p.adjust(p, "holm")): with p sorted ascending, p_(i) becomes
// max_{j <= i} min(1, (m - j + 1) p_(j)); returned in the input's order. Each value must
// lie in [0, 1].
std::vector<double> holm_adjust(const std::vector<double>& p);

// --- change points of a curve ---------------------------------------------------------

// The first index i with values[i] >= threshold, -1 if there is none (NaN values never
// qualify). threshold must not be NaN.
std::int64_t phase_change_index(const std::vector<double>& values, double threshold);

// The index i (>= 1) maximising values[i] - values[i - 1], the earliest on ties; steps
// whose difference is NaN are skipped. -1 for fewer than 2 values or when every step is NaN.
std::int64_t largest_jump_index(const std::vector<double>& values);

}  // namespace heads_compare::statistics
