// cross_entropy and mse_loss: values against naive references and hand-derived PyTorch
// values, gradcheck in every layout and reduction (with ignore_index and label smoothing),
// the mean over no targets, float32 agreement and error messages.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "helpers.hpp"

namespace hg = headgrad;
using hg::Reduction;
using hg::Shape;
using hg::Tensor;
using hg::unravel_index;
using hg::testing::check_float32_matches_float64;
using hg::testing::check_gradcheck;
using hg::testing::param;

namespace {

const std::vector<Reduction> kReductions = {Reduction::none, Reduction::mean, Reduction::sum};

std::string name_of(Reduction r) {
  return r == Reduction::none ? "none" : r == Reduction::mean ? "mean" : "sum";
}

// Logit layouts: (C) with a 0-d target, (N, C), (N, C, d1), (N, C, d1, d2), size-1 dims.
const std::vector<Shape> kLogitShapes = {{5}, {4, 3}, {1, 6}, {3, 4, 5}, {2, 3, 2, 3}, {2, 1, 3}};

Shape target_shape_of(const Shape& logits_shape) {
  Shape s = logits_shape;
  s.erase(s.begin() + (logits_shape.size() == 1 ? 0 : 1));
  return s;
}

// Random targets in [0, C); with `ignore_every` > 0 every ignore_every-th one, starting at
// flat position ignore_every-1, is set to `ignore_index` (so position 0 is always kept).
Tensor random_targets(const Shape& logits_shape, std::uint64_t seed, std::int64_t ignore_every = 0,
                      std::int64_t ignore_index = -100) {
  hg::Generator gen(seed);
  const std::int64_t classes = logits_shape.size() == 1 ? logits_shape[0] : logits_shape[1];
  Tensor t = hg::randint(0, classes, target_shape_of(logits_shape), {}, &gen);
  if (ignore_every > 0) {
    std::int64_t* p = t.data<std::int64_t>();
    for (std::int64_t i = ignore_every - 1; i < t.numel(); i += ignore_every) p[i] = ignore_index;
  }
  return t;
}

struct NaiveLoss {
  std::vector<double> per_target;  // 0 where ignored
  double total = 0;
  std::int64_t kept = 0;
};

// The PyTorch definition written out with multi-indices and a plain log(sum(exp)):
// loss = (1-eps) * -log p_t + eps * mean_c(-log p_c), p = softmax over the class dim.
NaiveLoss naive_cross_entropy(const Tensor& logits, const Tensor& targets,
                              std::int64_t ignore_index, double eps) {
  const Shape& ls = logits.shape();
  const std::size_t class_dim = ls.size() == 1 ? 0 : 1;
  const std::int64_t classes = ls[class_dim];
  NaiveLoss r;
  for (std::int64_t i = 0; i < targets.numel(); ++i) {
    const Shape tindex = unravel_index(i, targets.shape());
    const auto t = static_cast<std::int64_t>(targets.at(tindex));
    if (t == ignore_index) {
      r.per_target.push_back(0.0);
      continue;
    }
    auto logit = [&](std::int64_t c) {
      Shape li = tindex;
      li.insert(li.begin() + static_cast<std::ptrdiff_t>(class_dim), c);
      return logits.at(li);
    };
    double sum_exp = 0;
    for (std::int64_t c = 0; c < classes; ++c) sum_exp += std::exp(logit(c));
    const double lse = std::log(sum_exp);
    double mean_neg_log_p = 0;
    for (std::int64_t c = 0; c < classes; ++c) mean_neg_log_p += (lse - logit(c)) / classes;
    const double loss = (1 - eps) * (lse - logit(t)) + eps * mean_neg_log_p;
    r.per_target.push_back(loss);
    r.total += loss;
    ++r.kept;
  }
  return r;
}

void check_against_naive(const Tensor& logits, const Tensor& targets, std::int64_t ignore_index,
                         double eps) {
  const NaiveLoss want = naive_cross_entropy(logits, targets, ignore_index, eps);
  Tensor none = hg::cross_entropy(logits, targets, Reduction::none, ignore_index, eps);
  REQUIRE(none.shape() == targets.shape());
  const auto got = none.to_vector<double>();
  for (std::size_t i = 0; i < got.size(); ++i)
    CHECK(got[i] == doctest::Approx(want.per_target[i]).epsilon(1e-12));
  Tensor sum = hg::cross_entropy(logits, targets, Reduction::sum, ignore_index, eps);
  Tensor mean = hg::cross_entropy(logits, targets, Reduction::mean, ignore_index, eps);
  CHECK(sum.shape() == Shape{});
  CHECK(mean.shape() == Shape{});
  CHECK(sum.item() == doctest::Approx(want.total).epsilon(1e-12));
  CHECK(mean.item() == doctest::Approx(want.total / static_cast<double>(want.kept)).epsilon(1e-12));
}

}  // namespace

