// Elementwise ops: binary ops against a naive broadcast loop and gradcheck over every
// broadcasting case, scalar variants, unary ops against their closed forms, gradients at
// kinks (relu/abs at 0, maximum ties), comparisons, where, float32 agreement and errors.
#include <algorithm>
#include <cmath>
#include <functional>
#include <numbers>
#include <string>
#include <vector>

#include "helpers.hpp"

namespace hg = headgrad;
using hg::Shape;
using hg::Tensor;
using hg::unravel_index;
using hg::testing::check_float32_matches_float64;
using hg::testing::check_gradcheck;
using hg::testing::check_values;
using hg::testing::param;
using hg::testing::positive_param;

namespace {

using BinaryOp = std::function<Tensor(const Tensor&, const Tensor&)>;
using UnaryOp = std::function<Tensor(const Tensor&)>;
using Reference = std::function<double(double, double)>;

// NumPy broadcasting written out independently of the library.
Shape naive_broadcast_shape(const Shape& a, const Shape& b) {
  const std::size_t rank = std::max(a.size(), b.size());
  Shape out(rank, 1);
  for (std::size_t i = 0; i < rank; ++i) {
    const std::int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const std::int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    REQUIRE((da == db || da == 1 || db == 1));
    out[i] = da == 1 ? db : da;
  }
  return out;
}

// Flat index into `in` of the element that broadcasting sends to output multi-index `out`.
std::int64_t source_index(const Shape& out, const Shape& in) {
  const std::size_t lead = out.size() - in.size();
  std::int64_t flat = 0;
  for (std::size_t d = 0; d < in.size(); ++d)
    flat = flat * in[d] + (in[d] == 1 ? 0 : out[lead + d]);
  return flat;
}

// f(a, b) over the broadcast of a and b, one output element at a time.
std::vector<double> naive_binary(const Tensor& a, const Tensor& b, const Reference& f) {
  const Shape out_shape = naive_broadcast_shape(a.shape(), b.shape());
  const auto va = a.to_vector<double>();
  const auto vb = b.to_vector<double>();
  std::vector<double> out(static_cast<std::size_t>(hg::numel_of(out_shape)));
  for (std::size_t i = 0; i < out.size(); ++i) {
    const Shape index = unravel_index(static_cast<std::int64_t>(i), out_shape);
    out[i] = f(va[source_index(index, a.shape())], vb[source_index(index, b.shape())]);
  }
  return out;
}

// The smallest |a - b| over the broadcast pairs (maximum/minimum need no near ties).
double min_broadcast_gap(const Tensor& a, const Tensor& b) {
  double gap = INFINITY;
  for (double d : naive_binary(a, b, [](double x, double y) { return std::abs(x - y); }))
    gap = std::min(gap, d);
  return gap;
}

// A float64 leaf of `shape` with normal entries pushed at least `margin` away from each
// of `points` (kinks of relu/abs/clamp), so central differences never straddle one.
Tensor param_away_from(const Shape& shape, std::uint64_t seed, const std::vector<double>& points,
                       double margin = 0.1) {
  std::vector<double> v = param(shape, seed).to_vector<double>();
  for (double& x : v)
    for (double p : points)
      if (std::abs(x - p) < margin) x = x >= p ? p + margin : p - margin;
  return hg::from_vector<double>(v, shape).requires_grad_(true);
}

// |t| + 0.5: a differentiable way to feed log/sqrt/pow/div positive values.
Tensor pos(const Tensor& t) { return hg::add(hg::abs(t), 0.5); }

struct BinaryCase {
  const char* name;
  BinaryOp op;
  Reference reference;
  bool positive_a = false;  // pow needs a positive base
  bool positive_b = false;  // div needs a divisor away from zero
  bool no_ties = false;     // maximum/minimum
};

const std::vector<BinaryCase> kBinaryCases = {
    {"add", [](auto& a, auto& b) { return hg::add(a, b); },
     [](double x, double y) { return x + y; }},
    {"add alpha=0.7", [](auto& a, auto& b) { return hg::add(a, b, 0.7); },
     [](double x, double y) { return x + 0.7 * y; }},
    {"sub", [](auto& a, auto& b) { return hg::sub(a, b); },
     [](double x, double y) { return x - y; }},
    {"sub alpha=2.5", [](auto& a, auto& b) { return hg::sub(a, b, 2.5); },
     [](double x, double y) { return x - 2.5 * y; }},
    {"mul", [](auto& a, auto& b) { return hg::mul(a, b); },
     [](double x, double y) { return x * y; }},
    {"div", [](auto& a, auto& b) { return hg::div(a, b); },
     [](double x, double y) { return x / y; }, false, true},
    {"pow", [](auto& a, auto& b) { return hg::pow(a, b); },
     [](double x, double y) { return std::pow(x, y); }, true, false},
    {"maximum", [](auto& a, auto& b) { return hg::maximum(a, b); },
     [](double x, double y) { return x > y ? x : y; }, false, false, true},
    {"minimum", [](auto& a, auto& b) { return hg::minimum(a, b); },
     [](double x, double y) { return x < y ? x : y; }, false, false, true},
};

struct ShapePair {
  Shape a, b;
};

// The broadcasting edge cases, each also with the operands swapped.
const std::vector<ShapePair> kShapePairs = {
    {{3, 4}, {4}},    {{3, 1}, {1, 4}}, {{2, 1, 4}, {3, 1}},
    {{}, {2, 3}},     {{1}, {2, 3}},    {{5, 1, 1}, {1, 1, 7}},
    {{2, 3}, {2, 3}}, {{3, 5}, {3, 5}}, {{2, 3, 1, 4}, {4}},
    {{}, {}},
};

std::vector<ShapePair> both_orders(const std::vector<ShapePair>& pairs) {
  std::vector<ShapePair> out;
  for (const auto& p : pairs) {
    out.push_back(p);
    if (p.a != p.b) out.push_back({p.b, p.a});
  }
  return out;
}

// The gradient `x` receives from sum(f(x)) (or from `upstream` when given).
std::vector<double> grad_of(const Tensor& leaf, const Tensor& out, const Tensor& upstream = {}) {
  out.backward(upstream.defined() ? upstream : hg::ones_like(out));
  return leaf.grad().to_vector<double>();
}

}  // namespace

