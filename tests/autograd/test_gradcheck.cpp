// gradcheck itself: it passes correct gradients (composite functions, custom ops, several
// outputs, full Jacobian mode), it FAILS a custom op whose backward is wrong and reports
// where, it rejects float32 inputs that require grad, passes non-differentiable inputs
// (constants, int64 indices) through unchanged, and leaves the caller's tensors alone.
#include <cmath>
#include <string>
#include <vector>

#include "helpers.hpp"

namespace hg = headgrad;
using hg::GradcheckOptions;
using hg::GradcheckResult;
using hg::Shape;
using hg::Tensor;
using hg::testing::check_gradcheck;
using hg::testing::param;
using hg::testing::positive_param;

namespace {

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// square(x) = x^2 as a custom op whose backward is scaled by `gradient_scale`:
// dx = gradient_scale * 2x * g (1 is correct, 2 is the deliberate bug).
Tensor custom_square(const Tensor& x, double gradient_scale) {
  Tensor out;
  {
    hg::NoGradGuard no_grad;
    out = hg::mul(x, x);
  }
  hg::autograd::record(
      "custom_square", {x}, {&out}, {x},
      [gradient_scale](const std::vector<Tensor>& g, const hg::autograd::BackwardContext& ctx) {
        return std::vector<Tensor>{hg::mul(hg::mul(ctx.saved(0), 2.0 * gradient_scale), g[0])};
      });
  return out;
}

}  // namespace

TEST_CASE("gradcheck passes a correct composite function over several shapes") {
  for (const Shape& shape : {Shape{}, Shape{1}, Shape{3}, Shape{2, 3}, Shape{2, 1, 4}}) {
    CAPTURE(hg::shape_str(shape));
    Tensor a = param(shape, 1);
    Tensor b = positive_param(shape, 2);
    // f(a, b) = exp(a*b) / b + log(b) * a
    check_gradcheck(
        [](const std::vector<Tensor>& in) {
          return hg::add(hg::div(hg::exp(hg::mul(in[0], in[1])), in[1]),
                         hg::mul(hg::log(in[1]), in[0]));
        },
        {a, b});
  }
}

TEST_CASE("gradcheck passes a correct custom op and fails the same op with a doubled backward") {
  Tensor x = param({2, 3}, 3);
  auto correct = [](const std::vector<Tensor>& in) { return custom_square(in[0], 1.0); };
  auto doubled = [](const std::vector<Tensor>& in) { return custom_square(in[0], 2.0); };
  check_gradcheck(correct, {x});

  GradcheckResult bad = hg::gradcheck(doubled, {x});
  INFO(bad.report());
  CHECK_FALSE(bad.passed);
  CHECK(bad.worst_input == 0);
  CHECK(bad.worst_index >= 0);
  CHECK(bad.worst_index < 6);
  CHECK(bad.worst_multi_index.size() == 2);
  CHECK(bad.elements_checked == 6);
  // The analytic value is twice the numerical one at the reported element.
  CHECK(bad.analytic == doctest::Approx(2 * bad.numerical).epsilon(1e-6));
  CHECK(bad.max_ratio > 1.0);
  const std::string report = bad.report();
  CHECK(contains(report, "FAILED"));
  CHECK(contains(report, "input 0"));
  CHECK(contains(report, hg::shape_str(bad.worst_multi_index)));
}

TEST_CASE("gradcheck names the wrong input when only the second input's gradient is wrong") {
  Tensor c = param({3}, 4);
  Tensor x = param({2, 2}, 5);
  auto fn = [](const std::vector<Tensor>& in) {
    return hg::add(hg::mul(in[0], 3.0).sum(), custom_square(in[1], 2.0).sum());
  };
  GradcheckResult r = hg::gradcheck(fn, {c, x});
  INFO(r.report());
  CHECK_FALSE(r.passed);
  CHECK(r.worst_input == 1);
  CHECK(contains(r.report(), "input 1"));
  CHECK(r.elements_checked == 3 + 4);
}

TEST_CASE("gradcheck rejects float32 inputs that require grad") {
  Tensor x32 = hg::ones({3}).requires_grad_(true);
  auto fn = [](const std::vector<Tensor>& in) { return hg::mul(in[0], in[0]); };
  CHECK_THROWS_AS(hg::gradcheck(fn, {x32}), hg::DTypeError);
  const std::string msg = HG_ERROR_MESSAGE(hg::gradcheck(fn, {x32}));
  CHECK(contains(msg, "gradcheck"));
  CHECK(contains(msg, "float32"));
  // Nothing to check at all is a ValueError.
  CHECK_THROWS_AS(hg::gradcheck(fn, {hg::ones({3}, hg::kFloat64)}), hg::ValueError);
}

