// heads_compare::statistics: quantiles, Wilson and mean intervals, Kaplan-Meier curves, paired
// comparisons and change points (definitions and references in the header).
#include "statistics.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <numbers>
#include <numeric>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>

#include "headgrad/core/error.hpp"

namespace heads_compare::statistics {

using headgrad::ValueError;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string num(double v) {
  std::ostringstream s;
  s.precision(10);
  s << v;
  return s.str();
}

[[noreturn]] void fail(const char* fn, const std::string& message) {
  throw ValueError(std::string(fn) + ": " + message);
}

void check_confidence(const char* fn, double confidence) {
  if (!(confidence > 0.0 && confidence < 1.0))
    fail(fn, "confidence " + num(confidence) + " is not in (0, 1)");
}

void check_finite(const char* fn, const char* name, const std::vector<double>& x) {
  for (std::size_t i = 0; i < x.size(); ++i)
    if (!std::isfinite(x[i]))
      fail(fn, std::string(name) + "[" + std::to_string(i) + "] is " + num(x[i]) +
                   ": values must be finite");
}

// The two-sided critical value z_{(1+c)/2}.
double normal_critical(double confidence) { return normal_quantile(0.5 + 0.5 * confidence); }

// --- normal quantile: Acklam's approximation and one Halley step -----------------------

// Phi^-1(p) for 0 < p <= 0.5 (so 1 - p never rounds and the refinement stays relative).
double normal_quantile_lower(double p) {
  static constexpr double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,
                                 -2.759285104469687e+02, 1.383577518672690e+02,
                                 -3.066479806614716e+01, 2.506628277459239e+00};
  static constexpr double b[] = {-5.447609879822406e+01, 1.615858368580409e+02,
                                 -1.556989798598866e+02, 6.680131188771972e+01,
                                 -1.328068155288572e+01};
  static constexpr double c[] = {-7.784894002430293e-03, -3.223964580411365e-01,
                                 -2.400758277161838e+00, -2.549732539343734e+00,
                                 4.374664141464968e+00,  2.938163982698783e+00};
  static constexpr double d[] = {7.784695709041462e-03, 3.224671290700398e-01,
                                 2.445134137142996e+00, 3.754408661907416e+00};
  double x;
  if (p < 0.02425) {
    const double q = std::sqrt(-2.0 * std::log(p));
    x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1.0);
  } else {
    const double q = p - 0.5, r = q * q;
    x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1.0);
  }
  // Halley step on f(x) = Phi(x) - p: u = f / phi(x), x -= u / (1 + x u / 2). The ratio
  // (Phi(x) - p) / phi(x) is formed as ((Phi(x) - p) / p) * exp(log p + x^2/2) sqrt(2 pi)
  // so that neither factor over- or underflows in the far tail.
  const double e = 0.5 * std::erfc(-x / std::sqrt(2.0)) - p;
  const double u =
      (e / p) * std::exp(std::log(p) + 0.5 * x * x) * std::sqrt(2.0 * std::numbers::pi);
  return x - u / (1.0 + 0.5 * x * u);
}

// --- Student t quantile ---------------------------------------------------------------

// The continued fraction of the incomplete beta function (Numerical Recipes 6.4, modified
// Lentz): I_x(a, b) = x^a y^b / (a B(a, b)) * cf, valid for x < (a + 1) / (a + b + 2).
double beta_continued_fraction(double a, double b, double x) {
  constexpr double tiny = 1e-300, eps = 1e-16;
  const double qab = a + b, qap = a + 1.0, qam = a - 1.0;
  double c = 1.0, d = 1.0 - qab * x / qap;
  if (std::fabs(d) < tiny) d = tiny;
  d = 1.0 / d;
  double h = d;
  for (int m = 1; m <= 100000; ++m) {
    const double m2 = 2.0 * m;
    double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
    d = 1.0 + aa * d;
    if (std::fabs(d) < tiny) d = tiny;
    c = 1.0 + aa / c;
    if (std::fabs(c) < tiny) c = tiny;
    d = 1.0 / d;
    h *= d * c;
    aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
    d = 1.0 + aa * d;
    if (std::fabs(d) < tiny) d = tiny;
    c = 1.0 + aa / c;
    if (std::fabs(c) < tiny) c = tiny;
    d = 1.0 / d;
    const double del = d * c;
    h *= del;
    if (std::fabs(del - 1.0) < eps) break;
  }
  return h;
}