TEST_CASE("binary ops match a naive broadcast loop over every broadcasting case") {
  std::uint64_t seed = 100;
  for (const ShapePair& p : both_orders(kShapePairs)) {
    for (const BinaryCase& c : kBinaryCases) {
      CAPTURE(c.name);
      CAPTURE(hg::shape_str(p.a));
      CAPTURE(hg::shape_str(p.b));
      Tensor a = c.positive_a ? positive_param(p.a, ++seed) : param(p.a, ++seed);
      Tensor b = c.positive_b ? positive_param(p.b, ++seed) : param(p.b, ++seed);
      Tensor out = c.op(a, b);
      CHECK(out.dtype() == hg::kFloat64);
      check_values(out, naive_broadcast_shape(p.a, p.b), naive_binary(a, b, c.reference));
    }
  }
}

TEST_CASE("binary ops pass gradcheck in both operands over every broadcasting case") {
  std::uint64_t seed = 500;
  for (const ShapePair& p : both_orders(kShapePairs)) {
    for (const BinaryCase& c : kBinaryCases) {
      CAPTURE(c.name);
      CAPTURE(hg::shape_str(p.a));
      CAPTURE(hg::shape_str(p.b));
      Tensor a = c.positive_a ? positive_param(p.a, ++seed) : param(p.a, ++seed);
      Tensor b = c.positive_b ? positive_param(p.b, ++seed) : param(p.b, ++seed);
      if (c.no_ties) REQUIRE(min_broadcast_gap(a, b) > 1e-4);
      const BinaryOp op = c.op;
      check_gradcheck([op](const std::vector<Tensor>& in) { return op(in[0], in[1]); }, {a, b});
    }
  }
}

TEST_CASE("gradients of a broadcast operand are summed over the broadcast dims") {
  // (3,1) * (1,4): d/da_i = sum_j b_j, d/db_j = sum_i a_i
  Tensor a = hg::from_vector<double>({1, 2, 3}, {3, 1}).requires_grad_(true);
  Tensor b = hg::from_vector<double>({10, 20, 30, 40}, {1, 4}).requires_grad_(true);
  hg::sum(hg::mul(a, b)).backward();
  CHECK(a.grad().shape() == Shape{3, 1});
  CHECK(b.grad().shape() == Shape{1, 4});
  CHECK(a.grad().to_vector<double>() == std::vector<double>{100, 100, 100});
  CHECK(b.grad().to_vector<double>() == std::vector<double>{6, 6, 6, 6});
  // 0-d + (2,3) with alpha: the 0-d operand gets the sum of the upstream gradient times 1,
  // the (2,3) operand alpha times the upstream gradient
  Tensor s = hg::scalar_tensor(2.0, hg::kFloat64).requires_grad_(true);
  Tensor m = param({2, 3}, 7);
  Tensor up = hg::from_vector<double>({1, 2, 3, 4, 5, 6}, {2, 3});
  hg::add(s, m, -3.0).backward(up);
  CHECK(s.grad().shape() == Shape{});
  CHECK(s.grad().item() == 21.0);
  CHECK(m.grad().to_vector<double>() == std::vector<double>{-3, -6, -9, -12, -15, -18});
}

TEST_CASE("only the operands that require grad receive a gradient") {
  Tensor a = param({3, 4}, 11);
  Tensor b = hg::from_vector<double>({1, 2, 3, 4}, {4});  // a constant
  hg::mul(a, b).backward(hg::ones({3, 4}, hg::kFloat64));
  CHECK_FALSE(b.grad().defined());
  CHECK(a.grad().to_vector<double>() == std::vector<double>{1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4});
  check_gradcheck([](const std::vector<Tensor>& in) { return hg::div(in[1], in[0]); },
                  {hg::testing::positive_param({3, 4}, 12).detach(), param({4}, 13)});
}

