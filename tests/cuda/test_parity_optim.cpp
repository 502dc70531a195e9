// Optimizers (optim/adam.hpp, optim/sgd.hpp) and gradient clipping (optim/clip.hpp) on GPU
// parameters against the same updates on the CPU, in float64 and float32: identical
// parameters receive identical gradients for several steps (one parameter skips a step,
// the learning rate changes midway, gradients shrink so that amsgrad's maximum matters),
// and after every step the parameters and the whole optimizer state must agree. The state
// must live on the parameters' device.
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "parity.hpp"

namespace hg = headgrad;
namespace optim = headgrad::optim;
using hg::Shape;
using hg::Tensor;
using namespace hg::cuda_testing;

namespace {

const std::vector<Shape> kParamShapes = {{7, 5}, {13}, {}, {2, 3, 4}, {300}};

// Parameters of kParamShapes in `dtype` from `seed`, as leaves on `device`.
std::vector<Tensor> make_params(hg::DType dtype, hg::Device device, std::uint64_t seed) {
  std::vector<Tensor> params;
  for (const Shape& s : kParamShapes)
    params.push_back(copy_to(random(s, seed++).to(dtype), device, true));
  return params;
}

// The gradient of parameter i at `step`: large first, then smaller (so that v shrinks and
// amsgrad's running maximum differs from v), with some tiny entries (near eps).
Tensor gradient(const Shape& shape, std::size_t i, int step, hg::DType dtype) {
  const double scale = step == 0 ? 3.0 : 0.3 / (1 + step);
  const std::uint64_t seed = 5000 + 100 * static_cast<std::uint64_t>(step) + i;
  Tensor g = random(shape, seed, scale);
  g = hg::where(random_mask(shape, 0.1, seed + 50), hg::mul(g, 1e-7), g);
  return g.to(dtype);
}

// Runs `steps` steps of two optimizers built by `make` (one on CPU, one on GPU parameters)
// and compares parameters and state dicts after each.
template <typename Make>
void check_optimizer(const std::string& what, Make make, int steps = 6) {
  for (hg::DType dtype : {hg::kFloat64, hg::kFloat32}) {
    INFO(what << " [" << hg::to_string(dtype) << "]");
    // float32: both devices round each update once; fused multiply-adds on the GPU may
    // move the last bit, which a few steps do not amplify.
    const Tol tol{dtype == hg::kFloat64 ? 1e-12 : 1e-5, 1.0};
    std::vector<Tensor> cpu_params = make_params(dtype, hg::Device::cpu(), 4000);
    std::vector<Tensor> gpu_params = make_params(dtype, gpu(), 4000);
    std::unique_ptr<optim::Optimizer> cpu_opt = make(cpu_params);
    std::unique_ptr<optim::Optimizer> gpu_opt = make(gpu_params);
    for (int step = 0; step < steps; ++step) {
      CAPTURE(step);
      if (step == steps / 2) {  // a schedule changing the learning rate
        cpu_opt->set_lr(cpu_opt->lr() * 0.5);
        gpu_opt->set_lr(gpu_opt->lr() * 0.5);
      }
      for (std::size_t i = 0; i < cpu_params.size(); ++i) {
        if (step == 2 && i == 1) continue;  // no gradient: this parameter skips the step
        const Tensor g = gradient(kParamShapes[i], i, step, dtype);
        cpu_params[i].set_grad(g);
        gpu_params[i].set_grad(to_gpu(g));
      }
      cpu_opt->step();
      gpu_opt->step();
      for (std::size_t i = 0; i < cpu_params.size(); ++i) {
        CHECK(gpu_params[i].device() == gpu());
        check_close(gpu_params[i], cpu_params[i], tol, "parameter " + std::to_string(i));
      }
      const hg::nn::StateDict cpu_state = cpu_opt->state_dict();
      const hg::nn::StateDict gpu_state = gpu_opt->state_dict();
      REQUIRE(gpu_state.keys() == cpu_state.keys());
      for (const auto& [name, value] : cpu_state)
        check_close(gpu_state.at(name), value, tol, "state " + name);
      cpu_opt->zero_grad();
      gpu_opt->zero_grad();
    }
  }
}

template <typename Opt, typename Options>
auto maker(Options options) {
  return [options](const std::vector<Tensor>& params) -> std::unique_ptr<optim::Optimizer> {
    return std::make_unique<Opt>(params, options);
  };
}

}  // namespace

TEST_CASE("AdamW steps on the GPU match the CPU, with and without amsgrad") {
  check_optimizer("AdamW", maker<optim::AdamW>(optim::AdamWOptions().with_lr(1e-2)));
  check_optimizer("AdamW with weight decay 0.1",
                  maker<optim::AdamW>(optim::AdamWOptions().with_lr(1e-2).with_weight_decay(0.1)));
  check_optimizer(
      "AdamW with amsgrad",
      maker<optim::AdamW>(
          optim::AdamWOptions().with_lr(3e-2).with_betas(0.8, 0.9).with_eps(1e-6).with_amsgrad(
              true)));
}