// ---------------------------------------------------------------------------------------
// cross_entropy
// ---------------------------------------------------------------------------------------

TEST_CASE("cross_entropy matches a naive log-sum-exp in every layout and reduction") {
  for (const Shape& shape : kLogitShapes) {
    INFO("logits " << hg::shape_str(shape));
    Tensor logits = param(shape, 3, 2.0).detach();
    check_against_naive(logits, random_targets(shape, 4), -100, 0.0);
    check_against_naive(logits, random_targets(shape, 5, 3, -100), -100, 0.0);
    check_against_naive(logits, random_targets(shape, 6, 2, 1), 1, 0.0);  // a valid class ignored
    check_against_naive(logits, random_targets(shape, 7), -100, 0.3);
    check_against_naive(logits, random_targets(shape, 8, 2, -100), -100, 0.15);
  }
}

TEST_CASE("cross_entropy gives the hand-derived PyTorch values and gradient on a small batch") {
  // logits [[1,2,3],[1,1,1]], targets [2,0]. Row 0: lse = 3 + log(1 + e^-1 + e^-2), so
  // -log p_2 = log(1 + e^-1 + e^-2) = 0.40760596; row 1: uniform, -log p_0 = log 3.
  // torch.nn.functional.cross_entropy gives mean 0.75310913, sum 1.50621826.
  Tensor logits =
      hg::tensor({1, 2, 3, 1, 1, 1}, hg::kFloat64).reshape({2, 3}).detach().requires_grad_(true);
  Tensor targets = hg::from_vector<std::int64_t>({2, 0}, {2});
  const double row0 = std::log(1 + std::exp(-1.0) + std::exp(-2.0));
  const double row1 = std::log(3.0);
  CHECK(row0 == doctest::Approx(0.40760596444));
  Tensor none = hg::cross_entropy(logits, targets, Reduction::none);
  CHECK(none.at({0}) == doctest::Approx(row0).epsilon(1e-14));
  CHECK(none.at({1}) == doctest::Approx(row1).epsilon(1e-14));
  CHECK(hg::cross_entropy(logits, targets, Reduction::sum).item() ==
        doctest::Approx(1.50621826).epsilon(1e-8));
  Tensor mean = hg::cross_entropy(logits, targets);
  CHECK(mean.item() == doctest::Approx(0.75310913).epsilon(1e-8));

  // d mean / d logits = (softmax - onehot) / 2.
  mean.backward();
  const double z = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  const double want[2][3] = {
      {std::exp(1.0) / z / 2, std::exp(2.0) / z / 2, (std::exp(3.0) / z - 1) / 2},
      {(1.0 / 3 - 1) / 2, 1.0 / 3 / 2, 1.0 / 3 / 2}};
  for (std::int64_t i = 0; i < 2; ++i)
    for (std::int64_t c = 0; c < 3; ++c)
      CHECK(logits.grad().at({i, c}) == doctest::Approx(want[i][c]).epsilon(1e-12));

  // Label smoothing 0.1: row 0 = 0.9 * 0.40760596 + 0.1 * (lse - mean(x)) = row0 + 0.1;
  // row 1 stays log 3. PyTorch: mean 0.80310913.
  Tensor smoothed = hg::cross_entropy(logits, targets, Reduction::mean, -100, 0.1);
  CHECK(smoothed.item() == doctest::Approx((row0 + 0.1 + row1) / 2).epsilon(1e-12));
  CHECK(smoothed.item() == doctest::Approx(0.80310913).epsilon(1e-8));

  // ignore_index = 0 drops row 1: mean = row 0 alone.
  CHECK(hg::cross_entropy(logits, targets, Reduction::mean, 0).item() ==
        doctest::Approx(row0).epsilon(1e-12));
}