TEST_CASE("scalar variants and operators match their closed forms and pass gradcheck") {
  struct ScalarCase {
    const char* name;
    UnaryOp op;
    std::function<double(double)> reference;
    bool away_from_zero = false;
  };
  const std::vector<ScalarCase> cases = {
      {"add", [](auto& x) { return hg::add(x, 1.5); }, [](double v) { return v + 1.5; }},
      {"sub", [](auto& x) { return hg::sub(x, 0.25); }, [](double v) { return v - 0.25; }},
      {"rsub", [](auto& x) { return hg::rsub(x, 2.0); }, [](double v) { return 2.0 - v; }},
      {"mul", [](auto& x) { return hg::mul(x, -3.0); }, [](double v) { return -3.0 * v; }},
      {"div", [](auto& x) { return hg::div(x, 4.0); }, [](double v) { return v / 4.0; }},
      {"rdiv", [](auto& x) { return hg::rdiv(x, 2.0); }, [](double v) { return 2.0 / v; }, true},
      {"x + s", [](auto& x) { return x + 0.5; }, [](double v) { return v + 0.5; }},
      {"s - x", [](auto& x) { return 0.5 - x; }, [](double v) { return 0.5 - v; }},
      {"s * x", [](auto& x) { return 3.0 * x; }, [](double v) { return 3.0 * v; }},
      {"s / x", [](auto& x) { return 3.0 / x; }, [](double v) { return 3.0 / v; }, true},
      {"x - s", [](auto& x) { return x - 0.5; }, [](double v) { return v - 0.5; }},
      {"x / s", [](auto& x) { return x / 8.0; }, [](double v) { return v / 8.0; }},
      {"-x", [](auto& x) { return -x; }, [](double v) { return -v; }},
  };
  std::uint64_t seed = 900;
  for (const ScalarCase& c : cases) {
    for (const Shape& shape : {Shape{}, Shape{5}, Shape{2, 3}, Shape{3, 1, 4}}) {
      CAPTURE(c.name);
      CAPTURE(hg::shape_str(shape));
      Tensor x =
          c.away_from_zero ? param_away_from(shape, ++seed, {0.0}, 0.5) : param(shape, ++seed);
      std::vector<double> expected;
      for (double v : x.to_vector<double>()) expected.push_back(c.reference(v));
      check_values(c.op(x), shape, expected);
      const UnaryOp op = c.op;
      check_gradcheck([op](const std::vector<Tensor>& in) { return op(in[0]); }, {x});
    }
  }
}

TEST_CASE(
    "pow with a scalar exponent matches std::pow and passes gradcheck for 0, 1, 2, 0.5, -1.5, 3") {
  for (double e : {0.0, 1.0, 2.0, 0.5, -1.5, 3.0}) {
    for (const Shape& shape : {Shape{}, Shape{7}, Shape{3, 4}}) {
      CAPTURE(e);
      CAPTURE(hg::shape_str(shape));
      // fractional and negative exponents need a positive base; integer ones do not
      const bool integer = e == std::floor(e) && e >= 0;
      Tensor x = integer ? param(shape, 40) : positive_param(shape, 41);
      std::vector<double> expected;
      for (double v : x.to_vector<double>()) expected.push_back(std::pow(v, e));
      check_values(hg::pow(x, e), shape, expected);
      check_gradcheck([e](const std::vector<Tensor>& in) { return hg::pow(in[0], e); }, {x});
    }
  }
  // exponent 0 gives ones and a zero gradient, even at a zero base
  Tensor z = hg::from_vector<double>({0.0, -2.0, 3.0}, {3}).requires_grad_(true);
  CHECK(hg::pow(z, 0.0).to_vector<double>() == std::vector<double>{1, 1, 1});
  CHECK(grad_of(z, hg::pow(z, 0.0)) == std::vector<double>{0, 0, 0});
}

TEST_CASE("pow with a scalar base matches std::pow and passes gradcheck") {
  for (double base : {2.5, 0.3, std::exp(1.0)}) {
    for (const Shape& shape : {Shape{}, Shape{6}, Shape{2, 3}}) {
      CAPTURE(base);
      Tensor x = param(shape, 50);
      std::vector<double> expected;
      for (double v : x.to_vector<double>()) expected.push_back(std::pow(base, v));
      check_values(hg::pow(base, x), shape, expected);
      check_gradcheck([base](const std::vector<Tensor>& in) { return hg::pow(base, in[0]); }, {x});
    }
  }
}

