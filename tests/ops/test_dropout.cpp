// dropout: the documented draw order (one next_float per element, dropped when < p),
// reproducibility, drop rate, exact scaling, identity in eval, gradient, and errors.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "helpers.hpp"

namespace hg = headgrad;
using hg::Shape;
using hg::Tensor;
using hg::testing::check_float32_matches_float64;
using hg::testing::check_gradcheck;
using hg::testing::param;

namespace {

// The keep pattern a fresh Generator(seed) must give, from the documented contract.
std::vector<bool> expected_kept(std::uint64_t seed, std::int64_t n, double p) {
  hg::Generator gen(seed);
  std::vector<bool> kept(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) kept[i] = !(static_cast<double>(gen.next_float()) < p);
  return kept;
}

}  // namespace

TEST_CASE("dropout drops exactly the elements whose draw is below p, in row-major order") {
  for (double p : {0.2, 0.5, 0.85}) {
    for (hg::DType dtype : {hg::kFloat32, hg::kFloat64}) {
      const Shape shape{7, 3, 5};
      Tensor x = hg::uniform(shape, 0.5, 2.0, dtype);  // never 0, so zeros mean dropped
      hg::Generator gen(123);
      Tensor y = hg::dropout(x, p, true, &gen);
      const auto kept = expected_kept(123, x.numel(), p);
      const auto yv = y.to_vector<double>();
      for (std::size_t i = 0; i < yv.size(); ++i) CHECK((yv[i] != 0.0) == kept[i]);
      // The generator advanced by exactly numel draws.
      hg::Generator ref(123);
      for (std::int64_t i = 0; i < x.numel(); ++i) ref.next_float();
      CHECK(gen.next_u64() == ref.next_u64());
    }
  }
}

TEST_CASE("dropout with the same seed gives identical masks, another seed a different one") {
  Tensor x = hg::ones({64, 32});
  hg::Generator g1(9), g2(9), g3(10);
  const auto a = hg::dropout(x, 0.4, true, &g1).to_vector<float>();
  const auto b = hg::dropout(x, 0.4, true, &g2).to_vector<float>();
  const auto c = hg::dropout(x, 0.4, true, &g3).to_vector<float>();
  CHECK(a == b);
  CHECK(a != c);
  // The default generator is used without one, and manual_seed makes it reproducible.
  hg::manual_seed(2024);
  const auto d = hg::dropout(x, 0.4, true).to_vector<float>();
  hg::manual_seed(2024);
  const auto e = hg::dropout(x, 0.4, true).to_vector<float>();
  CHECK(d == e);
}

TEST_CASE("dropout zeroes a fraction near p of 100k elements") {
  for (double p : {0.05, 0.1, 0.5, 0.9}) {
    Tensor x = hg::ones({100, 1000});
    hg::Generator gen(77);
    const auto y = hg::dropout(x, p, true, &gen).to_vector<float>();
    std::int64_t zeros = 0;
    for (float v : y) zeros += v == 0.0f;
    const double frac = static_cast<double>(zeros) / static_cast<double>(y.size());
    INFO("p = " << p << ", fraction dropped = " << frac);
    CHECK(std::abs(frac - p) < 0.01);
  }
}

TEST_CASE("dropout scales survivors by exactly 1/(1-p)") {
  for (double p : {0.1, 0.3, 0.75}) {
    Tensor x64 = param({40, 25}, 5).detach();
    hg::Generator gen(6);
    const auto y = hg::dropout(x64, p, true, &gen).to_vector<double>();
    const auto xv = x64.to_vector<double>();
    const double scale = 1.0 / (1.0 - p);
    std::int64_t survivors = 0;
    for (std::size_t i = 0; i < y.size(); ++i) {
      if (y[i] == 0.0) continue;
      ++survivors;
      CHECK(y[i] == xv[i] * scale);
    }
    CHECK(survivors > 0);

    Tensor x32 = x64.to(hg::kFloat32);
    hg::Generator gen32(6);
    const auto y32 = hg::dropout(x32, p, true, &gen32).to_vector<float>();
    const auto x32v = x32.to_vector<float>();
    const auto scale32 = static_cast<float>(scale);
    for (std::size_t i = 0; i < y32.size(); ++i)
      if (y32[i] != 0.0f) CHECK(y32[i] == x32v[i] * scale32);
  }
}