// I_x(a, b) with x and y = 1 - x passed separately (each accurate), with their logs and
// log B(a, b).
double regularized_beta(double a, double b, double x, double y, double log_x, double log_y,
                        double log_beta) {
  if (x <= 0.0) return 0.0;
  if (y <= 0.0) return 1.0;
  const double front = std::exp(a * log_x + b * log_y - log_beta);
  if (x < (a + 1.0) / (a + b + 2.0)) return front * beta_continued_fraction(a, b, x) / a;
  return 1.0 - front * beta_continued_fraction(b, a, y) / b;
}

// log(Gamma(a + 1/2) / Gamma(a)). Below a = 20 from lgamma; above, lgamma's two large
// values would cancel, so the Stirling series of the difference is summed instead:
//   1/2 log a + sum_k (2^(1-k) - 2) B_k / (k (k-1) a^(k-1)),  k = 2, 4, ..., 10
// (B_k the Bernoulli numbers); the first omitted term is below 4e-3 a^-11 < 2e-17.
double log_gamma_ratio_half(double a) {
  if (a < 20.0) return std::lgamma(a + 0.5) - std::lgamma(a);
  const double r = 1.0 / a, r2 = r * r;
  return 0.5 * std::log(a) +
         r * (-1.0 / 8.0 + r2 * (1.0 / 192.0 + r2 * (-1.0 / 640.0 +
                                                     r2 * (17.0 / 14336.0 - r2 * 31.0 / 18432.0))));
}

// P(T > t) for t >= 0: I_x(dof/2, 1/2) / 2 with x = dof / (dof + t^2), y = 1 - x, both
// formed from u = log(t^2 / dof) without cancellation.
double student_t_upper_tail(double t, double dof) {
  if (t == 0.0) return 0.5;
  const double u = 2.0 * std::log(t / std::sqrt(dof));
  double log_x, log_y;
  if (u <= 0.0) {
    log_x = -std::log1p(std::exp(u));
    log_y = u + log_x;
  } else {
    log_y = -std::log1p(std::exp(-u));
    log_x = log_y - u;
  }
  const double a = 0.5 * dof;
  const double log_beta = 0.5 * std::log(std::numbers::pi) - log_gamma_ratio_half(a);
  return 0.5 * regularized_beta(a, 0.5, std::exp(log_x), std::exp(log_y), log_x, log_y, log_beta);
}

// Cornish-Fisher: t = z + g1/v + g2/v^2 + g3/v^3 + g4/v^4 (Abramowitz & Stegun 26.7.5).
double student_t_cornish_fisher(double z, double dof) {
  const double z2 = z * z;
  const double g1 = (z2 + 1.0) * z / 4.0;
  const double g2 = ((5.0 * z2 + 16.0) * z2 + 3.0) * z / 96.0;
  const double g3 = (((3.0 * z2 + 19.0) * z2 + 17.0) * z2 - 15.0) * z / 384.0;
  const double g4 =
      ((((79.0 * z2 + 776.0) * z2 + 1482.0) * z2 - 1920.0) * z2 - 945.0) * z / 92160.0;
  return z + (g1 + (g2 + (g3 + g4 / dof) / dof) / dof) / dof;
}

// --- resampling -----------------------------------------------------------------------

// splitmix64 (Steele, Lea & Flood, OOPSLA 2014): a fixed, seedable 64-bit stream.
struct SplitMix64 {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n) without modulo bias: reject the 2^64 mod n lowest draws.
  std::uint64_t below(std::uint64_t n) {
    const std::uint64_t threshold = (0 - n) % n;
    for (;;) {
      const std::uint64_t r = next();
      if (r >= threshold) return r % n;
    }
  }
};

double mean_of(const std::vector<double>& x) {
  return std::accumulate(x.begin(), x.end(), 0.0) / static_cast<double>(x.size());
}

// The type-7 sample quantile of sorted values: linear between order statistics.
double sorted_quantile(const std::vector<double>& sorted, double q) {
  const double h = (static_cast<double>(sorted.size()) - 1.0) * q;
  const std::size_t lo = static_cast<std::size_t>(std::floor(h));
  if (lo + 1 >= sorted.size()) return sorted.back();
  return sorted[lo] + (h - static_cast<double>(lo)) * (sorted[lo + 1] - sorted[lo]);
}