TEST_CASE("unary ops match their closed forms in double and pass gradcheck") {
  enum class Domain { any, positive, away_from_zero };
  struct UnaryCase {
    const char* name;
    UnaryOp op;
    std::function<double(double)> reference;
    Domain domain = Domain::any;
  };
  const double s2 = std::sqrt(2.0);
  const double s2pi = std::sqrt(2.0 / std::numbers::pi);
  const std::vector<UnaryCase> cases = {
      {"neg", [](auto& x) { return hg::neg(x); }, [](double v) { return -v; }},
      {"exp", [](auto& x) { return hg::exp(x); }, [](double v) { return std::exp(v); }},
      {"log", [](auto& x) { return hg::log(x); }, [](double v) { return std::log(v); },
       Domain::positive},
      {"sqrt", [](auto& x) { return hg::sqrt(x); }, [](double v) { return std::sqrt(v); },
       Domain::positive},
      {"rsqrt", [](auto& x) { return hg::rsqrt(x); }, [](double v) { return 1.0 / std::sqrt(v); },
       Domain::positive},
      {"abs", [](auto& x) { return hg::abs(x); }, [](double v) { return std::abs(v); },
       Domain::away_from_zero},
      {"tanh", [](auto& x) { return hg::tanh(x); }, [](double v) { return std::tanh(v); }},
      {"sigmoid", [](auto& x) { return hg::sigmoid(x); },
       [](double v) { return 1.0 / (1.0 + std::exp(-v)); }},
      {"relu", [](auto& x) { return hg::relu(x); }, [](double v) { return v > 0 ? v : 0.0; },
       Domain::away_from_zero},
      {"gelu", [](auto& x) { return hg::gelu(x); },
       [s2](double v) { return 0.5 * v * (1.0 + std::erf(v / s2)); }},
      {"gelu tanh", [](auto& x) { return hg::gelu(x, hg::GeluApproximation::tanh); },
       [s2pi](double v) { return 0.5 * v * (1.0 + std::tanh(s2pi * (v + 0.044715 * v * v * v))); }},
  };
  std::uint64_t seed = 1300;
  // 1 and 13 elements exercise the scalar tail, (3,7) the vector body plus a tail
  for (const UnaryCase& c : cases) {
    for (const Shape& shape : {Shape{}, Shape{13}, Shape{3, 7}, Shape{2, 1, 3}}) {
      CAPTURE(c.name);
      CAPTURE(hg::shape_str(shape));
      Tensor x = c.domain == Domain::positive         ? positive_param(shape, ++seed)
                 : c.domain == Domain::away_from_zero ? param_away_from(shape, ++seed, {0.0})
                                                      : param(shape, ++seed, 1.5);
      std::vector<double> expected;
      for (double v : x.to_vector<double>()) expected.push_back(c.reference(v));
      check_values(c.op(x), shape, expected, 1e-12);
      const UnaryOp op = c.op;
      check_gradcheck([op](const std::vector<Tensor>& in) { return op(in[0]); }, {x});
    }
  }
}

TEST_CASE("gelu and sigmoid match their formulas over a wide range in float64 and float32") {
  std::vector<double> xs;
  for (int i = 0; i <= 120; ++i) xs.push_back(-8.0 + i * (16.0 / 120));  // includes 0
  const Tensor x64 = hg::from_vector<double>(xs, {121});
  const double s2pi = std::sqrt(2.0 / std::numbers::pi);
  for (hg::DType dtype : {hg::kFloat64, hg::kFloat32}) {
    CAPTURE(hg::to_string(dtype));
    const double eps = dtype == hg::kFloat64 ? 1e-12 : 2e-6;
    const Tensor x = x64.to(dtype);
    const auto exact = hg::gelu(x).to_vector<double>();
    const auto approx = hg::gelu(x, hg::GeluApproximation::tanh).to_vector<double>();
    const auto sig = hg::sigmoid(x).to_vector<double>();
    const auto values = x.to_vector<double>();  // the inputs as rounded to dtype
    for (std::size_t i = 0; i < xs.size(); ++i) {
      const double v = values[i];
      CAPTURE(v);
      CHECK(exact[i] == doctest::Approx(0.5 * v * (1 + std::erf(v / std::sqrt(2.0)))).epsilon(eps));
      CHECK(approx[i] ==
            doctest::Approx(0.5 * v * (1 + std::tanh(s2pi * (v + 0.044715 * v * v * v))))
                .epsilon(eps));
      CHECK(sig[i] == doctest::Approx(1.0 / (1.0 + std::exp(-v))).epsilon(eps));
    }
  }
  // the two gelu forms differ, but by less than 1e-3 (PyTorch's documented approximation)
  CHECK(hg::testing::max_abs_diff(hg::gelu(x64), hg::gelu(x64, hg::GeluApproximation::tanh)) >
        1e-6);
  CHECK(hg::testing::max_abs_diff(hg::gelu(x64), hg::gelu(x64, hg::GeluApproximation::tanh)) <
        1e-3);
}