TEST_CASE("dropout in eval mode or with p = 0 returns the input unchanged and draws nothing") {
  Tensor x = param({3, 4}, 8);
  hg::Generator gen(1);
  Tensor eval = hg::dropout(x, 0.5, false, &gen);
  CHECK(eval.impl() == x.impl());
  Tensor p0 = hg::dropout(x, 0.0, true, &gen);
  CHECK(p0.impl() == x.impl());
  hg::Generator fresh(1);
  CHECK(gen.next_u64() == fresh.next_u64());
  // Gradients flow straight through.
  hg::sum(eval).backward();
  for (double g : x.grad().to_vector<double>()) CHECK(g == 1.0);
}

TEST_CASE("dropout with p = 1 returns all zeros, even for non-finite inputs, and a zero gradient") {
  Tensor x = hg::tensor({1, -2, INFINITY, NAN}, hg::kFloat64).detach().requires_grad_(true);
  hg::Generator gen(3);
  Tensor y = hg::dropout(x, 1.0, true, &gen);
  for (double v : y.to_vector<double>()) CHECK(v == 0.0);
  y.backward(hg::ones({4}, hg::kFloat64));
  for (double g : x.grad().to_vector<double>()) CHECK(g == 0.0);
}

TEST_CASE("dropout backward is the upstream gradient times the saved mask") {
  const double p = 0.35;
  Tensor x = param({6, 9}, 11);
  hg::Generator gen(12);
  Tensor y = hg::dropout(x, p, true, &gen);
  hg::Generator ugen(13);
  Tensor upstream = hg::randn({6, 9}, hg::kFloat64, &ugen);
  y.backward(upstream);
  const auto kept = expected_kept(12, x.numel(), p);
  const auto g = x.grad().to_vector<double>();
  const auto u = upstream.to_vector<double>();
  for (std::size_t i = 0; i < g.size(); ++i)
    CHECK(g[i] == (kept[i] ? u[i] * (1.0 / (1.0 - p)) : 0.0));
}

TEST_CASE("dropout gradcheck passes with a generator re-seeded on every evaluation") {
  for (const Shape& shape : {Shape{5}, Shape{3, 4}, Shape{2, 3, 1, 4}, Shape{}}) {
    for (double p : {0.2, 0.6}) {
      INFO("shape " << hg::shape_str(shape) << " p " << p);
      check_gradcheck(
          [p](const std::vector<Tensor>& in) {
            hg::Generator gen(42);
            return hg::dropout(in[0], p, true, &gen);
          },
          {param(shape, 14)});
    }
  }
}

TEST_CASE("dropout float32 agrees with float64 (the mask does not depend on the dtype)") {
  check_float32_matches_float64(
      [](const std::vector<Tensor>& in) {
        hg::Generator gen(15);
        return hg::dropout(in[0], 0.3, true, &gen);
      },
      {param({17, 13}, 16)});
}

TEST_CASE("dropout rejects p outside 0..1 and non-floating inputs, naming the op") {
  Tensor x = param({2, 3}, 17);
  for (double p : {-0.1, 1.5, std::nan("")}) {
    CHECK_THROWS_AS(hg::dropout(x, p, true), hg::ValueError);
    CHECK_THROWS_AS(hg::dropout(x, p, false), hg::ValueError);
    const std::string msg = HG_ERROR_MESSAGE(hg::dropout(x, p, true));
    CHECK(msg.find("dropout") != std::string::npos);
    CHECK(msg.find("[0, 1]") != std::string::npos);
    CHECK(msg.find("(2,3)") != std::string::npos);
  }
  Tensor ints = hg::zeros({2, 3}, hg::kInt64);
  CHECK_THROWS_AS(hg::dropout(ints, 0.5, true), hg::DTypeError);
  const std::string msg = HG_ERROR_MESSAGE(hg::dropout(ints, 0.5, true));
  CHECK(msg.find("dropout") != std::string::npos);
  CHECK(msg.find("int64") != std::string::npos);
}
