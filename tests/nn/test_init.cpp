// nn::init: fans (PyTorch's and Keras' rules), gains, and the bounds and spreads of each
// initializer.
#include <doctest/doctest.h>

#include <cmath>

#include "headgrad/headgrad.hpp"
#include "helpers.hpp"

using namespace headgrad;
namespace init = nn::init;

namespace {
struct Stats {
  double mean, stddev, max_abs;
};
Stats stats(const Tensor& t) {
  auto v = t.to_vector<double>();
  double m = 0, sq = 0, mx = 0;
  for (double x : v) m += x, sq += x * x, mx = std::max(mx, std::abs(x));
  m /= double(v.size());
  return {m, std::sqrt(sq / double(v.size()) - m * m), mx};
}
}  // namespace

TEST_CASE("fans follow PyTorch's rule and Keras' rule") {
  // PyTorch: fan_in = size(1) * receptive field, fan_out = size(0) * receptive field.
  CHECK(init::fan_in_and_fan_out({24, 8}) == std::pair<std::int64_t, std::int64_t>{8, 24});
  CHECK(init::fan_in_and_fan_out({16, 3, 5, 5}) == std::pair<std::int64_t, std::int64_t>{75, 400});
  CHECK(init::fan_in_and_fan_out({1, 1, 8}) == std::pair<std::int64_t, std::int64_t>{8, 8});
  CHECK_THROWS_AS(init::fan_in_and_fan_out({8}), ShapeError);
  // Keras: the last two dims, times the product of the leading ones.
  CHECK(init::keras_fan_in_and_fan_out({16, 4, 8}) ==
        std::pair<std::int64_t, std::int64_t>{64, 128});
  CHECK(init::keras_fan_in_and_fan_out({4, 8, 16}) ==
        std::pair<std::int64_t, std::int64_t>{32, 64});
  CHECK(init::keras_fan_in_and_fan_out({5}) == std::pair<std::int64_t, std::int64_t>{5, 5});
}

TEST_CASE("calculate_gain gives torch.nn.init's values") {
  CHECK(init::calculate_gain(init::Nonlinearity::linear) == 1.0);
  CHECK(init::calculate_gain(init::Nonlinearity::relu) == doctest::Approx(std::sqrt(2.0)));
  CHECK(init::calculate_gain(init::Nonlinearity::tanh) == doctest::Approx(5.0 / 3.0));
  CHECK(init::calculate_gain(init::Nonlinearity::leaky_relu, std::sqrt(5.0)) ==
        doctest::Approx(std::sqrt(1.0 / 3.0)));
}

TEST_CASE("initializers draw within their bounds with the expected spread") {
  Generator gen(11);
  const double n_in = 200, n_out = 300;
  Tensor w = empty({300, 200}, kFloat64);
  SUBCASE("xavier_uniform_") {
    const double b = std::sqrt(6.0 / (n_in + n_out));
    init::xavier_uniform_(w, 1.0, &gen);
    auto s = stats(w);
    CHECK(s.max_abs <= b);
    CHECK(s.max_abs > 0.999 * b);
    CHECK(s.stddev == doctest::Approx(b / std::sqrt(3.0)).epsilon(0.01));
  }
  SUBCASE("xavier_normal_ with a gain") {
    init::xavier_normal_(w, 2.0, &gen);
    CHECK(stats(w).stddev == doctest::Approx(2.0 * std::sqrt(2.0 / (n_in + n_out))).epsilon(0.01));
    CHECK(std::abs(stats(w).mean) < 1e-3);
  }
  SUBCASE("kaiming_uniform_ with a = sqrt(5) is U(-1/sqrt(fan_in), 1/sqrt(fan_in))") {
    init::kaiming_uniform_(w, std::sqrt(5.0), init::FanMode::fan_in, init::Nonlinearity::leaky_relu,
                           &gen);
    CHECK(stats(w).max_abs <= 1 / std::sqrt(n_in));
    CHECK(stats(w).max_abs > 0.999 / std::sqrt(n_in));
  }
  SUBCASE("kaiming_normal_ for relu on fan_out") {
    init::kaiming_normal_(w, 0.0, init::FanMode::fan_out, init::Nonlinearity::relu, &gen);
    CHECK(stats(w).stddev == doctest::Approx(std::sqrt(2.0 / n_out)).epsilon(0.01));
  }
  SUBCASE("glorot_uniform_keras_ on a (E, H, key_dim) kernel") {
    Tensor k = empty({64, 8, 16}, kFloat64);
    init::glorot_uniform_keras_(k, &gen);
    const double b = std::sqrt(6.0 / (64.0 * 8 + 64.0 * 16));
    CHECK(stats(k).max_abs <= b);
    CHECK(stats(k).max_abs > 0.99 * b);
  }
  SUBCASE("constant fills, and nothing is recorded in the graph") {
    Tensor p = empty({3}, kFloat64).requires_grad_(true);
    init::constant_(p, 0.25);
    CHECK(p.to_vector<double>() == std::vector<double>{0.25, 0.25, 0.25});
    CHECK(p.is_leaf());
    init::normal_(p, 0.0, 1.0, &gen);
    CHECK(p.is_leaf());
    CHECK(p.requires_grad());
  }
}

TEST_CASE("the same generator seed gives the same initialization") {
  Generator a(5), b(5);
  Tensor x = empty({4, 4}), y = empty({4, 4});
  init::xavier_uniform_(x, 1.0, &a);
  init::xavier_uniform_(y, 1.0, &b);
  CHECK(testing::max_abs_diff(x, y) == 0.0);
  Tensor bad = zeros({2, 2}, kInt64);
  CHECK_THROWS_AS(init::uniform_(bad), DTypeError);
}