TEST_CASE("gelu's gradient matches Phi(x) + x phi(x) over a wide range in float64 and float32") {
  // float32 runs a vectorized erfc approximation (|error| <= 1.5e-7) shared by the forward
  // and the backward; the odd lengths exercise the scalar tails too.
  for (int count : {121, 1001}) {
    std::vector<double> xs;
    for (int i = 0; i < count; ++i) xs.push_back(-10.0 + i * (20.0 / (count - 1)));
    for (hg::DType dtype : {hg::kFloat64, hg::kFloat32}) {
      CAPTURE(hg::to_string(dtype));
      const double eps = dtype == hg::kFloat64 ? 1e-12 : 2e-6;
      const Tensor x = hg::from_vector<double>(xs, {count}).to(dtype).requires_grad_(true);
      hg::sum(hg::gelu(x)).backward();
      const auto grad = x.grad().to_vector<double>();
      const auto values = x.to_vector<double>();
      for (int i = 0; i < count; ++i) {
        const double v = values[i];
        CAPTURE(v);
        const double cdf = 0.5 * std::erfc(-v / std::sqrt(2.0));
        const double pdf = std::exp(-0.5 * v * v) / std::sqrt(2.0 * std::numbers::pi);
        CHECK(grad[i] == doctest::Approx(cdf + v * pdf).epsilon(eps));
      }
    }
  }
}

TEST_CASE("clamp saturates outside the bounds, has gradient 1 inside and passes gradcheck") {
  for (const Shape& shape : {Shape{}, Shape{17}, Shape{4, 5}}) {
    CAPTURE(hg::shape_str(shape));
    Tensor x = param_away_from(shape, 60, {-0.5, 0.7}, 0.05);
    std::vector<double> expected, expected_grad;
    for (double v : x.to_vector<double>()) {
      expected.push_back(std::min(std::max(v, -0.5), 0.7));
      expected_grad.push_back(v > -0.5 && v < 0.7 ? 1.0 : 0.0);
    }
    check_values(hg::clamp(x, -0.5, 0.7), shape, expected);
    check_gradcheck([](const std::vector<Tensor>& in) { return hg::clamp(in[0], -0.5, 0.7); }, {x});
    CHECK(grad_of(x, hg::clamp(x, -0.5, 0.7)) == expected_grad);
  }
  // equal bounds are allowed: everything becomes that value
  Tensor x = param({6}, 61);
  CHECK(hg::clamp(x, 0.25, 0.25).to_vector<double>() == std::vector<double>(6, 0.25));
}

TEST_CASE("relu and abs have gradient 0 at exactly 0, maximum and minimum split ties half/half") {
  Tensor x = hg::from_vector<double>({-1.0, 0.0, 2.0}, {3}).requires_grad_(true);
  CHECK(grad_of(x, hg::relu(x)) == std::vector<double>{0, 0, 1});
  x.zero_grad();
  CHECK(grad_of(x, hg::abs(x)) == std::vector<double>{-1, 0, 1});

  Tensor a = hg::from_vector<double>({1.0, 2.0, 5.0}, {3}).requires_grad_(true);
  Tensor b = hg::from_vector<double>({1.0, 3.0, 4.0}, {3}).requires_grad_(true);
  hg::maximum(a, b).backward(hg::ones({3}, hg::kFloat64));
  CHECK(a.grad().to_vector<double>() == std::vector<double>{0.5, 0, 1});
  CHECK(b.grad().to_vector<double>() == std::vector<double>{0.5, 1, 0});
  a.zero_grad();
  b.zero_grad();
  hg::minimum(a, b).backward(hg::ones({3}, hg::kFloat64));
  CHECK(a.grad().to_vector<double>() == std::vector<double>{0.5, 1, 0});
  CHECK(b.grad().to_vector<double>() == std::vector<double>{0.5, 0, 1});

  // a broadcast 0-d operand tied with two of three entries collects 0.5 + 0.5
  Tensor s = hg::scalar_tensor(2.0, hg::kFloat64).requires_grad_(true);
  Tensor v = hg::from_vector<double>({2.0, 1.0, 2.0}, {3}).requires_grad_(true);
  hg::maximum(s, v).backward(hg::ones({3}, hg::kFloat64));
  CHECK(s.grad().item() == 2.0);
  CHECK(v.grad().to_vector<double>() == std::vector<double>{0.5, 0, 0.5});
}

TEST_CASE("NaN propagates through relu, clamp, maximum and minimum in SIMD lanes and the tail") {
  // 19 entries: NaN at every position of the vector body and of the scalar tail
  for (hg::DType dtype : {hg::kFloat32, hg::kFloat64}) {
    CAPTURE(hg::to_string(dtype));
    const Tensor nan = hg::full({19}, NAN, dtype);
    const Tensor zero = hg::zeros({19}, dtype);
    for (const Tensor& y : {hg::relu(nan), hg::clamp(nan, -1.0, 1.0), hg::maximum(nan, zero),
                            hg::maximum(zero, nan), hg::minimum(nan, zero), hg::minimum(zero, nan)})
      for (double v : y.to_vector<double>()) CHECK(std::isnan(v));
  }
}