TEST_CASE("Adam steps on the GPU match the CPU, with L2 weight decay and amsgrad") {
  check_optimizer("Adam", maker<optim::Adam>(optim::AdamOptions().with_lr(1e-2)));
  check_optimizer("Adam with weight decay",
                  maker<optim::Adam>(optim::AdamOptions().with_lr(1e-2).with_weight_decay(0.05)));
  check_optimizer("Adam with amsgrad",
                  maker<optim::Adam>(optim::AdamOptions().with_lr(1e-2).with_amsgrad(true)));
  check_optimizer(
      "Adam with amsgrad and weight decay",
      maker<optim::Adam>(
          optim::AdamOptions().with_lr(1e-2).with_amsgrad(true).with_weight_decay(0.05)));
}

TEST_CASE(
    "SGD steps on the GPU match the CPU with momentum, dampening, nesterov and weight "
    "decay") {
  check_optimizer("SGD", maker<optim::SGD>(optim::SGDOptions(0.1)));
  check_optimizer("SGD with momentum",
                  maker<optim::SGD>(optim::SGDOptions(0.1).with_momentum(0.9)));
  check_optimizer("SGD with momentum and dampening",
                  maker<optim::SGD>(optim::SGDOptions(0.1).with_momentum(0.9).with_dampening(0.3)));
  check_optimizer(
      "SGD with nesterov",
      maker<optim::SGD>(optim::SGDOptions(0.05).with_momentum(0.8).with_nesterov(true)));
  check_optimizer("SGD with weight decay",
                  maker<optim::SGD>(optim::SGDOptions(0.1).with_weight_decay(0.01)));
  check_optimizer(
      "SGD with everything",
      maker<optim::SGD>(
          optim::SGDOptions(0.05).with_momentum(0.9).with_nesterov(true).with_weight_decay(0.01)));
}

TEST_CASE("optimizer state lives on the GPU next to the parameters") {
  std::vector<Tensor> params = make_params(hg::kFloat32, gpu(), 4100);
  optim::AdamW adam(params, optim::AdamWOptions().with_amsgrad(true));
  optim::SGD sgd(params, optim::SGDOptions(0.1).with_momentum(0.9));
  for (std::size_t i = 0; i < params.size(); ++i)
    params[i].set_grad(to_gpu(gradient(kParamShapes[i], i, 0, hg::kFloat32)));
  adam.step();
  sgd.step();
  for (std::size_t i = 0; i < params.size(); ++i) {
    CAPTURE(i);
    CHECK(adam.exp_avg(i).device() == gpu());
    CHECK(adam.exp_avg_sq(i).device() == gpu());
    CHECK(adam.max_exp_avg_sq(i).device() == gpu());
    CHECK(sgd.momentum_buffer(i).device() == gpu());
  }
}

TEST_CASE("clip_grad_norm_ on GPU gradients matches the CPU for every norm type") {
  for (hg::DType dtype : {hg::kFloat64, hg::kFloat32}) {
    for (double norm_type : {2.0, 1.0, 3.0, static_cast<double>(INFINITY)}) {
      for (double max_norm : {0.5, 1e6}) {  // clipping, and a no-op
        CAPTURE(hg::to_string(dtype));
        CAPTURE(norm_type);
        CAPTURE(max_norm);
        std::vector<Tensor> cpu_params = make_params(dtype, hg::Device::cpu(), 4200);
        std::vector<Tensor> gpu_params = make_params(dtype, gpu(), 4200);
        for (std::size_t i = 0; i < cpu_params.size(); ++i) {
          if (i == 2) continue;  // a parameter without gradient is ignored
          const Tensor g = gradient(kParamShapes[i], i, 1, dtype);
          cpu_params[i].set_grad(g);
          gpu_params[i].set_grad(to_gpu(g));
        }
        // Both accumulate in float64; only the order of the additions differs.
        CHECK(optim::grad_norm(gpu_params, norm_type) ==
              doctest::Approx(optim::grad_norm(cpu_params, norm_type)).epsilon(1e-12));
        const double cpu_total = optim::clip_grad_norm_(cpu_params, max_norm, norm_type);
        const double gpu_total = optim::clip_grad_norm_(gpu_params, max_norm, norm_type);
        CHECK(gpu_total == doctest::Approx(cpu_total).epsilon(1e-12));
        const Tol tol{dtype == hg::kFloat64 ? 1e-12 : 1e-6, 1.0};
        for (std::size_t i = 0; i < cpu_params.size(); ++i)
          check_close(gpu_params[i].grad(), cpu_params[i].grad(), tol,
                      "clipped gradient " + std::to_string(i));
      }
    }
  }
}
