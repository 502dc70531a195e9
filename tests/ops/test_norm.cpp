// layer_norm: forward against a naive mean/variance, gradcheck for x, weight and bias with
// 1-d and 2-d normalized shapes, float32 agreement and error messages.
#include <cmath>
#include <vector>

#include "helpers.hpp"

namespace hg = headgrad;
using hg::Shape;
using hg::Tensor;
using hg::testing::check_float32_matches_float64;
using hg::testing::check_gradcheck;
using hg::testing::param;

namespace {

// (x - mean) / sqrt(var_biased + eps) * w + b over rows of length numel(normalized), with
// w/b empty meaning none.
std::vector<double> naive_layer_norm(const std::vector<double>& x, std::int64_t d,
                                     const std::vector<double>& w, const std::vector<double>& b,
                                     double eps) {
  std::vector<double> y(x.size());
  for (std::size_t r = 0; r * d < x.size(); ++r) {
    double mean = 0, var = 0;
    for (std::int64_t i = 0; i < d; ++i) mean += x[r * d + i];
    mean /= static_cast<double>(d);
    for (std::int64_t i = 0; i < d; ++i) var += (x[r * d + i] - mean) * (x[r * d + i] - mean);
    var /= static_cast<double>(d);
    for (std::int64_t i = 0; i < d; ++i) {
      double v = (x[r * d + i] - mean) / std::sqrt(var + eps);
      if (!w.empty()) v *= w[i];
      if (!b.empty()) v += b[i];
      y[r * d + i] = v;
    }
  }
  return y;
}

struct NormCase {
  Shape x;
  Shape normalized;
};

const std::vector<NormCase> kCases = {
    {{4, 6}, {6}},        // (rows, C)
    {{2, 3, 5}, {5}},     // (B, T, C)
    {{2, 3, 4}, {3, 4}},  // 2-d normalized shape
    {{3, 4}, {3, 4}},     // whole tensor
    {{5, 1}, {1}},        // one element per row: xhat = 0
    {{2, 1, 7}, {1, 7}},  // size-1 dim inside normalized_shape
    {{17}, {17}},         // 1-d, odd length (simd tail)
};

}  // namespace

TEST_CASE("layer_norm matches the naive mean and biased variance, with and without affine") {
  for (const auto& c : kCases) {
    CAPTURE(hg::shape_str(c.x));
    CAPTURE(hg::shape_str(c.normalized));
    Tensor x = param(c.x, 1, 3.0);
    x = hg::add(x, 5.0).detach();  // a mean far from 0
    Tensor w = param(c.normalized, 2);
    Tensor b = param(c.normalized, 3);
    const std::int64_t d = hg::numel_of(c.normalized);
    const auto xs = x.to_vector<double>();
    const auto ws = w.to_vector<double>();
    const auto bs = b.to_vector<double>();
    const double eps = 1e-5;
    struct Variant {
      Tensor w, b;
      std::vector<double> wv, bv;
    };
    for (const Variant& v : {Variant{w, b, ws, bs}, Variant{Tensor(), Tensor(), {}, {}},
                             Variant{w, Tensor(), ws, {}}, Variant{Tensor(), b, {}, bs}}) {
      const auto y = hg::layer_norm(x, c.normalized, v.w, v.b, eps).to_vector<double>();
      const auto expected = naive_layer_norm(xs, d, v.wv, v.bv, eps);
      for (std::size_t i = 0; i < y.size(); ++i)
        CHECK(y[i] == doctest::Approx(expected[i]).epsilon(1e-10));
    }
  }
}

TEST_CASE("layer_norm without affine gives rows of zero mean and unit variance") {
  Tensor x = param({6, 32}, 4, 10.0);
  const auto y = hg::layer_norm(x, {32}, Tensor(), Tensor(), 0.0).to_vector<double>();
  for (std::size_t r = 0; r < 6; ++r) {
    double mean = 0, sq = 0;
    for (std::size_t i = 0; i < 32; ++i) mean += y[r * 32 + i] / 32;
    for (std::size_t i = 0; i < 32; ++i) sq += (y[r * 32 + i] - mean) * (y[r * 32 + i] - mean) / 32;
    CHECK(mean == doctest::Approx(0.0).epsilon(1e-12));
    CHECK(sq == doctest::Approx(1.0).epsilon(1e-12));
  }
}