TEST_CASE("comparisons return bool tensors that broadcast and match a naive loop") {
  struct CompareCase {
    const char* name;
    BinaryOp op;
    Reference reference;
  };
  const std::vector<CompareCase> cases = {
      {"eq", [](auto& a, auto& b) { return hg::eq(a, b); },
       [](double x, double y) { return double(x == y); }},
      {"ne", [](auto& a, auto& b) { return hg::ne(a, b); },
       [](double x, double y) { return double(x != y); }},
      {"lt", [](auto& a, auto& b) { return hg::lt(a, b); },
       [](double x, double y) { return double(x < y); }},
      {"le", [](auto& a, auto& b) { return hg::le(a, b); },
       [](double x, double y) { return double(x <= y); }},
      {"gt", [](auto& a, auto& b) { return hg::gt(a, b); },
       [](double x, double y) { return double(x > y); }},
      {"ge", [](auto& a, auto& b) { return hg::ge(a, b); },
       [](double x, double y) { return double(x >= y); }},
  };
  // small integers so that equal pairs occur often
  hg::Generator gen(5);
  for (hg::DType dtype : {hg::kFloat32, hg::kFloat64, hg::kInt64}) {
    for (const ShapePair& p :
         both_orders({{{3, 4}, {4}}, {{3, 1}, {1, 4}}, {{}, {2, 3}}, {{2, 3}, {2, 3}}})) {
      Tensor a = hg::randint(-2, 3, p.a, dtype, &gen);
      Tensor b = hg::randint(-2, 3, p.b, dtype, &gen);
      for (const CompareCase& c : cases) {
        CAPTURE(c.name);
        CAPTURE(hg::to_string(dtype));
        CAPTURE(hg::shape_str(p.a));
        CAPTURE(hg::shape_str(p.b));
        Tensor out = c.op(a, b);
        CHECK(out.dtype() == hg::kBool);
        CHECK_FALSE(out.requires_grad());
        check_values(out, naive_broadcast_shape(p.a, p.b), naive_binary(a, b, c.reference), 0);
      }
    }
  }
  // comparisons of tensors that require grad do not join the graph
  Tensor x = param({2, 3}, 3);
  CHECK_FALSE(hg::gt(x, hg::zeros({3}, hg::kFloat64)).requires_grad());
}

TEST_CASE("logical_not flips every entry of a bool mask") {
  Tensor m = hg::from_vector<bool>({true, false, false, true, true, false}, {2, 3});
  Tensor n = hg::logical_not(m);
  CHECK(n.dtype() == hg::kBool);
  CHECK(n.shape() == Shape{2, 3});
  CHECK(n.to_vector<bool>() == std::vector<bool>{false, true, true, false, false, true});
  CHECK(hg::logical_not(hg::logical_not(m)).to_vector<bool>() == m.to_vector<bool>());
}

TEST_CASE("where picks a or b per a broadcast condition and passes gradcheck in both branches") {
  struct WhereCase {
    Shape cond, a, b;
  };
  const std::vector<WhereCase> cases = {{{2, 3}, {2, 3}, {2, 3}},
                                        {{3, 1}, {3, 4}, {4}},
                                        {{4}, {3, 4}, {}},
                                        {{2, 1, 4}, {3, 1}, {1, 4}},
                                        {{}, {2, 3}, {2, 3}}};
  std::uint64_t seed = 1700;
  for (const WhereCase& c : cases) {
    CAPTURE(hg::shape_str(c.cond));
    CAPTURE(hg::shape_str(c.a));
    CAPTURE(hg::shape_str(c.b));
    // alternate true/false so both branches are taken (a 0-d condition: try both)
    for (bool first : {true, false}) {
      std::vector<bool> cv(static_cast<std::size_t>(hg::numel_of(c.cond)));
      for (std::size_t i = 0; i < cv.size(); ++i) cv[i] = (i % 2 == 0) == first;
      Tensor cond = hg::from_vector<bool>(cv, c.cond);
      Tensor a = param(c.a, ++seed);
      Tensor b = param(c.b, ++seed);
      const Shape out_shape = naive_broadcast_shape(naive_broadcast_shape(c.cond, c.a), c.b);
      std::vector<double> expected(static_cast<std::size_t>(hg::numel_of(out_shape)));
      const auto va = a.to_vector<double>();
      const auto vb = b.to_vector<double>();
      for (std::size_t i = 0; i < expected.size(); ++i) {
        const Shape index = unravel_index(static_cast<std::int64_t>(i), out_shape);
        expected[i] = cv[source_index(index, c.cond)] ? va[source_index(index, c.a)]
                                                      : vb[source_index(index, c.b)];
      }
      check_values(hg::where(cond, a, b), out_shape, expected, 0);
      check_gradcheck([](const std::vector<Tensor>& in) { return hg::where(in[0], in[1], in[2]); },
                      {cond, a, b});
    }
  }
  // the gradient goes to the chosen branch only
  Tensor cond = hg::from_vector<bool>({true, false, true}, {3});
  Tensor a = param({3}, 1);
  Tensor b = param({3}, 2);
  hg::where(cond, a, b).backward(hg::from_vector<double>({1, 2, 3}, {3}));
  CHECK(a.grad().to_vector<double>() == std::vector<double>{1, 0, 3});
  CHECK(b.grad().to_vector<double>() == std::vector<double>{0, 2, 0});
}