TEST_CASE("gradcheck passes inputs that do not require grad through unchanged") {
  Tensor x = param({2, 3}, 6);
  Tensor constant = hg::tensor({1.0, -2.0, 0.5}, hg::kFloat64);  // broadcasts over rows
  Tensor float32_constant = hg::tensor({3.0, 3.0, 3.0});  // float32 is fine if not differentiated
  std::vector<Tensor> seen_constants;
  auto fn = [&](const std::vector<Tensor>& in) {
    seen_constants.push_back(in[1]);
    return hg::mul(hg::mul(in[0], in[1]), in[2].to(hg::kFloat64));
  };
  GradcheckResult r = hg::gradcheck(fn, {x, constant, float32_constant});
  INFO(r.report());
  CHECK(r.passed);
  CHECK(r.elements_checked == 6);  // only x
  REQUIRE_FALSE(seen_constants.empty());
  for (const Tensor& seen : seen_constants) CHECK(seen.impl() == constant.impl());  // same handle
}

TEST_CASE("gradcheck leaves the caller's inputs and their gradients untouched") {
  Tensor x = param({4}, 7);
  const auto before = x.to_vector<double>();
  check_gradcheck([](const std::vector<Tensor>& in) { return hg::exp(in[0]); }, {x});
  CHECK(x.to_vector<double>() == before);
  CHECK_FALSE(x.grad().defined());
  CHECK(x.requires_grad());
}

TEST_CASE("full_jacobian mode checks every output element and still catches a wrong backward") {
  Tensor a = param({2, 3}, 8);
  Tensor b = param({3}, 9);
  GradcheckOptions full;
  full.full_jacobian = true;
  check_gradcheck(
      [](const std::vector<Tensor>& in) { return hg::tanh(hg::add(hg::mul(in[0], in[1]), in[0])); },
      {a, b}, full);
  GradcheckResult bad = hg::gradcheck(
      [](const std::vector<Tensor>& in) { return custom_square(in[0], 2.0); }, {a}, full);
  INFO(bad.report());
  CHECK_FALSE(bad.passed);
  CHECK(bad.worst_input == 0);
}

TEST_CASE("gradcheck reports exactly the element whose gradient is wrong") {
  // out = x^2 with a backward that is 1.5x too large only where x > 0 (element 1).
  Tensor x = hg::tensor({-1.0, 2.0, -0.5}, hg::kFloat64).requires_grad_(true);
  auto fn = [](const std::vector<Tensor>& in) {
    Tensor out;
    {
      hg::NoGradGuard no_grad;
      out = hg::mul(in[0], in[0]);
    }
    hg::autograd::record(
        "half_wrong_square", {in[0]}, {&out}, {in[0]},
        [](const std::vector<Tensor>& g, const hg::autograd::BackwardContext& ctx) {
          Tensor dx = hg::mul(hg::mul(ctx.saved(0), 2.0), g[0]);
          Tensor positive = hg::gt(ctx.saved(0), hg::zeros_like(ctx.saved(0)));
          return std::vector<Tensor>{hg::where(positive, hg::mul(dx, 1.5), dx)};
        });
    return out;
  };
  GradcheckOptions full;
  full.full_jacobian = true;
  GradcheckResult r = hg::gradcheck(fn, {x}, full);
  INFO(r.report());
  CHECK_FALSE(r.passed);
  CHECK(r.worst_input == 0);
  CHECK(r.worst_index == 1);  // the only positive element
  CHECK(r.worst_multi_index == Shape{1});
}

TEST_CASE("gradcheck handles several outputs and int64 inputs that are not differentiable") {
  Tensor x = param({4, 3}, 10);
  Tensor index = hg::from_vector(std::vector<std::int64_t>{2, 0, 2}, {3});
  auto fn = [](const std::vector<Tensor>& in) -> std::vector<Tensor> {
    Tensor picked = hg::index_select(in[0], 0, in[1]);  // rows 2, 0, 2
    return {hg::exp(picked), hg::mul(in[0], in[0]).sum()};
  };
  GradcheckResult r = hg::gradcheck(hg::GradcheckMultiFn(fn), {x, index});
  INFO(r.report());
  CHECK(r.passed);
  CHECK(r.elements_checked == 12);
  // The int64 index used as a plain value in arithmetic.
  check_gradcheck(
      [](const std::vector<Tensor>& in) { return hg::mul(in[0], in[1].to(hg::kFloat64)); },
      {param({3}, 11), hg::from_vector(std::vector<std::int64_t>{1, -2, 3}, {3})});
}

TEST_CASE("gradcheck is right for outputs that share storage with their input") {
  // reshape may return a view of its input; the perturbed evaluations must be read before
  // the input is perturbed again, or every numerical derivative comes out as zero.
  Tensor x = param({2, 3}, 12);
  auto fn = [](const std::vector<Tensor>& in) { return in[0].reshape({3, 2}); };
  GradcheckResult r = hg::gradcheck(fn, {x});
  INFO(r.report());
  CHECK(r.passed);
  GradcheckOptions full;
  full.full_jacobian = true;
  check_gradcheck(fn, {x}, full);
}