Interval bootstrap_mean_checked(const std::vector<double>& x, std::int64_t resamples,
                                std::uint64_t seed, double confidence) {
  const std::size_t n = x.size();
  if (n == 0) return {kNaN, -kInf, kInf};
  const double estimate = mean_of(x);
  if (n == 1) return {estimate, estimate, estimate};
  SplitMix64 rng{seed};
  std::vector<double> means(static_cast<std::size_t>(resamples));
  const double* data = x.data();
  for (double& m : means) {
    double sum = 0.0;
    for (std::size_t i = 0; i < n; ++i) sum += data[rng.below(n)];
    m = sum / static_cast<double>(n);
  }
  std::sort(means.begin(), means.end());
  const double alpha = 1.0 - confidence;
  return {estimate, sorted_quantile(means, 0.5 * alpha), sorted_quantile(means, 1.0 - 0.5 * alpha)};
}

// P(X <= k) for X ~ Binomial(m, 1/2), 0 <= k <= m.
double binomial_half_cdf(std::int64_t k, std::int64_t m) {
  if (m <= 1000) {  // pmf(0) = 2^-m is a normal double; pmf(j+1) = pmf(j) (m - j) / (j + 1)
    double pmf = std::ldexp(1.0, static_cast<int>(-m)), sum = 0.0;
    for (std::int64_t j = 0; j <= k; ++j) {
      sum += pmf;
      pmf *= static_cast<double>(m - j) / static_cast<double>(j + 1);
    }
    return sum;
  }
  // Larger m: log pmf(k) from lgamma, then the terms below it as ratios of it,
  // pmf(j - 1) / pmf(j) = j / (m - j + 1), until they no longer change the sum.
  const double md = static_cast<double>(m), kd = static_cast<double>(k);
  const double log_top = std::lgamma(md + 1.0) - std::lgamma(kd + 1.0) -
                         std::lgamma(md - kd + 1.0) - md * std::log(2.0);
  double term = 1.0, sum = 0.0;
  for (std::int64_t j = k; j >= 0 && term > 1e-17 * sum; --j) {
    sum += term;
    term *= static_cast<double>(j) / static_cast<double>(m - j + 1);
  }
  return std::exp(log_top) * sum;
}

void check_curve(const char* fn, const SurvivalCurve& c) {
  const std::size_t n = c.time.size();
  if (n == 0) fail(fn, "the curve has no points (kaplan_meier gives at least the time-0 point)");
  if (c.survival.size() != n || c.low.size() != n || c.high.size() != n || c.at_risk.size() != n ||
      c.events.size() != n)
    fail(fn, "the curve's arrays differ in size: time " + std::to_string(n) + ", survival " +
                 std::to_string(c.survival.size()) + ", low " + std::to_string(c.low.size()) +
                 ", high " + std::to_string(c.high.size()) + ", at_risk " +
                 std::to_string(c.at_risk.size()) + ", events " + std::to_string(c.events.size()));
}

// The first curve time whose value in `values` is <= 0.5, +inf if none.
// km_median's crossing of 0.5 by one curve (survival or a band), R survival's rule: the
// first point below 0.5 + tol; at 0.5 (within tol) with a lower point later, the midpoint
// of the flat segment.
double median_crossing(const SurvivalCurve& c, const std::vector<double>& values) {
  const double tol = std::sqrt(std::numeric_limits<double>::epsilon());
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (!(values[i] < 0.5 + tol)) continue;
    if (std::abs(values[i] - 0.5) < tol)
      for (std::size_t j = i + 1; j < values.size(); ++j)
        if (values[j] < values[i]) return 0.5 * (c.time[i] + c.time[j]);
    return c.time[i];
  }
  return kInf;
}