TEST_CASE("float32 results and gradients agree with float64 for elementwise ops") {
  const std::vector<std::pair<const char*, hg::GradcheckFn>> fns = {
      {"add alpha", [](auto& in) { return hg::add(in[0], in[1], 0.5); }},
      {"mul", [](auto& in) { return hg::mul(in[0], in[1]); }},
      {"div", [](auto& in) { return hg::div(in[0], pos(in[1])); }},
      {"pow", [](auto& in) { return hg::pow(pos(in[0]), in[1]); }},
      {"maximum", [](auto& in) { return hg::maximum(in[0], in[1]); }},
      {"minimum", [](auto& in) { return hg::minimum(in[0], in[1]); }},
      {"exp", [](auto& in) { return hg::exp(in[0]); }},
      {"log", [](auto& in) { return hg::log(pos(in[0])); }},
      {"sqrt rsqrt", [](auto& in) { return hg::mul(hg::sqrt(pos(in[0])), hg::rsqrt(pos(in[1]))); }},
      {"tanh sigmoid", [](auto& in) { return hg::mul(hg::tanh(in[0]), hg::sigmoid(in[1])); }},
      {"relu", [](auto& in) { return hg::relu(in[0]); }},
      {"gelu", [](auto& in) { return hg::gelu(in[0]); }},
      {"gelu tanh", [](auto& in) { return hg::gelu(in[0], hg::GeluApproximation::tanh); }},
      {"clamp", [](auto& in) { return hg::clamp(in[0], -0.3, 0.6); }},
      {"scalar ops",
       [](auto& in) {
         return hg::rsub(hg::div(hg::mul(hg::sub(hg::add(in[0], 1.0), 0.5), 3.0), 2.0), 1.0);
       }},
      {"rdiv", [](auto& in) { return hg::rdiv(pos(in[0]), 2.0); }},
      {"pow scalar",
       [](auto& in) { return hg::add(hg::pow(pos(in[0]), -1.5), hg::pow(2.0, in[1])); }},
      {"where",
       [](auto& in) { return hg::where(hg::gt(in[0], in[1]), in[0], hg::mul(in[1], 2.0)); }},
  };
  // (3,4) with (4): broadcasting in every binary op; 40 elements cover the SIMD body
  for (const auto& [name, fn] : fns) {
    CAPTURE(name);
    check_float32_matches_float64(fn, {param({3, 4}, 81), param({4}, 82)});
    check_float32_matches_float64(fn, {param({40}, 83), param({40}, 84)});
  }
}

TEST_CASE("binary ops name the op and both shapes when shapes do not broadcast") {
  const Tensor a = hg::zeros({2, 3});
  const Tensor b = hg::zeros({4});
  const std::vector<std::pair<std::string, BinaryOp>> ops = {
      {"add", [](auto& x, auto& y) { return hg::add(x, y); }},
      {"sub", [](auto& x, auto& y) { return hg::sub(x, y); }},
      {"mul", [](auto& x, auto& y) { return hg::mul(x, y); }},
      {"div", [](auto& x, auto& y) { return hg::div(x, y); }},
      {"pow", [](auto& x, auto& y) { return hg::pow(x, y); }},
      {"maximum", [](auto& x, auto& y) { return hg::maximum(x, y); }},
      {"minimum", [](auto& x, auto& y) { return hg::minimum(x, y); }},
      {"eq", [](auto& x, auto& y) { return hg::eq(x, y); }},
      {"lt", [](auto& x, auto& y) { return hg::lt(x, y); }},
  };
  for (const auto& [name, op] : ops) {
    CAPTURE(name);
    CHECK_THROWS_AS(op(a, b), hg::ShapeError);
    const std::string msg = HG_ERROR_MESSAGE(op(a, b));
    CHECK(msg.find(name) != std::string::npos);
    CHECK(msg.find("(2,3)") != std::string::npos);
    CHECK(msg.find("(4)") != std::string::npos);
  }
  CHECK_THROWS_AS(hg::where(hg::zeros({2, 3}, hg::kBool), a, b), hg::ShapeError);
  CHECK(HG_ERROR_MESSAGE(hg::where(hg::zeros({5}, hg::kBool), a, a)).find("where") !=
        std::string::npos);
}

TEST_CASE("mixing float32 and float64 is a DTypeError naming both dtypes") {
  const Tensor f32 = hg::ones({2, 3}, hg::kFloat32);
  const Tensor f64 = hg::ones({2, 3}, hg::kFloat64);
  CHECK_THROWS_AS(hg::add(f32, f64), hg::DTypeError);
  const std::string msg = HG_ERROR_MESSAGE(hg::add(f32, f64));
  CHECK(msg.find("add") != std::string::npos);
  CHECK(msg.find("float32") != std::string::npos);
  CHECK(msg.find("float64") != std::string::npos);
  CHECK_THROWS_AS(hg::mul(f64, f32), hg::DTypeError);
  CHECK_THROWS_AS(hg::where(hg::ones({2, 3}, hg::kBool), f32, f64), hg::DTypeError);
  CHECK_THROWS_AS(hg::lt(f32, f64), hg::DTypeError);
}