TEST_CASE(
    "cross_entropy of a (C) vector with a 0-d target returns a 0-d loss for every reduction") {
  Tensor logits = hg::tensor({0.5, -1.0, 2.0}, hg::kFloat64);
  Tensor target = hg::from_vector<std::int64_t>({1}, {});
  const double want = std::log(std::exp(0.5) + std::exp(-1.0) + std::exp(2.0)) + 1.0;
  for (Reduction r : kReductions) {
    Tensor loss = hg::cross_entropy(logits, target, r);
    CHECK(loss.shape() == Shape{});
    CHECK(loss.item() == doctest::Approx(want).epsilon(1e-14));
  }
}

TEST_CASE("cross_entropy stays finite for huge logits (log-sum-exp is max-shifted)") {
  Tensor logits = hg::tensor({1000, 0, -1000, 1000}, hg::kFloat32).reshape({2, 2});
  Tensor targets = hg::from_vector<std::int64_t>({1, 0}, {2});
  Tensor loss = hg::cross_entropy(logits, targets, Reduction::none);
  // row 0: -log p_1 = 1000 + log(1 + e^-1000) = 1000; row 1: -log p_0 = 2000.
  CHECK(loss.at({0}) == doctest::Approx(1000.0));
  CHECK(loss.at({1}) == doctest::Approx(2000.0));
}

TEST_CASE("cross_entropy gradcheck passes in every layout and reduction") {
  for (const Shape& shape : kLogitShapes) {
    for (Reduction r : kReductions) {
      INFO("logits " << hg::shape_str(shape) << " reduction " << name_of(r));
      Tensor targets = random_targets(shape, 21);
      check_gradcheck(
          [r](const std::vector<Tensor>& in) { return hg::cross_entropy(in[0], in[1], r); },
          {param(shape, 22), targets});
    }
  }
}

TEST_CASE("cross_entropy gradcheck passes with ignore_index and with label smoothing") {
  for (const Shape& shape : kLogitShapes) {
    for (Reduction r : kReductions) {
      INFO("logits " << hg::shape_str(shape) << " reduction " << name_of(r));
      Tensor ignored = random_targets(shape, 31, 2, 7);
      check_gradcheck(
          [r](const std::vector<Tensor>& in) { return hg::cross_entropy(in[0], in[1], r, 7); },
          {param(shape, 32), ignored});
      Tensor targets = random_targets(shape, 33);
      check_gradcheck(
          [r](const std::vector<Tensor>& in) {
            return hg::cross_entropy(in[0], in[1], r, -100, 0.2);
          },
          {param(shape, 34), targets});
      Tensor both = random_targets(shape, 35, 3, -100);
      check_gradcheck(
          [r](const std::vector<Tensor>& in) {
            return hg::cross_entropy(in[0], in[1], r, -100, 0.6);
          },
          {param(shape, 36), both});
    }
  }
}

