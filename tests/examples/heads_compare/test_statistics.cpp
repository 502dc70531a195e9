// heads_compare::statistics against independent values: printed tables, closed forms, textbook
// examples worked by hand (the 6-MP remission data), formulas re-derived here by another
// route (the Wilson quadratic), mpmath at 30 digits, and coverage over simulated studies.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <new>
#include <numbers>
#include <random>
#include <tuple>
#include <utility>
#include <vector>

#include "headgrad/core/error.hpp"
#include "statistics.hpp"

using namespace headgrad;
using namespace heads_compare::statistics;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// z_0.975 (mpmath, 30 digits: 1.95996398454005423552459443052).
constexpr double kZ95 = 1.959963984540054;

// The Wilson bounds as the two roots of the quadratic (p - q)^2 = z^2 q (1 - q) / n in q:
//   (1 + z^2/n) q^2 - (2p + z^2/n) q + p^2 = 0,
// solved with the cancellation-free pair q1 = (-B - sign(B) sqrt(D)) / 2A, q2 = C / (A q1).
std::pair<double, double> wilson_roots(double successes, double n, double z) {
  const double p = successes / n, k = z * z / n;
  const double A = 1.0 + k, B = -(2.0 * p + k), C = p * p;
  const double q1 = (-B + std::sqrt(B * B - 4.0 * A * C)) / (2.0 * A);  // B < 0
  const double q2 = C / (A * q1);
  return {std::min(q1, q2), std::max(q1, q2)};
}

// The log(-log) band of a Kaplan-Meier point from its survival S and Greenwood sum G.
std::pair<double, double> loglog_band(double s, double g, double z) {
  const double theta = z * std::sqrt(g) / std::fabs(std::log(s));
  return {std::exp(std::log(s) * std::exp(theta)), std::exp(std::log(s) * std::exp(-theta))};
}

// P(X <= k), X ~ Binomial(m, 1/2), summing exact binomial coefficients (small m only).
double binomial_half_cdf_exact(int k, int m) {
  double sum = 0.0, c = 1.0;  // c = C(m, j)
  for (int j = 0; j <= k; ++j) {
    sum += c;
    c = c * (m - j) / (j + 1);
  }
  return sum / std::ldexp(1.0, m);
}

}  // namespace

// --- quantiles ------------------------------------------------------------------------

TEST_CASE("stats: a result never computed reads as empty, whatever the memory held") {
  // Default-initialized (as a struct member without {} is) in memory full of 0xFF bytes:
  // without member defaults n would read as -1 and p as NaN, and a never-computed
  // comparison would enter a Holm family (heads_compare's reference models).
  alignas(PairedComparison) unsigned char bytes[sizeof(PairedComparison)];
  std::memset(bytes, 0xFF, sizeof bytes);
  const auto* c = new (bytes) PairedComparison;
  CHECK(c->n == 0);
  CHECK(c->positive + c->negative + c->ties == 0);
  CHECK(c->sign_test_p == 0);
  CHECK(c->shift.shift.estimate == 0);
  CHECK(c->mean_difference.high == 0);
  c->~PairedComparison();
}

TEST_CASE("stats: normal_quantile matches tables and inverts erfc") {
  CHECK(std::fabs(normal_quantile(0.975) - 1.959964) < 1e-6);
  CHECK(std::fabs(normal_quantile(0.975) - kZ95) < 1e-15);
  CHECK(std::fabs(normal_quantile(0.95) - 1.6448536269514728) < 1e-15);   // mpmath
  CHECK(std::fabs(normal_quantile(1e-10) + 6.3613409024040562) < 1e-14);  // mpmath
  CHECK(normal_quantile(0.5) == 0.0);
  CHECK(normal_quantile(0.0) == -kInf);
  CHECK(normal_quantile(1.0) == kInf);
  // Phi(x) = erfc(-x / sqrt 2) / 2 recovers p from 1e-300 to the middle (to the condition
  // number of Phi at x: a relative error e in x moves p by about x^2 e relatively).
  for (double p : {1e-300, 1e-100, 1e-20, 1e-8, 1e-3, 0.02, 0.0243, 0.1, 0.3, 0.4999}) {
    CAPTURE(p);
    const double x = normal_quantile(p);
    const double back = 0.5 * std::erfc(-x / std::numbers::sqrt2);
    CHECK(std::fabs(back - p) <= 1e-15 * (1.0 + x * x) * p);
  }
  // Symmetry, where 1 - q is exact (q >= 1/2).
  for (double q : {0.5001, 0.6, 0.9, 0.975, 0.999, 1.0 - 1e-12}) {
    CAPTURE(q);
    CHECK(normal_quantile(q) == -normal_quantile(1.0 - q));
  }
  CHECK_THROWS_WITH_AS(normal_quantile(1.5), doctest::Contains("normal_quantile: p = 1.5"),
                       ValueError);
  CHECK_THROWS_AS(normal_quantile(-0.1), ValueError);
  CHECK_THROWS_AS(normal_quantile(std::nan("")), ValueError);
}