TEST_CASE("layer_norm passes gradcheck for x, weight and bias") {
  for (const auto& c : kCases) {
    CAPTURE(hg::shape_str(c.x));
    CAPTURE(hg::shape_str(c.normalized));
    const Shape ns = c.normalized;
    Tensor x = param(c.x, 11);
    Tensor w = param(ns, 12);
    Tensor b = param(ns, 13);
    check_gradcheck(
        [ns](const std::vector<Tensor>& in) { return hg::layer_norm(in[0], ns, in[1], in[2]); },
        {x, w, b});
    check_gradcheck([ns](const std::vector<Tensor>& in) { return hg::layer_norm(in[0], ns); }, {x});
    check_gradcheck(
        [ns](const std::vector<Tensor>& in) { return hg::layer_norm(in[0], ns, in[1]); }, {x, w});
    check_gradcheck(
        [ns](const std::vector<Tensor>& in) { return hg::layer_norm(in[0], ns, Tensor(), in[1]); },
        {x, b});
    // gradients for the parameters only (x fixed)
    check_gradcheck(
        [ns](const std::vector<Tensor>& in) { return hg::layer_norm(in[0], ns, in[1], in[2]); },
        {x.detach(), w, b});
  }
}

TEST_CASE("layer_norm bias and weight gradients are the row sums of dy and dy*xhat") {
  Tensor x = param({3, 4}, 21);
  Tensor w = param({4}, 22);
  Tensor b = param({4}, 23);
  Tensor dy = param({3, 4}, 24).detach();
  hg::layer_norm(x, {4}, w, b, 1e-5).backward(dy);
  const auto xs = x.to_vector<double>();
  const auto dys = dy.to_vector<double>();
  const auto xhat = naive_layer_norm(xs, 4, {}, {}, 1e-5);
  const auto dw = w.grad().to_vector<double>();
  const auto db = b.grad().to_vector<double>();
  for (std::size_t i = 0; i < 4; ++i) {
    double sum_dy = 0, sum_dy_xhat = 0;
    for (std::size_t r = 0; r < 3; ++r) {
      sum_dy += dys[r * 4 + i];
      sum_dy_xhat += dys[r * 4 + i] * xhat[r * 4 + i];
    }
    CHECK(db[i] == doctest::Approx(sum_dy).epsilon(1e-12));
    CHECK(dw[i] == doctest::Approx(sum_dy_xhat).epsilon(1e-12));
  }
}

TEST_CASE("layer_norm agrees between float32 and float64") {
  for (const auto& c : kCases) {
    CAPTURE(hg::shape_str(c.x));
    const Shape ns = c.normalized;
    check_float32_matches_float64(
        [ns](const std::vector<Tensor>& in) { return hg::layer_norm(in[0], ns, in[1], in[2]); },
        {param(c.x, 31), param(ns, 32), param(ns, 33)});
  }
}

TEST_CASE("layer_norm rejects an input that does not end with normalized_shape") {
  Tensor x = hg::zeros({2, 3, 4});
  for (const Shape& ns : {Shape{5}, Shape{4, 3}, Shape{1, 2, 3, 4}}) {
    const std::string msg = HG_ERROR_MESSAGE(hg::layer_norm(x, ns));
    CHECK(msg.find("layer_norm") != std::string::npos);
    CHECK(msg.find("(2,3,4)") != std::string::npos);
    CHECK(msg.find(hg::shape_str(ns)) != std::string::npos);
    CHECK_THROWS_AS(hg::layer_norm(x, ns), hg::ShapeError);
  }
  CHECK_THROWS_AS(hg::layer_norm(x, {}), hg::ShapeError);
}

TEST_CASE("layer_norm rejects weight and bias of the wrong shape or dtype") {
  Tensor x = hg::zeros({2, 3, 4});
  std::string msg = HG_ERROR_MESSAGE(hg::layer_norm(x, {4}, hg::ones({3})));
  CHECK(msg.find("layer_norm") != std::string::npos);
  CHECK(msg.find("weight (3)") != std::string::npos);
  CHECK(msg.find("(4)") != std::string::npos);
  CHECK_THROWS_AS(hg::layer_norm(x, {4}, hg::ones({3})), hg::ShapeError);
  msg = HG_ERROR_MESSAGE(hg::layer_norm(x, {3, 4}, Tensor(), hg::ones({4})));
  CHECK(msg.find("bias (4)") != std::string::npos);
  CHECK(msg.find("(3,4)") != std::string::npos);
  CHECK_THROWS_AS(hg::layer_norm(x, {4}, hg::ones({4}, hg::kFloat64)), hg::DTypeError);
  CHECK_THROWS_AS(hg::layer_norm(hg::zeros({2, 4}, hg::kInt64), {4}), hg::DTypeError);
}