TEST_CASE("cross_entropy gives ignored targets zero loss and an exactly zero gradient") {
  for (const Shape& shape : {Shape{4, 3}, Shape{2, 3, 4}}) {
    Tensor logits = param(shape, 41);
    Tensor targets = random_targets(shape, 42, 2, -100);
    Tensor loss = hg::cross_entropy(logits, targets, Reduction::none, -100, 0.25);
    hg::Generator gen(43);
    loss.backward(hg::randn(loss.shape(), hg::kFloat64, &gen));
    const Tensor grad = logits.grad();
    for (std::int64_t i = 0; i < targets.numel(); ++i) {
      const Shape ti = unravel_index(i, targets.shape());
      if (static_cast<std::int64_t>(targets.at(ti)) != -100) continue;
      CHECK(loss.at(ti) == 0.0);
      for (std::int64_t c = 0; c < shape[1]; ++c) {
        Shape li = ti;
        li.insert(li.begin() + 1, c);
        CHECK(grad.at(li) == 0.0);
      }
    }
  }
}

TEST_CASE("cross_entropy mean over zero kept targets is NaN with a zero gradient, sum is 0") {
  Tensor logits = param({3, 4}, 51);
  Tensor targets = hg::from_vector<std::int64_t>({-100, -100, -100}, {3});
  Tensor mean = hg::cross_entropy(logits, targets);
  CHECK(std::isnan(mean.item()));
  CHECK(hg::cross_entropy(logits, targets, Reduction::sum).item() == 0.0);
  mean.backward();
  for (double g : logits.grad().to_vector<double>()) CHECK(g == 0.0);
}

TEST_CASE("cross_entropy float32 agrees with float64 in every layout, with ignore and smoothing") {
  for (const Shape& shape : kLogitShapes) {
    for (Reduction r : kReductions) {
      INFO("logits " << hg::shape_str(shape) << " reduction " << name_of(r));
      Tensor targets = random_targets(shape, 61, 3, -100);
      check_float32_matches_float64(
          [r](const std::vector<Tensor>& in) {
            return hg::cross_entropy(in[0], in[1], r, -100, 0.1);
          },
          {param(shape, 62, 3.0), targets});
    }
  }
  // A wide row (C = 1000) exercises the vectorized body of the kernels, not just the tails.
  check_float32_matches_float64(
      [](const std::vector<Tensor>& in) { return hg::cross_entropy(in[0], in[1]); },
      {param({8, 1000}, 63, 3.0), random_targets({8, 1000}, 64)});
  check_float32_matches_float64(
      [](const std::vector<Tensor>& in) { return hg::cross_entropy(in[0], in[1]); },
      {param({2, 5, 37}, 65, 3.0), random_targets({2, 5, 37}, 66)});
}

TEST_CASE("cross_entropy rejects targets that are not int64, naming the op and dtype") {
  Tensor logits = param({2, 3}, 71);
  Tensor float_targets = hg::tensor({0, 1}, hg::kFloat64);
  CHECK_THROWS_AS(hg::cross_entropy(logits, float_targets), hg::DTypeError);
  const std::string msg = HG_ERROR_MESSAGE(hg::cross_entropy(logits, float_targets));
  CHECK(msg.find("cross_entropy") != std::string::npos);
  CHECK(msg.find("int64") != std::string::npos);
  CHECK(msg.find("float64") != std::string::npos);
  Tensor int_logits = hg::from_vector<std::int64_t>({1, 2, 3, 4, 5, 6}, {2, 3});
  CHECK_THROWS_AS(hg::cross_entropy(int_logits, hg::from_vector<std::int64_t>({0, 1}, {2})),
                  hg::DTypeError);
}