TEST_CASE("non-floating inputs to differentiable ops are a DTypeError naming the op") {
  const Tensor ints = hg::arange(6.0, hg::kInt64);
  CHECK_THROWS_AS(hg::exp(ints), hg::DTypeError);
  const std::string msg = HG_ERROR_MESSAGE(hg::exp(ints));
  CHECK(msg.find("exp") != std::string::npos);
  CHECK(msg.find("int64") != std::string::npos);
  CHECK(HG_ERROR_MESSAGE(hg::relu(ints)).find("relu") != std::string::npos);
  CHECK(HG_ERROR_MESSAGE(hg::mul(ints, 2.0)).find("mul") != std::string::npos);
  CHECK(HG_ERROR_MESSAGE(hg::add(ints, ints)).find("add") != std::string::npos);
  CHECK(HG_ERROR_MESSAGE(hg::sub(ints, ints)).find("sub") != std::string::npos);
  CHECK(HG_ERROR_MESSAGE(hg::sub(ints, 1.0)).find("sub") != std::string::npos);
  CHECK(HG_ERROR_MESSAGE(hg::rsub(ints, 1.0)).find("rsub") != std::string::npos);
  CHECK(HG_ERROR_MESSAGE(hg::rdiv(ints, 1.0)).find("rdiv") != std::string::npos);
  CHECK(HG_ERROR_MESSAGE(hg::pow(ints, 2.0)).find("pow") != std::string::npos);
  CHECK_THROWS_AS(hg::add(ints, ints), hg::DTypeError);
  // where's condition must be bool, logical_not's input too
  const Tensor x = hg::ones({6});
  CHECK_THROWS_AS(hg::where(x, x, x), hg::DTypeError);
  CHECK(HG_ERROR_MESSAGE(hg::where(x, x, x)).find("where") != std::string::npos);
  CHECK_THROWS_AS(hg::logical_not(x), hg::DTypeError);
  CHECK(HG_ERROR_MESSAGE(hg::logical_not(x)).find("logical_not") != std::string::npos);
}

TEST_CASE("clamp with min greater than max is a ValueError naming clamp") {
  const Tensor x = hg::ones({3});
  CHECK_THROWS_AS(hg::clamp(x, 1.0, -1.0), hg::ValueError);
  CHECK(HG_ERROR_MESSAGE(hg::clamp(x, 1.0, -1.0)).find("clamp") != std::string::npos);
}

TEST_CASE("pow gradients follow PyTorch at a zero base and a zero exponent, without NaN") {
  // base (0, 0, 2), exponent (0, 2, 0): d/dbase = 0 where the exponent is 0 and
  // 2*0^1 = 0 at (0, 2); d/dexponent = 0 where the base is 0 and the exponent >= 0, and
  // 2^0 * ln 2 at (2, 0)
  Tensor base = hg::from_vector<double>({0.0, 0.0, 2.0}, {3}).requires_grad_(true);
  Tensor exponent = hg::from_vector<double>({0.0, 2.0, 0.0}, {3}).requires_grad_(true);
  hg::sum(hg::pow(base, exponent)).backward();
  CHECK(base.grad().to_vector<double>() == std::vector<double>{0.0, 0.0, 0.0});
  const auto de = exponent.grad().to_vector<double>();
  CHECK(de[0] == 0.0);
  CHECK(de[1] == 0.0);
  CHECK(de[2] == doctest::Approx(std::log(2.0)));
  // scalar base 0: no gradient where the exponent is >= 0
  Tensor e = hg::from_vector<double>({0.0, 1.5}, {2}).requires_grad_(true);
  hg::sum(hg::pow(0.0, e)).backward();
  CHECK(e.grad().to_vector<double>() == std::vector<double>{0.0, 0.0});
}

TEST_CASE("div's gradient for the divisor divides twice, so b*b underflowing gives no inf") {
  // PyTorch 1.13 forms it as -g * ((a / b) / b): in float32, x / x at x = 1e-30 has the
  // gradient 1e30 - 1e30 = 0 (b*b = 1e-60 underflows to 0: -g*a/(b*b) was -inf), and
  // a / b at a = 3e-30, b = 1e-30 has the gradients 1e30 and -3e30 (torch's values).
  Tensor x = hg::full({1}, 1e-30, hg::TensorOptions(hg::kFloat32).requires_grad(true));
  hg::sum(hg::div(x, x)).backward();
  CHECK(x.grad().item() == 0.0);
  Tensor a = hg::full({1}, 3e-30, hg::TensorOptions(hg::kFloat32).requires_grad(true));
  Tensor b = hg::full({1}, 1e-30, hg::TensorOptions(hg::kFloat32).requires_grad(true));
  hg::sum(hg::div(a, b)).backward();
  CHECK(a.grad().item() == doctest::Approx(1e30).epsilon(1e-6));
  CHECK(b.grad().item() == doctest::Approx(-3e30).epsilon(1e-6));
  // The same formula in float64, against central differences, with divisors of both signs.
  check_gradcheck([](const std::vector<Tensor>& in) { return hg::div(in[0], in[1]); },
                  {param({3, 4}, 21),
                   hg::from_vector<double>({-2.0, -0.5, 0.75, 3.0}, {4}).requires_grad_(true)});
}