// P(T+ <= t) for t = 0 .. n (n + 1) / 2: the exact null distribution of the Wilcoxon
// signed-rank statistic over ranks 1 .. n (each rank's sign a fair coin), cumulated.
std::vector<double> signed_rank_cdf(std::size_t n) {
  std::vector<double> p(n * (n + 1) / 2 + 1, 0.0);
  p[0] = 1.0;
  std::size_t top = 0;
  for (std::size_t r = 1; r <= n; ++r) {
    top += r;
    for (std::size_t t = top; t >= r; --t) p[t] = 0.5 * (p[t] + p[t - r]);
    for (std::size_t t = 0; t < r; ++t) p[t] *= 0.5;
  }
  for (std::size_t t = 1; t < p.size(); ++t) p[t] += p[t - 1];
  return p;
}

}  // namespace

// --- quantiles ------------------------------------------------------------------------

double normal_quantile(double p) {
  if (!(p >= 0.0 && p <= 1.0)) fail("normal_quantile", "p = " + num(p) + " is not in [0, 1]");
  if (p == 0.0) return -kInf;
  if (p == 1.0) return kInf;
  if (p == 0.5) return 0.0;
  return p < 0.5 ? normal_quantile_lower(p) : -normal_quantile_lower(1.0 - p);
}

double student_t_quantile(double p, double dof) {
  if (!(p >= 0.0 && p <= 1.0)) fail("student_t_quantile", "p = " + num(p) + " is not in [0, 1]");
  if (!(dof > 0.0)) fail("student_t_quantile", "dof = " + num(dof) + " must be positive (or +inf)");
  if (p == 0.0) return -kInf;
  if (p == 1.0) return kInf;
  if (p == 0.5) return 0.0;
  if (std::isinf(dof)) return normal_quantile(p);
  const double sign = p < 0.5 ? -1.0 : 1.0;
  const double tail = p < 0.5 ? p : 1.0 - p;  // exact: 1 - p is representable for p >= 0.5
  if (dof > 1e4) return sign * student_t_cornish_fisher(-normal_quantile(tail), dof);
  // Bracket the root of P(T > t) = tail in [lo, hi], then bisect until no double lies
  // strictly between lo and hi.
  double lo = 0.0, hi = 1.0;
  while (student_t_upper_tail(hi, dof) > tail) {
    lo = hi;
    hi *= 2.0;
    if (hi > 1e300) return sign * kInf;  // beyond the double range
  }
  for (int it = 0; it < 2200; ++it) {
    const double mid = lo + 0.5 * (hi - lo);
    if (mid <= lo || mid >= hi) break;
    (student_t_upper_tail(mid, dof) > tail ? lo : hi) = mid;
  }
  return sign * (lo + 0.5 * (hi - lo));
}

// --- binomial proportions -------------------------------------------------------------

Interval wilson_interval(std::int64_t successes, std::int64_t n, double confidence) {
  if (n < 0 || successes < 0 || successes > n)
    fail("wilson_interval", "successes = " + std::to_string(successes) + " and n = " +
                                std::to_string(n) + " do not satisfy 0 <= successes <= n");
  check_confidence("wilson_interval", confidence);
  if (n == 0) return {kNaN, 0.0, 1.0};
  const double z = normal_critical(confidence);
  const double nn = static_cast<double>(n), p = static_cast<double>(successes) / nn;
  // The far bound from p is center + half (no cancellation); the near one is the other
  // root, product / far with product = p^2 / (1 + z^2/n), so that a tiny bound keeps its
  // digits. Proportions above 1/2 are solved as their complement.
  const auto bounds = [&](double q) {  // {near, far} for a proportion q <= 1/2
    const double z2n = z * z / nn;
    const double center = (q + 0.5 * z2n) / (1.0 + z2n);
    const double half = z * std::sqrt(q * (1.0 - q) / nn + 0.25 * z2n / nn) / (1.0 + z2n);
    const double far = center + half;
    return std::pair<double, double>{q * q / ((1.0 + z2n) * far), far};
  };
  double low, high;
  if (2 * successes <= n) {
    std::tie(low, high) = bounds(p);
  } else {
    const auto [near, far] = bounds(static_cast<double>(n - successes) / nn);
    low = 1.0 - far;
    high = 1.0 - near;
  }
  if (successes == 0) low = 0.0;
  if (successes == n) high = 1.0;
  low = std::max(0.0, low);
  high = std::min(1.0, high);
  return {p, low, high};
}

// --- time to event --------------------------------------------------------------------

