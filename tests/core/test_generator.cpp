// Random tensors: the ranges and moments of rand/randn/uniform/normal/randint, determinism
// under a seed, independence of explicit generators from the default one and from each
// other, and manual_seed resetting the stream (including the cached Box-Muller value).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <set>
#include <vector>

#include "helpers.hpp"

namespace hg = headgrad;
using hg::Generator;
using hg::Shape;
using hg::Tensor;

namespace {

struct Moments {
  double mean = 0, stddev = 0, min = INFINITY, max = -INFINITY;
};

Moments moments_of(const Tensor& t) {
  auto v = t.to_vector<double>();
  Moments m;
  for (double x : v) {
    m.mean += x;
    m.min = std::min(m.min, x);
    m.max = std::max(m.max, x);
  }
  m.mean /= static_cast<double>(v.size());
  for (double x : v) m.stddev += (x - m.mean) * (x - m.mean);
  m.stddev = std::sqrt(m.stddev / static_cast<double>(v.size()));
  return m;
}

// How many 64-bit draws a generator seeded with `seed` makes before producing a double in
// [threshold, 1): found with an independent std::mt19937_64 (the documented engine).
std::uint64_t draws_before_uniform_at_least(std::uint64_t seed, double threshold) {
  std::mt19937_64 engine(seed);
  for (std::uint64_t n = 0;; ++n) {
    const double u = static_cast<double>(engine() >> 11) * 0x1.0p-53;
    if (u >= threshold) return n;
  }
}

// A generator positioned `skip` draws after `seed`.
Generator generator_after(std::uint64_t seed, std::uint64_t skip) {
  std::mt19937_64 engine(seed);
  engine.discard(skip);
  Generator gen(seed);
  gen.set_engine(engine);
  return gen;
}

constexpr std::int64_t kDraws = 100000;

}  // namespace

TEST_CASE("rand draws from the half-open unit interval with mean 1/2 and variance 1/12") {
  for (hg::DType dtype : {hg::kFloat32, hg::kFloat64}) {
    CAPTURE(hg::to_string(dtype));
    Generator gen(11);
    Tensor r = hg::rand({kDraws}, dtype, &gen);
    CHECK(r.dtype() == dtype);
    Moments m = moments_of(r);
    CHECK(m.min >= 0.0);
    CHECK(m.max < 1.0);
    CHECK(m.mean == doctest::Approx(0.5).epsilon(0.02));
    CHECK(m.stddev == doctest::Approx(std::sqrt(1.0 / 12.0)).epsilon(0.02));
  }
}

TEST_CASE("float32 rand never rounds up to 1.0, even for the largest doubles below 1") {
  // A double in [1 - 2^-25, 1) rounds to 1.0f; position a generator right before one.
  const double threshold = 1.0 - 0x1.0p-25;
  const std::uint64_t seed = 102;  // its first such double is draw 275721: cheap to reach
  const std::uint64_t skip = draws_before_uniform_at_least(seed, threshold);
  {
    Generator gen = generator_after(seed, skip);
    CHECK(gen.next_double() >= threshold);  // the position is right
  }
  Generator for_rand = generator_after(seed, skip);
  CHECK(hg::rand({1}, hg::kFloat32, &for_rand).item() < 1.0);
  Generator for_uniform = generator_after(seed, skip);
  CHECK(hg::uniform({1}, 0.0, 1.0, hg::kFloat32, &for_uniform).item() < 1.0);
  Generator for_rand64 = generator_after(seed, skip);
  CHECK(hg::rand({1}, hg::kFloat64, &for_rand64).item() < 1.0);
}

TEST_CASE("randn over 100k draws has mean 0 and standard deviation 1") {
  for (hg::DType dtype : {hg::kFloat32, hg::kFloat64}) {
    CAPTURE(hg::to_string(dtype));
    Generator gen(12);
    Moments m = moments_of(hg::randn({kDraws}, dtype, &gen));
    CHECK(std::abs(m.mean) < 0.02);  // 6 sigma of the sample mean is 0.019
    CHECK(m.stddev == doctest::Approx(1.0).epsilon(0.02));
    CHECK(m.max > 3.0);  // tails exist: P(max of 100k normals < 3) is ~1e-59
    CHECK(m.min < -3.0);
    CHECK(std::isfinite(m.max));
    CHECK(std::isfinite(m.min));
  }
}

TEST_CASE(
    "uniform stays inside the half-open range low..high and normal has the requested moments") {
  Generator gen(13);
  Moments u = moments_of(hg::uniform({kDraws}, -3.0, 5.0, hg::kFloat64, &gen));
  CHECK(u.min >= -3.0);
  CHECK(u.max < 5.0);
  CHECK(u.min < -2.99);  // covers the range
  CHECK(u.max > 4.99);
  CHECK(u.mean == doctest::Approx(1.0).epsilon(0.03));

  Moments n = moments_of(hg::normal({kDraws}, 10.0, 0.5, hg::kFloat64, &gen));
  CHECK(n.mean == doctest::Approx(10.0).epsilon(0.002));
  CHECK(n.stddev == doctest::Approx(0.5).epsilon(0.02));

  CHECK_THROWS_AS(hg::uniform({2}, 1.0, 0.0), hg::ValueError);
  CHECK_THROWS_AS(hg::normal({2}, 0.0, -1.0), hg::ValueError);
  CHECK_THROWS_AS(hg::rand({2}, hg::kInt64), hg::DTypeError);
}