TEST_CASE("stats: student_t_quantile matches tables and closed forms") {
  // Printed tables (e.g. Abramowitz & Stegun table 26.10), to their six decimals.
  CHECK(std::fabs(student_t_quantile(0.975, 9) - 2.262157) < 1e-5);
  CHECK(std::fabs(student_t_quantile(0.975, 4) - 2.776445) < 1e-6);
  CHECK(std::fabs(student_t_quantile(0.995, 3) - 5.840909) < 1e-6);
  CHECK(std::fabs(student_t_quantile(0.95, 30) - 1.697261) < 1e-6);
  // mpmath (30 digits), both sides of the switch to Cornish-Fisher at dof = 1e4.
  struct Case {
    double p, dof, t;
  };
  for (const Case& c :
       {Case{0.975, 9, 2.262157162798205}, Case{0.975, 2.5, 3.5746548420036818},
        Case{0.9, 0.5, 10.270324410234511}, Case{0.975, 9999, 1.9602012636213573},
        Case{0.975, 10001, 1.9602012161646407}, Case{1e-8, 9999, -5.6165638855009222},
        Case{1e-8, 10001, -5.616562972424184}, Case{0.975, 1e6, 1.9599663568141067}}) {
    CAPTURE(c.p);
    CAPTURE(c.dof);
    CHECK(student_t_quantile(c.p, c.dof) == doctest::Approx(c.t).epsilon(5e-14));
  }
  // Closed forms: dof = 1 (Cauchy) t = tan(pi (p - 1/2)) = -cot(pi p), written with the
  // smaller of p and 1 - p so the pole is not approached through a rounded pi (p - 1/2);
  // dof = 2: t = (2p - 1) / sqrt(2p(1-p)).
  for (double p : {1e-9, 1e-4, 0.01, 0.1, 0.25, 0.4, 0.7, 0.9, 0.99, 0.999999}) {
    CAPTURE(p);
    const double cauchy = p < 0.5 ? -1.0 / std::tan(std::numbers::pi * p)
                                  : 1.0 / std::tan(std::numbers::pi * (1 - p));
    CHECK(student_t_quantile(p, 1) == doctest::Approx(cauchy).epsilon(1e-13));
    CHECK(student_t_quantile(p, 2) ==
          doctest::Approx((2 * p - 1) / std::sqrt(2 * p * (1 - p))).epsilon(1e-13));
  }
  CHECK(student_t_quantile(0.975, kInf) == normal_quantile(0.975));
  CHECK(student_t_quantile(0.5, 3) == 0.0);
  CHECK(student_t_quantile(1.0, 3) == kInf);
  CHECK(student_t_quantile(0.0, 3) == -kInf);
  CHECK_THROWS_WITH_AS(student_t_quantile(0.9, 0), doctest::Contains("student_t_quantile: dof = 0"),
                       ValueError);
  CHECK_THROWS_AS(student_t_quantile(0.9, -2), ValueError);
  CHECK_THROWS_AS(student_t_quantile(0.9, std::nan("")), ValueError);
  CHECK_THROWS_WITH_AS(student_t_quantile(2.0, 3), doctest::Contains("p = 2"), ValueError);
}

// --- Wilson ---------------------------------------------------------------------------

TEST_CASE("stats: wilson_interval for 0/10 10/10 and 3/10") {
  // 0/10: the upper bound is the non-zero root k / (1 + k), k = z^2/n = 0.384146: 0.2775.
  const Interval none = wilson_interval(0, 10);
  CHECK(none.estimate == 0.0);
  CHECK(none.low == 0.0);
  const double k = kZ95 * kZ95 / 10.0;
  CHECK(none.high == doctest::Approx(k / (1.0 + k)).epsilon(1e-14));
  CHECK(std::fabs(none.high - 0.2775) < 5e-5);
  // 10/10: the mirror image, [1 / (1 + k), 1] = [0.7225, 1].
  const Interval all = wilson_interval(10, 10);
  CHECK(all.estimate == 1.0);
  CHECK(all.high == 1.0);
  CHECK(all.low == doctest::Approx(1.0 / (1.0 + k)).epsilon(1e-14));
  // 3/10: the textbook [0.1078, 0.6032], and the quadratic's roots.
  const Interval three = wilson_interval(3, 10);
  const auto [lo, hi] = wilson_roots(3, 10, kZ95);
  CHECK(three.estimate == doctest::Approx(0.3).epsilon(1e-15));
  CHECK(three.low == doctest::Approx(lo).epsilon(1e-13));
  CHECK(three.high == doctest::Approx(hi).epsilon(1e-13));
  CHECK(std::fabs(three.low - 0.1078) < 5e-5);
  CHECK(std::fabs(three.high - 0.6032) < 5e-5);
  // Another level and size, z_0.95 = 1.6448536269514728 (mpmath).
  const Interval ninety = wilson_interval(37, 120, 0.90);
  const auto [lo90, hi90] = wilson_roots(37, 120, 1.6448536269514728);
  CHECK(ninety.low == doctest::Approx(lo90).epsilon(1e-13));
  CHECK(ninety.high == doctest::Approx(hi90).epsilon(1e-13));
}