SurvivalCurve kaplan_meier(const std::vector<double>& times, const std::vector<bool>& event,
                           double confidence) {
  constexpr const char* fn = "kaplan_meier";
  if (times.size() != event.size())
    fail(fn, "times has " + std::to_string(times.size()) + " values and event has " +
                 std::to_string(event.size()) + "; each subject needs a time and a flag");
  for (std::size_t i = 0; i < times.size(); ++i)
    if (!(std::isfinite(times[i]) && times[i] >= 0.0))
      fail(fn,
           "times[" + std::to_string(i) + "] = " + num(times[i]) + " is not a finite time >= 0");
  check_confidence(fn, confidence);
  const double z = normal_critical(confidence);

  std::vector<std::size_t> order(times.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(),
            [&](std::size_t i, std::size_t j) { return times[i] < times[j]; });

  SurvivalCurve c;
  std::int64_t at_risk = static_cast<std::int64_t>(times.size());
  c.time.push_back(0.0);
  c.survival.push_back(1.0);
  c.low.push_back(1.0);
  c.high.push_back(1.0);
  c.at_risk.push_back(at_risk);
  c.events.push_back(0);
  double s = 1.0, greenwood = 0.0;  // greenwood = sum d / (n (n - d))
  for (std::size_t k = 0; k < order.size();) {
    const double t = times[order[k]];
    std::int64_t deaths = 0, leaving = 0;
    for (; k < order.size() && times[order[k]] == t; ++k, ++leaving) deaths += event[order[k]];
    if (deaths > 0) {
      const double nj = static_cast<double>(at_risk), dj = static_cast<double>(deaths);
      s *= 1.0 - dj / nj;
      double low = 0.0, high = 0.0;
      if (deaths < at_risk) {
        greenwood += dj / (nj * (nj - dj));
        // log(-log) interval: se(log(-log S)) = sqrt(G) / |log S|; S^exp(+-z se).
        const double log_s = std::log(s), se = std::sqrt(greenwood) / std::fabs(log_s);
        low = std::pow(s, std::exp(z * se));
        high = std::pow(s, std::exp(-z * se));
      } else {
        s = 0.0;  // everyone left had the event
      }
      c.time.push_back(t);
      c.survival.push_back(s);
      c.low.push_back(low);
      c.high.push_back(high);
      c.at_risk.push_back(at_risk);
      c.events.push_back(deaths);
    }
    at_risk -= leaving;
  }
  return c;
}

Interval km_median(const SurvivalCurve& curve) {
  check_curve("km_median", curve);
  return {median_crossing(curve, curve.survival), median_crossing(curve, curve.low),
          median_crossing(curve, curve.high)};
}

double km_fraction_by(const SurvivalCurve& curve, double t) {
  check_curve("km_fraction_by", curve);
  if (std::isnan(t)) fail("km_fraction_by", "t is NaN");
  // S(t) = survival at the last point with time <= t (1 before the first point).
  const auto it = std::upper_bound(curve.time.begin(), curve.time.end(), t);
  if (it == curve.time.begin()) return 0.0;
  return 1.0 - curve.survival[static_cast<std::size_t>(it - curve.time.begin()) - 1];
}

// --- means and paired comparisons -----------------------------------------------------

Interval mean_interval(const std::vector<double>& x, double confidence) {
  check_finite("mean_interval", "x", x);
  check_confidence("mean_interval", confidence);
  if (x.empty()) return {kNaN, -kInf, kInf};
  const double mean = mean_of(x);
  if (x.size() < 2) return {mean, -kInf, kInf};
  double ss = 0.0;
  for (double v : x) ss += (v - mean) * (v - mean);
  const double n = static_cast<double>(x.size());
  const double se = std::sqrt(ss / (n - 1.0)) / std::sqrt(n);
  const double t = student_t_quantile(0.5 + 0.5 * confidence, n - 1.0);
  return {mean, mean - t * se, mean + t * se};
}

Interval bootstrap_mean_interval(const std::vector<double>& x, std::int64_t resamples,
                                 std::uint64_t seed, double confidence) {
  check_finite("bootstrap_mean_interval", "x", x);
  if (resamples < 1)
    fail("bootstrap_mean_interval", "resamples = " + std::to_string(resamples) + " must be >= 1");
  check_confidence("bootstrap_mean_interval", confidence);
  return bootstrap_mean_checked(x, resamples, seed, confidence);
}