TEST_CASE("cross_entropy rejects out-of-range targets, naming the value and the class count") {
  Tensor logits = param({3, 5}, 72);
  for (std::int64_t bad : {5, -1, 99}) {
    Tensor targets = hg::from_vector<std::int64_t>({0, bad, 2}, {3});
    CHECK_THROWS_AS(hg::cross_entropy(logits, targets), hg::IndexError);
    const std::string msg = HG_ERROR_MESSAGE(hg::cross_entropy(logits, targets));
    CHECK(msg.find("cross_entropy") != std::string::npos);
    CHECK(msg.find("target " + std::to_string(bad)) != std::string::npos);
    CHECK(msg.find("5 classes") != std::string::npos);
  }
  // -1 is fine when it is the ignore_index.
  CHECK_NOTHROW(hg::cross_entropy(logits, hg::from_vector<std::int64_t>({0, -1, 2}, {3}),
                                  Reduction::mean, -1));
}

TEST_CASE("cross_entropy rejects mismatched logits and targets shapes, naming both") {
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{4, 5}, {3}}, {{4, 5}, {4, 1}}, {{2, 3, 4}, {2, 3}}, {{5}, {1}}, {{2, 3, 4}, {3, 4}}};
  for (const auto& [ls, ts] : cases) {
    Tensor logits = param(ls, 73);
    Tensor targets = hg::zeros(ts, hg::kInt64);
    CHECK_THROWS_AS(hg::cross_entropy(logits, targets), hg::ShapeError);
    const std::string msg = HG_ERROR_MESSAGE(hg::cross_entropy(logits, targets));
    INFO(msg);
    CHECK(msg.find("cross_entropy") != std::string::npos);
    CHECK(msg.find(hg::shape_str(ls)) != std::string::npos);
    CHECK(msg.find(hg::shape_str(ts)) != std::string::npos);
  }
  const std::string msg0 =
      HG_ERROR_MESSAGE(hg::cross_entropy(hg::scalar_tensor(1.0), hg::zeros({}, hg::kInt64)));
  CHECK(msg0.find("cross_entropy") != std::string::npos);
}

TEST_CASE("cross_entropy rejects label_smoothing below 0 or from 1 on") {
  Tensor logits = param({2, 3}, 74);
  Tensor targets = hg::from_vector<std::int64_t>({0, 1}, {2});
  for (double eps : {-0.1, 1.0, 2.0, std::nan("")}) {
    CHECK_THROWS_AS(hg::cross_entropy(logits, targets, Reduction::mean, -100, eps), hg::ValueError);
    const std::string msg =
        HG_ERROR_MESSAGE(hg::cross_entropy(logits, targets, Reduction::mean, -100, eps));
    CHECK(msg.find("cross_entropy: label_smoothing") != std::string::npos);
  }
}

// ---------------------------------------------------------------------------------------
// mse_loss
// ---------------------------------------------------------------------------------------

namespace {

// (input, target) shape pairs: equal, broadcast target, broadcast both ways, 0-d.
const std::vector<std::pair<Shape, Shape>> kMsePairs = {
    {{3, 4}, {3, 4}}, {{3, 4}, {4}}, {{2, 3, 4}, {3, 1}}, {{3, 1}, {1, 4}},
    {{}, {}},         {{5}, {}},     {{2, 1, 3}, {2, 3}}};

}  // namespace

TEST_CASE("mse_loss matches a naive squared difference over the broadcast shape") {
  for (const auto& [as, bs] : kMsePairs) {
    INFO("input " << hg::shape_str(as) << " target " << hg::shape_str(bs));
    Tensor a = param(as, 81).detach();
    Tensor b = param(bs, 82).detach();
    const Shape out = hg::broadcast_shapes(as, bs, "test");
    Tensor none = hg::mse_loss(a, b, Reduction::none);
    REQUIRE(none.shape() == out);
    double total = 0;
    for (std::int64_t i = 0; i < hg::numel_of(out); ++i) {
      const Shape oi = unravel_index(i, out);
      auto pick = [&](const Tensor& t) {  // the element of t that broadcasts to oi
        Shape ti(t.shape().size());
        const std::size_t lead = out.size() - ti.size();
        for (std::size_t d = 0; d < ti.size(); ++d) ti[d] = t.shape()[d] == 1 ? 0 : oi[lead + d];
        return t.at(ti);
      };
      const double d = pick(a) - pick(b);
      CHECK(none.at(oi) == doctest::Approx(d * d).epsilon(1e-14));
      total += d * d;
    }
    CHECK(hg::mse_loss(a, b, Reduction::sum).item() == doctest::Approx(total).epsilon(1e-12));
    CHECK(hg::mse_loss(a, b).item() == doctest::Approx(total / hg::numel_of(out)).epsilon(1e-12));
  }
  // Hand value: input [1, 2, 3], target [0, 2, 5]: mean (1 + 0 + 4) / 3 = 5/3.
  CHECK(hg::mse_loss(hg::tensor({1, 2, 3}), hg::tensor({0, 2, 5})).item() ==
        doctest::Approx(5.0 / 3));
}