TEST_CASE("stats: wilson_interval edge cases and errors") {
  // A rare event keeps its digits (mpmath at 40 digits), and so does its mirror image.
  const Interval rare = wilson_interval(1, 1000000000);
  CHECK(rare.low == doctest::Approx(1.7652455495696313e-10).epsilon(1e-12));
  CHECK(rare.high == doctest::Approx(5.6649342432974394e-9).epsilon(1e-12));
  const Interval common = wilson_interval(999999999, 1000000000);
  CHECK(1.0 - common.high == doctest::Approx(1.7652455495696313e-10).epsilon(1e-6));
  CHECK(1.0 - common.low == doctest::Approx(5.6649342432974394e-9).epsilon(1e-7));
  const Interval seven = wilson_interval(7, 13);  // above one half: solved as 6/13 mirrored
  CHECK(seven.low == doctest::Approx(0.29143795714506006).epsilon(1e-14));
  CHECK(seven.high == doctest::Approx(0.76793932190461699).epsilon(1e-14));
  const Interval empty = wilson_interval(0, 0);
  CHECK(std::isnan(empty.estimate));
  CHECK(empty.low == 0.0);
  CHECK(empty.high == 1.0);
  CHECK_THROWS_WITH_AS(wilson_interval(11, 10),
                       doctest::Contains("wilson_interval: successes = 11 and n = 10"), ValueError);
  CHECK_THROWS_AS(wilson_interval(-1, 10), ValueError);
  CHECK_THROWS_AS(wilson_interval(0, -1), ValueError);
  CHECK_THROWS_WITH_AS(wilson_interval(3, 10, 1.0),
                       doctest::Contains("wilson_interval: confidence 1 is not in (0, 1)"),
                       ValueError);
  CHECK_THROWS_AS(wilson_interval(3, 10, 0.0), ValueError);
  CHECK_THROWS_AS(wilson_interval(3, 10, std::nan("")), ValueError);
}

// --- Kaplan-Meier ---------------------------------------------------------------------

// The 6-MP arm of the remission trial (Freireich et al. 1963; Klein & Moeschberger table
// 4.1A): weeks in remission, censored marked false.
//   t   n_j d_j  S(t)                    Greenwood G = sum d/(n(n-d))
//   6   21  3    18/21 = 6/7             3/(21*18)           = 1/126
//   7   17  1    6/7 * 16/17 = 96/119    1/126 + 1/(17*16)   = 199/17136
//   10  15  1    96/119 * 14/15 = 64/85  + 1/(15*14)         = 1403/85680
//   13  12  1    64/85 * 11/12 = 176/255 + 1/(12*11)         = 22573/942480
//   16  11  1    176/255 * 10/11 = 32/51 + 1/(11*10)         = 2831/85680
//   22   7  1    32/51 * 6/7 = 64/119    + 1/(7*6)           = 4871/85680
//   23   6  1    64/119 * 5/6 = 160/357  + 1/(6*5)           = 7727/85680
// R's survfit(conf.type = "log-log") prints the band 0.620-0.952, 0.563-0.923, 0.503-0.889,
// 0.432-0.849, 0.368-0.805, 0.268-0.747, 0.188-0.680; median 23, 0.95 LCL 13, UCL NA.
TEST_CASE("stats: kaplan_meier on the 6-MP remission data") {
  const std::vector<double> t = {6,  6,  6,  6,  7,  9,  10, 10, 11, 13, 16,
                                 17, 19, 20, 22, 23, 25, 32, 32, 34, 35};
  const std::vector<bool> e = {true,  true,  true,  false, true,  false, true,
                               false, false, true,  true,  false, false, false,
                               true,  true,  false, false, false, false, false};
  const SurvivalCurve c = kaplan_meier(t, e);
  const std::vector<double> times = {0, 6, 7, 10, 13, 16, 22, 23};
  const std::vector<std::int64_t> at_risk = {21, 21, 17, 15, 12, 11, 7, 6};
  const std::vector<std::int64_t> events = {0, 3, 1, 1, 1, 1, 1, 1};
  const std::vector<double> s = {1.0,         6.0 / 7,   96.0 / 119, 64.0 / 85,
                                 176.0 / 255, 32.0 / 51, 64.0 / 119, 160.0 / 357};
  const std::vector<double> g = {0.0,
                                 1.0 / 126,
                                 199.0 / 17136,
                                 1403.0 / 85680,
                                 22573.0 / 942480,
                                 2831.0 / 85680,
                                 4871.0 / 85680,
                                 7727.0 / 85680};
  const std::vector<double> r_low = {1, 0.620, 0.563, 0.503, 0.432, 0.368, 0.268, 0.188};
  const std::vector<double> r_high = {1, 0.952, 0.923, 0.889, 0.849, 0.805, 0.747, 0.680};
  REQUIRE(c.time.size() == times.size());
  CHECK(c.time == times);
  CHECK(c.at_risk == at_risk);
  CHECK(c.events == events);
  for (std::size_t j = 0; j < times.size(); ++j) {
    CAPTURE(times[j]);
    CHECK(c.survival[j] == doctest::Approx(s[j]).epsilon(1e-14));
    if (j == 0) {
      CHECK(c.low[j] == 1.0);
      CHECK(c.high[j] == 1.0);
      continue;
    }
    const auto [lo, hi] = loglog_band(s[j], g[j], kZ95);
    CHECK(c.low[j] == doctest::Approx(lo).epsilon(1e-12));
    CHECK(c.high[j] == doctest::Approx(hi).epsilon(1e-12));
    CHECK(std::fabs(c.low[j] - r_low[j]) < 5.1e-4);
    CHECK(std::fabs(c.high[j] - r_high[j]) < 5.1e-4);
  }
  // mpmath at the last point: 0.188052005959232 and 0.680142628495242.
  CHECK(c.low.back() == doctest::Approx(0.188052005959232).epsilon(1e-12));
  CHECK(c.high.back() == doctest::Approx(0.680142628495242).epsilon(1e-12));

  const Interval median = km_median(c);
  CHECK(median.estimate == 23.0);
  CHECK(median.low == 13.0);   // the lower band first drops to 0.432 <= 0.5 at week 13
  CHECK(median.high == kInf);  // the upper band ends at 0.680
  CHECK(km_fraction_by(c, -1.0) == 0.0);
  CHECK(km_fraction_by(c, 5.99) == 0.0);
  CHECK(km_fraction_by(c, 6.0) == doctest::Approx(1.0 / 7));
  CHECK(km_fraction_by(c, 9.99) == doctest::Approx(1.0 - 96.0 / 119));
  CHECK(km_fraction_by(c, 10.0) == doctest::Approx(1.0 - 64.0 / 85));
  CHECK(km_fraction_by(c, 100.0) == doctest::Approx(1.0 - 160.0 / 357));
}

