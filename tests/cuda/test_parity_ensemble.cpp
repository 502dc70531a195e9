// Model ensembles on the GPU (nn/gpt_ensemble.hpp, optim/ensemble_adamw.hpp,
// train/ensemble_trainer.hpp) against the CPU: the grouped ops forward and backward, the
// per-member clipping and AdamW, and three GPTs with mixed learning rates trained as one
// ensemble for 60 steps, whose every member follows its CPU curve (the CPU ensemble's
// members are bitwise their GPTs alone: tests/train/test_ensemble_trainer.cpp) and learns;
// the GPU ensemble repeated is bitwise identical.
//
// The curve tolerance is test_parity_training.cpp's 2e-3 and for its reasons: a few ulp
// per step between the devices, fed back through training. On the GPU the grouped products
// are strided-batched GEMMs, the layer norm's affine part and AdamW are composed of
// broadcasting ops: the same arithmetic, rounded differently.
#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "parity.hpp"

namespace hg = headgrad;
namespace nn = headgrad::nn;
namespace optim = headgrad::optim;
namespace train = headgrad::train;
using hg::Tensor;
using namespace hg::cuda_testing;

namespace {

using V = std::vector<Tensor>;

constexpr std::int64_t kSteps = 60;

struct Curves {
  std::vector<std::vector<double>> losses;  // [member][step]
  std::vector<nn::StateDict> weights;
};

Curves train_ensemble(hg::Device device) {
  const std::vector<double> lrs = {3e-3, 1e-2, 2e-2};
  std::vector<std::unique_ptr<train::Task>> tasks;
  std::vector<std::shared_ptr<nn::GPT>> models;
  std::vector<const nn::GPT*> members;
  std::vector<optim::AdamWOptions> hyper;
  std::vector<train::EnsembleMember> plan;
  for (std::size_t k = 0; k < lrs.size(); ++k) {
    tasks.push_back(
        train::make_task("reverse", train::TaskOptions().with_seed(7 + k).with_length(6)));
    nn::GPTOptions o;
    o.vocab_size = tasks.back()->vocab_size();
    o.max_len = tasks.back()->max_len();
    o.d_model = 32;
    o.nhead = 4;
    o.num_layers = 2;
    o.dim_feedforward = 64;
    hg::Generator init(11 + k);
    models.push_back(std::make_shared<nn::GPT>(o, &init));
    models.back()->to(device);
    members.push_back(models.back().get());
    hyper.push_back(optim::AdamWOptions().with_lr(lrs[k]));
    plan.push_back({tasks.back().get(), std::nullopt, 1.0});
  }
  nn::GPTEnsemble ensemble(members);
  optim::EnsembleAdamW optimizer(ensemble.parameters(), hyper);
  Curves out;
  out.losses.resize(lrs.size());
  out.weights.resize(lrs.size());
  train::EnsembleTrainerOptions options;
  options.steps = kSteps;
  options.batch_size = 32;
  options.eval_every = 1;  // every step's loss
  options.on_evaluate = [&](std::int64_t m, const train::Metrics& t) {
    out.losses[static_cast<std::size_t>(m)].push_back(t.loss);
    return false;
  };
  options.on_finish = [&](std::int64_t m, std::shared_ptr<nn::GPT> model,
                          const train::EnsembleFinish&) {
    out.weights[static_cast<std::size_t>(m)] = model->state_dict();
  };
  train::EnsembleTrainer(ensemble, optimizer, plan, options).fit();
  return out;
}

}  // namespace

TEST_CASE("grouped_linear on the GPU matches the CPU, with and without bias") {
  const Tensor x = grad_input(random({3, 5, 4, 8}, 910));
  const Tensor w = grad_input(random({3, 6, 8}, 911));
  const Tensor b = grad_input(random({3, 6}, 912));
  check_parity(
      "grouped_linear", [](const V& in) { return hg::grouped_linear(in[0], in[1], in[2]); },
      {x, w, b}, tolerances(1e-12, 1e-5));
  check_parity(
      "grouped_linear without bias", [](const V& in) { return hg::grouped_linear(in[0], in[1]); },
      {x, w}, tolerances(1e-12, 1e-5));
}

