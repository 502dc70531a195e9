// optim::Adam and optim::AdamW: first steps computed by hand (bias correction, L2 versus
// decoupled weight decay, amsgrad, per-parameter step counts), float32, option checks.
#include <doctest/doctest.h>

#include <cmath>

#include "headgrad/headgrad.hpp"
#include "headgrad/optim/adam.hpp"
#include "helpers.hpp"

using namespace headgrad;
using headgrad::testing::check_values;

namespace {

Tensor leaf(std::initializer_list<double> v, DType dtype = kFloat64) {
  return tensor(v, dtype).requires_grad_(true);
}

}  // namespace

TEST_CASE("Adam's bias correction makes each of the first steps lr * g / (|g| + eps)") {
  // Constant gradient g: m_t = (1 - b1^t) g and v_t = (1 - b2^t) g^2, so the corrected
  // moments are exactly g and g^2, and every step moves by lr * g / (|g| + eps).
  Tensor p = leaf({1.0, -2.0});
  optim::Adam opt({p}, optim::AdamOptions(0.1));
  const double g0 = 0.5, g1 = -0.25, eps = 1e-8;
  for (int t = 1; t <= 3; ++t) {
    p.set_grad(tensor({g0, g1}, kFloat64));
    opt.step();
    check_values(
        p, {2},
        {1.0 - t * 0.1 * g0 / (std::abs(g0) + eps), -2.0 - t * 0.1 * g1 / (std::abs(g1) + eps)},
        1e-14);
    CHECK(opt.step_count(0) == t);
  }
  check_values(opt.exp_avg(0), {2}, {(1 - std::pow(0.9, 3)) * g0, (1 - std::pow(0.9, 3)) * g1},
               1e-14);
  check_values(opt.exp_avg_sq(0), {2},
               {(1 - std::pow(0.999, 3)) * g0 * g0, (1 - std::pow(0.999, 3)) * g1 * g1}, 1e-12);
}

TEST_CASE("Adam's weight decay is L2 added to the gradient before the moments") {
  // g' = g + wd * p0 = [0.5 + 0.2, 0.25 - 0.4] = [0.7, -0.15]; step = lr * g' / (|g'| + eps)
  Tensor p = leaf({1.0, -2.0});
  p.set_grad(tensor({0.5, 0.25}, kFloat64));
  optim::Adam opt({p}, optim::AdamOptions(0.1).with_weight_decay(0.2));
  opt.step();
  check_values(p, {2}, {1.0 - 0.1 * 0.7 / (0.7 + 1e-8), -2.0 + 0.1 * 0.15 / (0.15 + 1e-8)}, 1e-14);
  check_values(opt.exp_avg(0), {2}, {0.07, -0.015}, 1e-14);
}

TEST_CASE("AdamW decays the parameter by 1 - lr * wd before an Adam step on the raw gradient") {
  Tensor p = leaf({1.0, -2.0});
  p.set_grad(tensor({0.5, 0.25}, kFloat64));
  optim::AdamW opt({p}, optim::AdamWOptions(0.1).with_weight_decay(0.2));
  opt.step();
  const double decay = 1.0 - 0.1 * 0.2;
  check_values(p, {2},
               {1.0 * decay - 0.1 * 0.5 / (0.5 + 1e-8), -2.0 * decay - 0.1 * 0.25 / (0.25 + 1e-8)},
               1e-14);
  check_values(opt.exp_avg(0), {2}, {0.05, 0.025}, 1e-14);  // the raw gradient, no L2
}

TEST_CASE("AdamW's default weight decay is PyTorch's 0.01, Adam's is 0") {
  Tensor p = leaf({1.0});
  CHECK(optim::AdamW({p}, optim::AdamWOptions()).weight_decay() == 0.01);
  CHECK(optim::AdamW({p}, optim::AdamWOptions().with_lr(0.5)).weight_decay() == 0.01);
  CHECK(optim::Adam({p}, optim::AdamOptions()).weight_decay() == 0.0);
  CHECK(optim::Adam({p}, optim::AdamOptions()).lr() == 1e-3);
  CHECK(optim::Adam({p}, optim::AdamOptions()).betas() == std::pair<double, double>{0.9, 0.999});
}