// Six subjects: 1 event, 2 event, 2 censored, 3 event, 4 censored, 5 event.
//   t  n  d  S             G
//   1  6  1  5/6           1/30
//   2  5  1  5/6*4/5 = 2/3 1/30 + 1/20 = 1/12   (the subject censored at 2 is still at risk)
//   3  3  1  2/3*2/3 = 4/9 1/12 + 1/6 = 1/4     (se = S sqrt(G) = 2/9)
//   5  1  1  0             band [0, 0]           (the subject censored at 4 left without event)
// Bands (mpmath): t=1 [0.273122849928356, 0.974712426690893], t=2 [0.194616636806235,
// 0.904434164322516], t=3 [0.0661867531464124, 0.784908367147959]. The median is 3; the
// lower band is below 0.5 from t = 1 and the upper band from t = 5, so its interval is [1, 5].
TEST_CASE("stats: kaplan_meier censoring by hand on six subjects") {
  const std::vector<double> t = {5, 2, 4, 1, 3, 2};  // any order
  const std::vector<bool> e = {true, false, false, true, true, true};
  const SurvivalCurve c = kaplan_meier(t, e);
  CHECK(c.time == std::vector<double>{0, 1, 2, 3, 5});
  CHECK(c.at_risk == std::vector<std::int64_t>{6, 6, 5, 3, 1});
  CHECK(c.events == std::vector<std::int64_t>{0, 1, 1, 1, 1});
  REQUIRE(c.survival.size() == 5);
  CHECK(c.survival[1] == doctest::Approx(5.0 / 6).epsilon(1e-15));
  CHECK(c.survival[2] == doctest::Approx(2.0 / 3).epsilon(1e-15));
  CHECK(c.survival[3] == doctest::Approx(4.0 / 9).epsilon(1e-15));
  CHECK(c.survival[4] == 0.0);
  const double bands[3][2] = {{0.273122849928356, 0.974712426690893},
                              {0.194616636806235, 0.904434164322516},
                              {0.0661867531464124, 0.784908367147959}};
  const double g[3] = {1.0 / 30, 1.0 / 12, 1.0 / 4};
  for (int j = 0; j < 3; ++j) {
    const auto [lo, hi] = loglog_band(c.survival[j + 1], g[j], kZ95);
    CHECK(c.low[j + 1] == doctest::Approx(lo).epsilon(1e-13));
    CHECK(c.high[j + 1] == doctest::Approx(hi).epsilon(1e-13));
    CHECK(c.low[j + 1] == doctest::Approx(bands[j][0]).epsilon(1e-12));
    CHECK(c.high[j + 1] == doctest::Approx(bands[j][1]).epsilon(1e-12));
  }
  CHECK(c.low[4] == 0.0);
  CHECK(c.high[4] == 0.0);
  const Interval median = km_median(c);
  CHECK(median.estimate == 3.0);
  CHECK(median.low == 1.0);
  CHECK(median.high == 5.0);
  CHECK(km_fraction_by(c, 2.5) == doctest::Approx(1.0 / 3));
  CHECK(km_fraction_by(c, 4.0) == doctest::Approx(5.0 / 9));
  CHECK(km_fraction_by(c, 5.0) == 1.0);
  // A wider level widens the band at every point.
  const SurvivalCurve wide = kaplan_meier(t, e, 0.99);
  for (int j = 1; j < 4; ++j) {
    CHECK(wide.low[j] < c.low[j]);
    CHECK(wide.high[j] > c.high[j]);
  }
}

