// optim::SGD: first steps computed by hand for plain SGD, weight decay with momentum,
// dampening and Nesterov momentum; skipped parameters; float32; option checks.
#include <doctest/doctest.h>

#include "headgrad/headgrad.hpp"
#include "headgrad/optim/sgd.hpp"
#include "helpers.hpp"

using namespace headgrad;
using headgrad::testing::check_values;

namespace {

// p = [1, -2] (float64 leaf) with gradient g = [0.5, 0.25].
Tensor param_with_grad(DType dtype = kFloat64) {
  Tensor p = tensor({1.0, -2.0}, dtype).requires_grad_(true);
  p.set_grad(tensor({0.5, 0.25}, dtype));
  return p;
}

void set_grad(Tensor& p) { p.set_grad(tensor({0.5, 0.25}, p.dtype())); }

}  // namespace

TEST_CASE("plain SGD moves against the gradient by lr times the gradient") {
  Tensor p = param_with_grad();
  optim::SGD opt({p}, optim::SGDOptions(0.1));
  opt.step();
  check_values(p, {2}, {0.95, -2.025}, 1e-15);
  CHECK_FALSE(opt.momentum_buffer(0).defined());  // no momentum, no buffer
  opt.step();                                     // the same gradient again
  check_values(p, {2}, {0.9, -2.05}, 1e-15);
}

TEST_CASE("SGD adds weight decay to the gradient and starts the momentum buffer at it") {
  // d1 = g + 0.1 p0 = [0.6, 0.05]; buf = d1; p1 = p0 - 0.1 buf = [0.94, -2.005]
  // d2 = g + 0.1 p1 = [0.594, 0.0495]; buf = 0.9 [0.6, 0.05] + d2 = [1.134, 0.0945]
  // p2 = p1 - 0.1 buf = [0.8266, -2.01445]
  Tensor p = param_with_grad();
  optim::SGD opt({p}, optim::SGDOptions(0.1).with_momentum(0.9).with_weight_decay(0.1));
  opt.step();
  check_values(p, {2}, {0.94, -2.005}, 1e-14);
  check_values(opt.momentum_buffer(0), {2}, {0.6, 0.05}, 1e-14);
  set_grad(p);
  opt.step();
  check_values(opt.momentum_buffer(0), {2}, {1.134, 0.0945}, 1e-14);
  check_values(p, {2}, {0.8266, -2.01445}, 1e-14);
}

TEST_CASE("SGD dampening scales the new gradient from the second step on") {
  // buf1 = g (no dampening on the first step); buf2 = 0.9 g + (1 - 0.5) g = 1.4 g
  // p2 = p0 - 0.1 g - 0.1 * 1.4 g = p0 - 0.24 g
  Tensor p = param_with_grad();
  optim::SGD opt({p}, optim::SGDOptions(0.1).with_momentum(0.9).with_dampening(0.5));
  opt.step();
  check_values(p, {2}, {0.95, -2.025}, 1e-15);
  opt.step();
  check_values(opt.momentum_buffer(0), {2}, {0.7, 0.35}, 1e-14);
  check_values(p, {2}, {1.0 - 0.24 * 0.5, -2.0 - 0.24 * 0.25}, 1e-14);
}

TEST_CASE("Nesterov SGD steps along the gradient plus momentum times the buffer") {
  // step 1: buf = g, d = g + 0.9 g = 1.9 g, p1 = p0 - 0.19 g = [0.905, -2.0475]
  // step 2: buf = 0.9 g + g = 1.9 g, d = g + 0.9 * 1.9 g = 2.71 g, p2 = p1 - 0.271 g
  Tensor p = param_with_grad();
  optim::SGD opt({p}, optim::SGDOptions(0.1).with_momentum(0.9).with_nesterov(true));
  opt.step();
  check_values(p, {2}, {0.905, -2.0475}, 1e-14);
  opt.step();
  check_values(p, {2}, {0.7695, -2.11525}, 1e-14);
}

TEST_CASE("SGD skips parameters without a gradient and creates no state for them") {
  Tensor a = param_with_grad();
  Tensor b = tensor({3.0, 4.0}, kFloat64).requires_grad_(true);  // no grad
  optim::SGD opt({a, b}, optim::SGDOptions(0.1).with_momentum(0.9).with_weight_decay(0.5));
  opt.step();
  check_values(b, {2}, {3.0, 4.0}, 0);  // weight decay does not touch it either
  CHECK(opt.momentum_buffer(0).defined());
  CHECK_FALSE(opt.momentum_buffer(1).defined());
  CHECK_FALSE(opt.state_dict().contains("state.1.momentum_buffer"));
}

TEST_CASE("SGD updates float32 parameters in float32") {
  Tensor p = param_with_grad(kFloat32);
  optim::SGD opt({p}, optim::SGDOptions(0.1).with_momentum(0.9).with_nesterov(true));
  opt.step();
  opt.step();
  CHECK(p.dtype() == kFloat32);
  CHECK(opt.momentum_buffer(0).dtype() == kFloat32);
  check_values(p, {2}, {0.7695, -2.11525}, 1e-6);
}

TEST_CASE("SGD rejects invalid options as PyTorch does") {
  auto make = [](optim::SGDOptions o) {
    return HG_ERROR_MESSAGE(optim::SGD({tensor({1.0}).requires_grad_(true)}, o));
  };
  CHECK(make(optim::SGDOptions(-0.1)).find("invalid learning rate") != std::string::npos);
  CHECK(make(optim::SGDOptions(0.1).with_momentum(-0.5)).find("momentum") != std::string::npos);
  CHECK(make(optim::SGDOptions(0.1).with_weight_decay(-1)).find("weight_decay") !=
        std::string::npos);
  CHECK(make(optim::SGDOptions(0.1).with_nesterov(true)).find("nesterov") != std::string::npos);
  CHECK(make(optim::SGDOptions(0.1).with_momentum(0.9).with_dampening(0.1).with_nesterov(true))
            .find("dampening 0") != std::string::npos);
  CHECK_THROWS_AS(optim::SGD({tensor({1.0}).requires_grad_(true)}, optim::SGDOptions(-1)),
                  ValueError);
  CHECK(make(optim::SGDOptions(0.1).with_momentum(0.9)).empty());
}

TEST_CASE("SGD options() reports the options in force") {
  Tensor p = param_with_grad();
  optim::SGD opt({p}, optim::SGDOptions(0.1).with_momentum(0.9).with_dampening(0.2));
  opt.set_lr(0.05);
  const auto o = opt.options();
  CHECK(o.lr == 0.05);
  CHECK(o.momentum == 0.9);
  CHECK(o.dampening == 0.2);
  CHECK_FALSE(o.nesterov);
}