ShiftInterval hodges_lehmann_interval(const std::vector<double>& d, double confidence) {
  check_finite("hodges_lehmann_interval", "d", d);
  check_confidence("hodges_lehmann_interval", confidence);
  if (d.empty()) return {{kNaN, -kInf, kInf}, 1.0};
  std::vector<double> walsh;
  for (std::size_t i = 0; i < d.size(); ++i)
    for (std::size_t j = i; j < d.size(); ++j) walsh.push_back(0.5 * (d[i] + d[j]));
  std::sort(walsh.begin(), walsh.end());
  const std::size_t m = walsh.size();
  const double median = m % 2 ? walsh[m / 2] : 0.5 * (walsh[m / 2 - 1] + walsh[m / 2]);
  // k Walsh averages left out on each side: coverage 1 - 2 P(T+ <= k - 1).
  const std::vector<double> cdf = signed_rank_cdf(d.size());
  std::size_t k = 1;
  while (k < (m + 1) / 2 && 1.0 - 2.0 * cdf[k] >= confidence) ++k;
  const double coverage = 1.0 - 2.0 * cdf[k - 1];
  return {{median, walsh[k - 1], walsh[m - k]}, coverage};
}

std::vector<double> holm_adjust(const std::vector<double>& p) {
  for (std::size_t i = 0; i < p.size(); ++i)
    if (!(p[i] >= 0.0 && p[i] <= 1.0))
      fail("holm_adjust", "p[" + std::to_string(i) + "] = " + num(p[i]) + " is not in [0, 1]");
  std::vector<std::size_t> order(p.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return p[a] < p[b]; });
  std::vector<double> adjusted(p.size());
  double running = 0.0;
  for (std::size_t j = 0; j < order.size(); ++j) {
    const double factor = static_cast<double>(p.size() - j);
    running = std::max(running, std::min(1.0, factor * p[order[j]]));
    adjusted[order[j]] = running;
  }
  return adjusted;
}

PairedComparison paired_compare(const std::vector<double>& a, const std::vector<double>& b,
                                std::int64_t resamples, std::uint64_t seed, double confidence) {
  constexpr const char* fn = "paired_compare";
  if (a.size() != b.size())
    fail(fn, "a has " + std::to_string(a.size()) + " values and b has " + std::to_string(b.size()) +
                 "; pairs need equal sizes");
  check_finite(fn, "a", a);
  check_finite(fn, "b", b);
  if (resamples < 1) fail(fn, "resamples = " + std::to_string(resamples) + " must be >= 1");
  check_confidence(fn, confidence);

  PairedComparison r{};
  std::vector<double> d(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    d[i] = a[i] - b[i];
    r.positive += d[i] > 0.0;
    r.negative += d[i] < 0.0;
    r.ties += d[i] == 0.0;
  }
  r.n = static_cast<std::int64_t>(a.size());
  r.mean_difference = bootstrap_mean_checked(d, resamples, seed, confidence);
  r.shift = hodges_lehmann_interval(d, confidence);
  r.holm_p = kNaN;
  const std::int64_t m = r.positive + r.negative;
  r.sign_test_p =
      m == 0 ? 1.0 : std::min(1.0, 2.0 * binomial_half_cdf(std::min(r.positive, r.negative), m));
  return r;
}

// --- change points of a curve ---------------------------------------------------------

std::int64_t phase_change_index(const std::vector<double>& values, double threshold) {
  if (std::isnan(threshold)) fail("phase_change_index", "threshold is NaN");
  for (std::size_t i = 0; i < values.size(); ++i)
    if (values[i] >= threshold) return static_cast<std::int64_t>(i);
  return -1;
}

std::int64_t largest_jump_index(const std::vector<double>& values) {
  std::int64_t best = -1;
  double best_jump = 0.0;
  for (std::size_t i = 1; i < values.size(); ++i) {
    const double jump = values[i] - values[i - 1];
    if (std::isnan(jump)) continue;
    if (best < 0 || jump > best_jump) {
      best = static_cast<std::int64_t>(i);
      best_jump = jump;
    }
  }
  return best;
}

}  // namespace heads_compare::statistics