TEST_CASE("stats: kaplan_meier with no events or an event at time zero") {
  const SurvivalCurve none = kaplan_meier({3, 4, 5}, {false, false, false});
  CHECK(none.time == std::vector<double>{0});
  CHECK(none.at_risk == std::vector<std::int64_t>{3});
  const Interval m = km_median(none);
  CHECK(m.estimate == kInf);
  CHECK(m.low == kInf);
  CHECK(m.high == kInf);
  CHECK(km_fraction_by(none, 10) == 0.0);

  const SurvivalCurve empty = kaplan_meier({}, {});
  CHECK(empty.time == std::vector<double>{0});
  CHECK(empty.survival == std::vector<double>{1});
  CHECK(empty.at_risk == std::vector<std::int64_t>{0});

  // Two subjects, events at 0 and 1: S(0) = 1/2 already, S(1) = 0.
  const SurvivalCurve early = kaplan_meier({1, 0}, {true, true});
  CHECK(early.time == std::vector<double>{0, 0, 1});
  CHECK(early.survival == std::vector<double>{1, 0.5, 0});
  CHECK(km_fraction_by(early, 0.0) == 0.5);
  // The curve rests at exactly 0.5 on [0, 1): R's median.survfit takes the midpoint, 0.5.
  CHECK(km_median(early).estimate == 0.5);
}

// R survival's median at exactly 0.5 (median.survfit): the midpoint of the flat segment.
//   survfit(Surv(1:4)): S = 0.75, 0.5, 0.25, 0; median 2.5.
//   survfit(Surv(1:10)): S(5) = 0.9 * 8/9 * 7/8 * 6/7 * 5/6, which rounds to
//     0.5000000000000001 in floating point; median 5.5 (R's tolerance sqrt(eps)).
//   survfit(Surv(1:4, c(1, 1, 0, 0))): S = 0.75, 0.5 and no later drop; median 2.
TEST_CASE("stats: km_median at exactly one half, as R's survival package") {
  const SurvivalCurve four = kaplan_meier({1, 2, 3, 4}, {true, true, true, true});
  REQUIRE(four.survival[2] == 0.5);
  CHECK(km_median(four).estimate == 2.5);

  std::vector<double> times;
  for (int i = 1; i <= 10; ++i) times.push_back(i);
  const SurvivalCurve ten = kaplan_meier(times, std::vector<bool>(10, true));
  CHECK(std::abs(ten.survival[5] - 0.5) < 1e-15);  // 0.5 up to the product's rounding
  CHECK(km_median(ten).estimate == 5.5);

  const SurvivalCurve rest = kaplan_meier({1, 2, 3, 4}, {true, true, false, false});
  REQUIRE(rest.survival.back() == 0.5);
  CHECK(km_median(rest).estimate == 2.0);
}