// --- grouped_layer_norm: one layer norm per slice of the leading dim ----------------------

TEST_CASE("grouped_layer_norm gradients match central differences with and without bias") {
  check_gradcheck(
      [](const std::vector<Tensor>& in) { return hg::grouped_layer_norm(in[0], in[1], in[2]); },
      {param({3, 2, 4, 6}, 81), param({3, 6}, 82), param({3, 6}, 83)});
  check_gradcheck(
      [](const std::vector<Tensor>& in) { return hg::grouped_layer_norm(in[0], in[1]); },
      {param({2, 5, 4}, 84), param({2, 4}, 85)});
}

TEST_CASE("grouped_layer_norm is bitwise layer_norm of each group's slices, in float32") {
  hg::Generator gen(8);
  const Tensor x = hg::randn({3, 5, 7, 64}, hg::kFloat32, &gen).requires_grad_(true);
  const Tensor w = hg::randn({3, 64}, hg::kFloat32, &gen).requires_grad_(true);
  const Tensor b = hg::randn({3, 64}, hg::kFloat32, &gen).requires_grad_(true);
  const Tensor y = hg::grouped_layer_norm(x, w, b);
  const Tensor dy = hg::randn(y.shape(), hg::kFloat32, &gen);
  hg::sum(hg::mul(y, dy)).backward();
  for (std::int64_t g = 0; g < 3; ++g) {
    CAPTURE(g);
    const Tensor xs = hg::select(x, 0, g).detach().requires_grad_(true);
    const Tensor ws = hg::select(w, 0, g).detach().requires_grad_(true);
    const Tensor bs = hg::select(b, 0, g).detach().requires_grad_(true);
    const Tensor ys = hg::layer_norm(xs, {64}, ws, bs);
    hg::sum(hg::mul(ys, hg::select(dy, 0, g))).backward();
    CHECK(hg::select(y, 0, g).to_vector<float>() == ys.to_vector<float>());
    CHECK(hg::select(x.grad(), 0, g).to_vector<float>() == xs.grad().to_vector<float>());
    CHECK(hg::select(w.grad(), 0, g).to_vector<float>() == ws.grad().to_vector<float>());
    CHECK(hg::select(b.grad(), 0, g).to_vector<float>() == bs.grad().to_vector<float>());
  }
}

TEST_CASE("grouped_layer_norm refuses parameters that are not one row per group") {
  CHECK_THROWS_WITH_AS(hg::grouped_layer_norm(hg::zeros({3, 4, 6}), hg::zeros({2, 6})),
                       doctest::Contains("grouped_layer_norm: input (3,4,6)"), hg::ShapeError);
  CHECK_THROWS_WITH_AS(
      hg::grouped_layer_norm(hg::zeros({3, 4, 6}), hg::zeros({3, 6}), hg::zeros({3, 5})),
      doctest::Contains("expected input (G, ..., D) with weight and bias (G, D)"), hg::ShapeError);
}

TEST_CASE("layer_norm of a float32 row whose variance overflows is NaN, as in PyTorch") {
  // (2.5e30 - mean)^2 overflows float32: rstd was 1/sqrt(inf) = 0 and the row silently
  // became the bias; torch 1.13 gives NaN for the row (and float64 rows stay finite).
  const Tensor x = hg::from_vector<float>({2.5e30f, 0, 0, 0, 1, 2, 3, 4}, {2, 4});
  const Tensor w = hg::ones({4}), b = hg::full({4}, 0.5);
  for (const Tensor& y : {hg::layer_norm(x, {4}, w, b), hg::layer_norm(x, {4})}) {
    const auto v = y.to_vector<float>();
    for (int i = 0; i < 4; ++i) CHECK(std::isnan(v[i]));
    for (int i = 4; i < 8; ++i) CHECK(std::isfinite(v[i]));
  }
  const auto y64 = hg::layer_norm(x.to(hg::kFloat64), {4}).to_vector<double>();
  CHECK(y64[0] == doctest::Approx(1.7320508));  // torch: 1.7321 (float64)
  // A row that is constant but huge stays finite: its variance is 0.
  const auto flat = hg::layer_norm(hg::full({1, 4}, 2.5e30), {4}, w, b).to_vector<float>();
  CHECK(flat == std::vector<float>{0.5f, 0.5f, 0.5f, 0.5f});
}