TEST_CASE("mse_loss gradcheck passes for input and target, broadcast included") {
  for (const auto& [as, bs] : kMsePairs) {
    for (Reduction r : kReductions) {
      INFO("input " << hg::shape_str(as) << " target " << hg::shape_str(bs) << " reduction "
                    << name_of(r));
      check_gradcheck([r](const std::vector<Tensor>& in) { return hg::mse_loss(in[0], in[1], r); },
                      {param(as, 91), param(bs, 92)});
      // Target fixed (no grad): only the input is checked.
      check_gradcheck([r](const std::vector<Tensor>& in) { return hg::mse_loss(in[0], in[1], r); },
                      {param(as, 93), param(bs, 94).detach()});
    }
  }
}

TEST_CASE("mse_loss gradient is 2 (input - target) / n with the target's summed over broadcast") {
  Tensor a = hg::tensor({1, 2, 3, 4}, hg::kFloat64).reshape({2, 2}).detach().requires_grad_(true);
  Tensor b = hg::tensor({1, 5}, hg::kFloat64).detach().requires_grad_(true);
  hg::mse_loss(a, b).backward();
  // diff = [[0, -3], [2, -1]]; d/da = 2 diff / 4; d/db = -(column sums of 2 diff / 4).
  const std::vector<double> want_a = {0, -1.5, 1, -0.5};
  CHECK(a.grad().to_vector<double>() == want_a);
  const std::vector<double> want_b = {-1, 2};
  CHECK(b.grad().to_vector<double>() == want_b);
}

TEST_CASE("mse_loss float32 agrees with float64") {
  for (const auto& [as, bs] : kMsePairs)
    for (Reduction r : kReductions)
      check_float32_matches_float64(
          [r](const std::vector<Tensor>& in) { return hg::mse_loss(in[0], in[1], r); },
          {param(as, 95), param(bs, 96)});
  check_float32_matches_float64(
      [](const std::vector<Tensor>& in) { return hg::mse_loss(in[0], in[1]); },
      {param({64, 33}, 97), param({33}, 98)});
}

TEST_CASE("mse_loss rejects non-broadcastable shapes and mixed dtypes, naming both") {
  Tensor a = param({3, 4}, 99);
  Tensor b = param({3}, 100);
  CHECK_THROWS_AS(hg::mse_loss(a, b), hg::ShapeError);
  const std::string msg = HG_ERROR_MESSAGE(hg::mse_loss(a, b));
  CHECK(msg.find("mse_loss") != std::string::npos);
  CHECK(msg.find("(3,4)") != std::string::npos);
  CHECK(msg.find("(3)") != std::string::npos);
  Tensor f32 = hg::zeros({3, 4});
  CHECK_THROWS_AS(hg::mse_loss(a, f32), hg::DTypeError);
  const std::string dmsg = HG_ERROR_MESSAGE(hg::mse_loss(a, f32));
  CHECK(dmsg.find("mse_loss") != std::string::npos);
  CHECK(dmsg.find("float32") != std::string::npos);
}