// The exact Wilcoxon signed-rank interval against the printed table of critical values
// (Hollander & Wolfe, table A.4; two-sided 0.05: n = 6 -> 0, n = 8 -> 3, n = 10 -> 8,
// n = 20 -> 52, i.e. P(T+ <= c) <= 0.025 < P(T+ <= c + 1)): the interval leaves out c + 1
// Walsh averages on each side. For d = 1 .. 10 the Walsh averages (i + j) / 2 sorted begin
// 1, 1.5, 2, 2, 2.5, 2.5, 3, 3, 3, so the 9th is 3 and by symmetry the 47th of 55 is 8;
// the estimate is the median 5.5 and the coverage 1 - 2 * 25 / 1024 (P(T+ <= 8) = 25/1024).
TEST_CASE("stats: hodges_lehmann_interval against the signed-rank table") {
  std::vector<double> d;
  for (int i = 1; i <= 10; ++i) d.push_back(i);
  const ShiftInterval s = hodges_lehmann_interval(d);
  CHECK(s.shift.estimate == 5.5);
  CHECK(s.shift.low == 3.0);
  CHECK(s.shift.high == 8.0);
  CHECK(s.coverage == doctest::Approx(1.0 - 50.0 / 1024).epsilon(1e-15));
  // Table critical values c: the interval's ends are the (c + 1)-th Walsh averages from
  // each end; with d = 1 .. n the k-th smallest Walsh average is read off a sorted list.
  for (const auto& [n, c] : {std::pair{6, 0}, std::pair{8, 3}, std::pair{20, 52}}) {
    CAPTURE(n);
    std::vector<double> x, walsh;
    for (int i = 1; i <= n; ++i) x.push_back(i * i);  // distinct, asymmetric
    for (int i = 0; i < n; ++i)
      for (int j = i; j < n; ++j) walsh.push_back(0.5 * (x[i] + x[j]));
    std::sort(walsh.begin(), walsh.end());
    const ShiftInterval r = hodges_lehmann_interval(x);
    CHECK(r.shift.low == walsh[static_cast<std::size_t>(c)]);
    CHECK(r.shift.high == walsh[walsh.size() - 1 - static_cast<std::size_t>(c)]);
    CHECK(r.coverage >= 0.95);
  }
  // n = 5 cannot reach 95%: the widest interval, coverage 1 - 2^-4.
  const ShiftInterval five = hodges_lehmann_interval({1, 2, 3, 4, 5});
  CHECK(five.shift.low == 1.0);
  CHECK(five.shift.high == 5.0);
  CHECK(five.coverage == 1.0 - 1.0 / 16);
  // Tied differences (nine runs equal, one 8.4 worse): the Walsh averages -8.4, -4.2 x 9,
  // 0 x 45 give [-4.2, 0] whatever the seed, where a percentile bootstrap gives [-8.4, 0]
  // or [-4.2 .. 0] depending on its resamples.
  std::vector<double> tied(9, 0.0);
  tied.push_back(-8.4);
  const ShiftInterval t = hodges_lehmann_interval(tied);
  CHECK(t.shift.estimate == 0.0);
  CHECK(t.shift.low == -4.2);
  CHECK(t.shift.high == 0.0);
  const ShiftInterval none = hodges_lehmann_interval({});
  CHECK(std::isnan(none.shift.estimate));
  CHECK_THROWS_AS(hodges_lehmann_interval({1, kInf}), ValueError);
}

// R: p.adjust(c(0.01, 0.02, 0.03, 0.04, 0.05), "holm") = 0.05 0.08 0.09 0.09 0.09; the
// order of the input is kept, and 1 caps every value.
TEST_CASE("stats: holm_adjust as R's p.adjust") {
  const std::vector<double> adjusted = holm_adjust({0.03, 0.01, 0.05, 0.02, 0.04});
  const std::vector<double> want = {0.09, 0.05, 0.09, 0.08, 0.09};
  for (std::size_t i = 0; i < want.size(); ++i) CHECK(adjusted[i] == doctest::Approx(want[i]));
  CHECK(holm_adjust({0.5, 0.6}) == std::vector<double>{1.0, 1.0});
  CHECK(holm_adjust({}).empty());
  CHECK_THROWS_WITH_AS(holm_adjust({0.1, 1.5}), doctest::Contains("p[1] = 1.5"), ValueError);
}

TEST_CASE("stats: kaplan_meier and km_median reject bad input") {
  CHECK_THROWS_WITH_AS(kaplan_meier({1, 2, 3}, {true, false}),
                       doctest::Contains("kaplan_meier: times has 3 values and event has 2"),
                       ValueError);
  CHECK_THROWS_WITH_AS(kaplan_meier({1, -2}, {true, false}),
                       doctest::Contains("kaplan_meier: times[1] = -2"), ValueError);
  CHECK_THROWS_AS(kaplan_meier({1, std::nan("")}, {true, false}), ValueError);
  CHECK_THROWS_AS(kaplan_meier({1, kInf}, {true, false}), ValueError);
  CHECK_THROWS_WITH_AS(kaplan_meier({1, 2}, {true, false}, 1.5),
                       doctest::Contains("kaplan_meier: confidence 1.5"), ValueError);
  CHECK_THROWS_WITH_AS(km_median(SurvivalCurve{}), doctest::Contains("km_median: the curve has no"),
                       ValueError);
  SurvivalCurve broken = kaplan_meier({1, 2}, {true, true});
  broken.low.pop_back();
  CHECK_THROWS_WITH_AS(km_fraction_by(broken, 1.0), doctest::Contains("km_fraction_by"),
                       ValueError);
  CHECK_THROWS_AS(km_fraction_by(kaplan_meier({1}, {true}), std::nan("")), ValueError);
}

// --- means, bootstrap, paired comparisons ---------------------------------------------

TEST_CASE("stats: mean_interval is the Student t interval") {
  // {1..5}: mean 3, s^2 = 10/4, t_0.975(4) = 2.7764451051977935 (mpmath).
  const Interval r = mean_interval({1, 2, 3, 4, 5});
  const double half = 2.7764451051977935 * std::sqrt(2.5) / std::sqrt(5.0);
  CHECK(r.estimate == 3.0);
  CHECK(r.low == doctest::Approx(3.0 - half).epsilon(1e-13));
  CHECK(r.high == doctest::Approx(3.0 + half).epsilon(1e-13));
  const Interval one = mean_interval({7.5});
  CHECK(one.estimate == 7.5);
  CHECK(one.low == -kInf);
  CHECK(one.high == kInf);
  const Interval none = mean_interval({});
  CHECK(std::isnan(none.estimate));
  CHECK(none.low == -kInf);
  CHECK(none.high == kInf);
  CHECK_THROWS_WITH_AS(mean_interval({1, std::nan("")}),
                       doctest::Contains("mean_interval: x[1] is nan"), ValueError);
  CHECK_THROWS_AS(mean_interval({1, 2}, -0.5), ValueError);
}