TEST_CASE("randint draws every integer from low to high-1 and nothing outside it") {
  Generator gen(14);
  Tensor r = hg::randint(-2, 3, {10000}, {}, &gen);
  CHECK(r.dtype() == hg::kInt64);
  auto v = r.to_vector<std::int64_t>();
  std::set<std::int64_t> seen(v.begin(), v.end());
  CHECK(seen == std::set<std::int64_t>{-2, -1, 0, 1, 2});
  // Roughly uniform: each of 5 values ~2000 times.
  for (std::int64_t value : seen) {
    const auto count = std::count(v.begin(), v.end(), value);
    CHECK(count > 1700);
    CHECK(count < 2300);
  }
  Tensor one = hg::randint(7, 8, {5}, {}, &gen);
  CHECK(one.to_vector<std::int64_t>() == std::vector<std::int64_t>(5, 7));
  CHECK_THROWS_AS(hg::randint(3, 3, {2}), hg::ValueError);
  Tensor as_float = hg::randint(0, 4, {100}, hg::kFloat64, &gen);
  CHECK(as_float.dtype() == hg::kFloat64);
  for (double x : as_float.to_vector<double>()) CHECK(x == std::floor(x));
}

TEST_CASE("the same seed gives identical tensors and a different seed different ones") {
  hg::manual_seed(42);
  Tensor a = hg::randn({64});
  Tensor a_rand = hg::rand({8, 8});
  Tensor a_int = hg::randint(0, 1000, {16});
  hg::manual_seed(42);
  Tensor b = hg::randn({64});
  Tensor b_rand = hg::rand({8, 8});
  Tensor b_int = hg::randint(0, 1000, {16});
  CHECK(a.to_vector<float>() == b.to_vector<float>());
  CHECK(a_rand.to_vector<float>() == b_rand.to_vector<float>());
  CHECK(a_int.to_vector<std::int64_t>() == b_int.to_vector<std::int64_t>());
  hg::manual_seed(43);
  CHECK(hg::randn({64}).to_vector<float>() != a.to_vector<float>());
  // Successive draws from one stream differ.
  CHECK(hg::randn({64}).to_vector<float>() != hg::randn({64}).to_vector<float>());
}

TEST_CASE("manual_seed resets the stream, including a cached second normal value") {
  hg::manual_seed(5);
  Tensor first = hg::randn({3}, hg::kFloat64);  // odd count: one Box-Muller value is cached
  hg::manual_seed(5);
  Tensor again = hg::randn({3}, hg::kFloat64);
  CHECK(first.to_vector<double>() == again.to_vector<double>());

  Generator gen(9);
  Tensor g1 = hg::randn({5}, hg::kFloat64, &gen);
  gen.manual_seed(9);
  CHECK(gen.initial_seed() == 9);
  CHECK(hg::randn({5}, hg::kFloat64, &gen).to_vector<double>() == g1.to_vector<double>());
}

TEST_CASE("explicit generators are independent of the default generator and of each other") {
  hg::manual_seed(7);
  Tensor expected = hg::rand({16});

  hg::manual_seed(7);
  Generator g1(100);
  Generator g2(100);
  Tensor from_g1 = hg::rand({16}, {}, &g1);
  Tensor more_g1 = hg::randn({33}, {}, &g1);  // advances g1 only
  Tensor from_default = hg::rand({16});
  CHECK(from_default.to_vector<float>() == expected.to_vector<float>());  // default unaffected
  Tensor from_g2 = hg::rand({16}, {}, &g2);
  CHECK(from_g2.to_vector<float>() == from_g1.to_vector<float>());   // g2 unaffected by g1
  CHECK(from_g1.to_vector<float>() != expected.to_vector<float>());  // a different seed

  // Drawing from the default generator does not advance an explicit one.
  Generator g3(100);
  hg::rand({1000});
  CHECK(hg::rand({16}, {}, &g3).to_vector<float>() == from_g1.to_vector<float>());
}

TEST_CASE("a generator's engine state can be saved and restored to replay draws") {
  Generator gen(21);
  hg::rand({10}, {}, &gen);
  const auto saved = gen.engine();
  Tensor next = hg::rand({10}, hg::kFloat64, &gen);
  Generator other(0);
  other.set_engine(saved);
  CHECK(hg::rand({10}, hg::kFloat64, &other).to_vector<double>() == next.to_vector<double>());
}