TEST_CASE("amsgrad normalizes by the largest second moment seen so far") {
  // betas (0.9, 0.5); g = 1 then 0.1: v1 = 0.5, v2 = 0.25 + 0.005 = 0.255 < v1, so amsgrad
  // keeps 0.5. m2 = 0.09 + 0.01 = 0.1, bias corrections 0.19 and 0.75.
  auto run = [](bool amsgrad) {
    Tensor p = leaf({0.0});
    optim::Adam opt({p}, optim::AdamOptions(0.1).with_betas(0.9, 0.5).with_amsgrad(amsgrad));
    p.set_grad(tensor({1.0}, kFloat64));
    opt.step();
    p.set_grad(tensor({0.1}, kFloat64));
    const double before = p.item();
    opt.step();
    if (amsgrad) check_values(opt.max_exp_avg_sq(0), {1}, {0.5}, 1e-15);
    return p.item() - before;
  };
  CHECK(run(true) ==
        doctest::Approx(-0.1 / 0.19 * 0.1 / (std::sqrt(0.5 / 0.75) + 1e-8)).epsilon(1e-13));
  CHECK(run(false) ==
        doctest::Approx(-0.1 / 0.19 * 0.1 / (std::sqrt(0.255 / 0.75) + 1e-8)).epsilon(1e-13));
}

TEST_CASE("Adam counts steps per parameter, so a late parameter gets a first-step update") {
  Tensor a = leaf({1.0});
  Tensor b = leaf({1.0});
  optim::Adam opt({a, b}, optim::AdamOptions(0.1));
  a.set_grad(tensor({0.5}, kFloat64));
  opt.step();  // b has no gradient: skipped, no state
  CHECK(opt.step_count(0) == 1);
  CHECK(opt.step_count(1) == 0);
  CHECK_FALSE(opt.exp_avg(1).defined());
  check_values(b, {1}, {1.0}, 0);
  a.set_grad(tensor({0.5}, kFloat64));
  b.set_grad(tensor({-0.5}, kFloat64));
  opt.step();
  CHECK(opt.step_count(0) == 2);
  CHECK(opt.step_count(1) == 1);
  check_values(b, {1}, {1.0 + 0.1 * 0.5 / (0.5 + 1e-8)}, 1e-15);
}

TEST_CASE("Adam updates float32 parameters in float32") {
  Tensor p = leaf({1.0, -2.0}, kFloat32);
  optim::AdamW opt({p}, optim::AdamWOptions(0.1).with_weight_decay(0.0).with_amsgrad(true));
  for (int t = 0; t < 2; ++t) {
    p.set_grad(tensor({0.5, -0.25}, kFloat32));
    opt.step();
  }
  CHECK(p.dtype() == kFloat32);
  CHECK(opt.exp_avg(0).dtype() == kFloat32);
  check_values(p, {2}, {0.8, -1.8}, 1e-6);
}

TEST_CASE("Adam and AdamW reject invalid options as PyTorch does") {
  auto make = [](optim::AdamOptions o) {
    return HG_ERROR_MESSAGE(optim::Adam({tensor({1.0}).requires_grad_(true)}, o));
  };
  CHECK(make(optim::AdamOptions(-1e-3)).find("invalid learning rate") != std::string::npos);
  CHECK(make(optim::AdamOptions().with_betas(1.0, 0.999)).find("beta1") != std::string::npos);
  CHECK(make(optim::AdamOptions().with_betas(0.9, -0.1)).find("beta2") != std::string::npos);
  CHECK(make(optim::AdamOptions().with_eps(-1e-8)).find("eps") != std::string::npos);
  CHECK(make(optim::AdamOptions().with_weight_decay(-0.1)).find("weight_decay") !=
        std::string::npos);
  CHECK(make(optim::AdamOptions()).empty());
  CHECK_THROWS_AS(optim::AdamW({tensor({1.0}).requires_grad_(true)},
                               optim::AdamWOptions().with_betas(0.9, 1.0)),
                  ValueError);
}