TEST_CASE("grouped_layer_norm on the GPU matches the CPU") {
  const Tensor x = grad_input(random({3, 4, 5, 16}, 920, 2.0));
  const Tensor w = grad_input(random({3, 16}, 921));
  const Tensor b = grad_input(random({3, 16}, 922));
  check_parity(
      "grouped_layer_norm", [](const V& in) { return hg::grouped_layer_norm(in[0], in[1], in[2]); },
      {x, w, b}, tolerances(1e-12, 1e-5));
}

TEST_CASE("per-member clipping and AdamW on the GPU match the CPU") {
  for (hg::DType dtype : {hg::kFloat64, hg::kFloat32}) {
    CAPTURE(hg::to_string(dtype));
    std::vector<Tensor> cpu_params, gpu_params;
    for (std::uint64_t i = 0; i < 3; ++i) {
      const Tensor p = random({4, 7, 5}, 930 + i).to(dtype);
      const Tensor g = random({4, 7, 5}, 940 + i, 3.0).to(dtype);
      cpu_params.push_back(copy_to(p, hg::Device::cpu(), true));
      gpu_params.push_back(copy_to(p, gpu(), true));
      cpu_params.back().set_grad(copy_to(g, hg::Device::cpu()));
      gpu_params.back().set_grad(copy_to(g, gpu()));
    }
    const std::vector<double> limits = {1.0, 0.0, 100.0, 2.5};  // 0: not clipped
    const auto cpu_norms = optim::clip_member_grad_norms_(cpu_params, limits);
    const auto gpu_norms = optim::clip_member_grad_norms_(gpu_params, limits);
    for (std::size_t k = 0; k < limits.size(); ++k)
      CHECK(gpu_norms[k] == doctest::Approx(cpu_norms[k]).epsilon(1e-6));
    std::vector<optim::AdamWOptions> hyper;
    for (double lr : {1e-3, 3e-3, 1e-2, 3e-2})
      hyper.push_back(optim::AdamWOptions().with_lr(lr).with_weight_decay(lr * 10));
    optim::EnsembleAdamW cpu_opt(cpu_params, hyper), gpu_opt(gpu_params, hyper);
    cpu_opt.step();
    gpu_opt.step();
    cpu_opt.step();
    gpu_opt.step();
    const double tol = dtype == hg::kFloat64 ? 1e-12 : 1e-5;
    for (std::size_t i = 0; i < cpu_params.size(); ++i) {
      CAPTURE(i);
      CHECK(gpu_params[i].device() == gpu());
      check_close(gpu_params[i], cpu_params[i], {tol, 1.0}, "parameter");
    }
  }
}

TEST_CASE("a GPT ensemble trained on the GPU follows the CPU's curves for 60 steps and learns") {
  const Curves cpu = train_ensemble(hg::Device::cpu());
  const Curves dev = train_ensemble(gpu());
  for (std::size_t m = 0; m < cpu.losses.size(); ++m) {
    CAPTURE(m);
    REQUIRE(cpu.losses[m].size() == static_cast<std::size_t>(kSteps));
    REQUIRE(dev.losses[m].size() == cpu.losses[m].size());
    double worst = 0.0;
    for (std::size_t i = 0; i < cpu.losses[m].size(); ++i)
      worst = std::max(worst,
                       std::abs(dev.losses[m][i] - cpu.losses[m][i]) / std::abs(cpu.losses[m][i]));
    INFO("worst relative difference " << worst);
    CHECK(worst <= 2e-3);
    CHECK(cpu.losses[m].back() < 0.5 * cpu.losses[m].front());
    CHECK(dev.losses[m].back() < 0.5 * dev.losses[m].front());
  }
}

TEST_CASE("a GPT ensemble trained on the GPU twice gives bitwise identical weights") {
  const Curves a = train_ensemble(gpu());
  const Curves b = train_ensemble(gpu());
  for (std::size_t m = 0; m < a.weights.size(); ++m) {
    CAPTURE(m);
    CHECK(a.losses[m] == b.losses[m]);
    for (const auto& [name, value] : a.weights[m]) {
      CAPTURE(name);
      CHECK(bitwise_equal(value, b.weights[m].at(name)));
    }
  }
}