TEST_CASE("stats: sign test p values are exact") {
  const std::vector<double> zero(10, 0.0);
  std::vector<double> up(10, 1.0);
  CHECK(paired_compare(up, zero).sign_test_p == 2.0 / 1024);
  CHECK(paired_compare(zero, up).sign_test_p == 2.0 / 1024);
  // 8 positive and 2 negative: 2 (C(10,0) + C(10,1) + C(10,2)) / 2^10 = 112/1024.
  std::vector<double> mixed = {1, 1, 1, 1, 1, 1, 1, 1, -1, -1};
  const PairedComparison r = paired_compare(mixed, zero);
  CHECK(r.n == 10);
  CHECK(r.positive == 8);
  CHECK(r.negative == 2);
  CHECK(r.ties == 0);
  CHECK(r.sign_test_p == doctest::Approx(112.0 / 1024).epsilon(1e-15));
  CHECK(r.sign_test_p == doctest::Approx(2 * binomial_half_cdf_exact(2, 10)).epsilon(1e-15));
  // Ties are dropped: 5 positive and 3 ties is a sign test on 5, p = 2/32.
  const PairedComparison tied =
      paired_compare({1, 2, 3, 4, 5, 0, 0, 0}, std::vector<double>(8, 0.0));
  CHECK(tied.ties == 3);
  CHECK(tied.sign_test_p == doctest::Approx(2.0 / 32).epsilon(1e-15));
  CHECK(paired_compare(zero, zero).sign_test_p == 1.0);
  CHECK(paired_compare({1, -1, 2, -2}, {0, 0, 0, 0}).sign_test_p == 1.0);  // capped at 1
  // Past 1000 pairs the sum runs in logs; mpmath: 800 vs 700 gives 0.010559255466711544,
  // 1051 vs 950 gives 0.025359525784663768.
  for (auto [pos, neg, p] :
       {std::tuple{800, 700, 0.010559255466711544}, std::tuple{1051, 950, 0.025359525784663768}}) {
    std::vector<double> a(pos, 1.0);
    a.insert(a.end(), neg, -1.0);
    const PairedComparison big = paired_compare(a, std::vector<double>(a.size(), 0.0), 10);
    CHECK(big.sign_test_p == doctest::Approx(p).epsilon(1e-11));
  }
}

TEST_CASE("stats: bootstrap intervals are deterministic and cover a constant shift") {
  // Dyadic values: every difference is exactly 0.5, so every resample mean is 0.5.
  const std::vector<double> b = {0.25, 1.5, -2.0, 3.75, 0.125, 8.0};
  std::vector<double> a = b;
  for (double& v : a) v += 0.5;
  const PairedComparison exact = paired_compare(a, b, 500, 3);
  CHECK(exact.mean_difference.estimate == 0.5);
  CHECK(exact.mean_difference.low == 0.5);
  CHECK(exact.mean_difference.high == 0.5);
  CHECK(exact.positive == 6);

  // A shift of 2 plus noise of mean zero (+-0.25 alternating, then +-0.75).
  std::vector<double> x(40), y(40);
  for (int i = 0; i < 40; ++i) {
    y[i] = std::sin(0.7 * i) * 10.0;
    x[i] = y[i] + 2.0 + (i % 2 ? 0.25 : -0.25) * (i < 20 ? 1.0 : 3.0);
  }
  const PairedComparison r1 = paired_compare(x, y, 4000, 42);
  const PairedComparison r2 = paired_compare(x, y, 4000, 42);
  CHECK(r1.mean_difference.low < 2.0);
  CHECK(r1.mean_difference.high > 2.0);
  CHECK(r1.mean_difference.high - r1.mean_difference.low < 0.5);
  CHECK(r1.mean_difference.estimate == doctest::Approx(2.0).epsilon(1e-12));
  // Same seed, same bits; the paired interval is the bootstrap of the differences.
  CHECK(r1.mean_difference.low == r2.mean_difference.low);
  CHECK(r1.mean_difference.high == r2.mean_difference.high);
  std::vector<double> d(40);
  for (int i = 0; i < 40; ++i) d[i] = x[i] - y[i];
  const Interval direct = bootstrap_mean_interval(d, 4000, 42);
  CHECK(direct.low == r1.mean_difference.low);
  CHECK(direct.high == r1.mean_difference.high);
  const Interval other = bootstrap_mean_interval(d, 4000, 43);
  CHECK((other.low != direct.low || other.high != direct.high));
  // Same resamples at a higher level: a wider, nested interval.
  const Interval wide = bootstrap_mean_interval(d, 4000, 42, 0.99);
  CHECK(wide.low <= direct.low);
  CHECK(wide.high >= direct.high);

  const Interval single = bootstrap_mean_interval({4.0});
  CHECK(single.low == 4.0);
  CHECK(single.high == 4.0);
  const Interval none = bootstrap_mean_interval({});
  CHECK(std::isnan(none.estimate));
  CHECK(none.low == -kInf);
}

TEST_CASE("stats: bootstrap and t intervals reach their coverage on simulated studies") {
  // 400 studies of 25 normal(1, 2) draws: each 95% interval should contain 1 about 380
  // times (binomial sd ~4.4); the percentile bootstrap runs a little narrow at n = 25.
  // The studies' data come from libstdc++'s normal_distribution: loose bounds, not bits.
  std::mt19937_64 rng(20240611);
  std::normal_distribution<double> normal(1.0, 2.0);
  int t_hits = 0, boot_hits = 0;
  double t_width = 0.0, boot_width = 0.0;
  for (int study = 0; study < 400; ++study) {
    std::vector<double> x(25);
    for (double& v : x) v = normal(rng);
    const Interval t = mean_interval(x);
    const Interval bs = bootstrap_mean_interval(x, 1000, static_cast<std::uint64_t>(study));
    t_hits += t.low <= 1.0 && 1.0 <= t.high;
    boot_hits += bs.low <= 1.0 && 1.0 <= bs.high;
    t_width += t.high - t.low;
    boot_width += bs.high - bs.low;
  }
  CHECK(t_hits >= 365);
  CHECK(t_hits <= 395);
  CHECK(boot_hits >= 350);
  CHECK(boot_hits <= 395);
  // Expected t width: 2 t_0.975(24) sigma / sqrt(n) c4 = 2 * 2.0639 * 2 / 5 * 0.9896 = 1.634.
  // The bootstrap's spread has divisor n and its quantiles are normal ones, so its width is
  // about sqrt(24/25) * 1.960 / 2.064 = 0.930 of the t width.
  CHECK(t_width / 400 == doctest::Approx(1.634).epsilon(0.05));
  CHECK(boot_width / t_width == doctest::Approx(0.930).epsilon(0.03));
}

TEST_CASE("stats: paired_compare and bootstrap_mean_interval reject bad input") {
  CHECK_THROWS_WITH_AS(paired_compare({1, 2, 3, 4, 5}, {1, 2, 3, 4}),
                       doctest::Contains("paired_compare: a has 5 values and b has 4"), ValueError);
  CHECK_THROWS_WITH_AS(paired_compare({1, 2}, {1, 2}, 0),
                       doctest::Contains("paired_compare: resamples = 0"), ValueError);
  CHECK_THROWS_WITH_AS(paired_compare({1, 2}, {1, 2}, 100, 0, 1.0),
                       doctest::Contains("paired_compare: confidence 1 is not in (0, 1)"),
                       ValueError);
  CHECK_THROWS_WITH_AS(paired_compare({1, 2}, {1, kInf}), doctest::Contains("b[1] is inf"),
                       ValueError);
  CHECK_THROWS_AS(bootstrap_mean_interval({1, 2}, -5), ValueError);
  CHECK_THROWS_WITH_AS(bootstrap_mean_interval({1, 2}, 100, 0, 0.0),
                       doctest::Contains("bootstrap_mean_interval: confidence 0"), ValueError);
}

// --- change points --------------------------------------------------------------------

TEST_CASE("stats: phase_change_index and largest_jump_index") {
  const std::vector<double> acc = {0.1, 0.12, 0.11, 0.35, 0.9, 0.95, 0.97};
  CHECK(phase_change_index(acc, 0.9) == 4);
  CHECK(phase_change_index(acc, 0.1) == 0);
  CHECK(phase_change_index(acc, 0.99) == -1);
  CHECK(phase_change_index({}, 0.5) == -1);
  CHECK(phase_change_index({std::nan(""), 0.6}, 0.5) == 1);
  CHECK_THROWS_WITH_AS(phase_change_index(acc, std::nan("")),
                       doctest::Contains("phase_change_index: threshold is NaN"), ValueError);
  CHECK(largest_jump_index(acc) == 4);              // 0.35 -> 0.9
  CHECK(largest_jump_index({1.0, 2.0, 3.0}) == 1);  // ties: the earliest
  CHECK(largest_jump_index({3.0, 2.0, 1.0}) == 1);  // all falling: the smallest fall
  CHECK(largest_jump_index({5.0}) == -1);
  CHECK(largest_jump_index({}) == -1);
  CHECK(largest_jump_index({0.0, std::nan(""), 1.0, 1.5}) == 3);
  CHECK(largest_jump_index({std::nan(""), std::nan("")}) == -1);
}
