// train::EnsembleTrainer against train::Trainer: each member of an ensemble trained as one
// ends bitwise where the same GPT trained alone ends (same seed, same data stream, same
// learning rate schedule and clipping), on associative recall, with K = 1, 3 and 8, mixed
// learning rates, a member that stops early, and float64.
#include <doctest/doctest.h>

#include <map>
#include <memory>
#include <vector>

#include "headgrad/nn/gpt.hpp"
#include "headgrad/nn/gpt_ensemble.hpp"
#include "headgrad/optim/adam.hpp"
#include "headgrad/optim/ensemble_adamw.hpp"
#include "headgrad/optim/schedule.hpp"
#include "headgrad/train/ensemble_trainer.hpp"
#include "headgrad/train/tasks.hpp"
#include "headgrad/train/trainer.hpp"

using namespace headgrad;

namespace {

constexpr std::int64_t kSteps = 24;
constexpr std::int64_t kEvery = 8;
constexpr std::int64_t kBatch = 8;

struct RunSpec {
  std::uint64_t seed;
  double lr;
  std::int64_t stop_after = kSteps;  // steps before the member leaves (early stop)
};

std::unique_ptr<train::Task> task_for(std::uint64_t seed) {
  train::TaskOptions to;
  to.seed = seed;
  to.length = 4;
  return train::make_task("associative_recall", to);
}

std::shared_ptr<nn::GPT> model_for(const train::Task& task, std::uint64_t seed, DType dtype) {
  nn::GPTOptions o;
  o.vocab_size = task.vocab_size();
  o.max_len = task.max_len();
  o.d_model = 16;
  o.nhead = 4;
  o.num_layers = 2;
  Generator init(1000 + seed);
  auto model = std::make_shared<nn::GPT>(o, &init);
  model->to(dtype);
  return model;
}

optim::LRSchedule schedule_for(double lr) {
  return optim::LRSchedule::cosine(lr, 3, kSteps, lr * 0.1);
}

struct Outcome {
  StateDict weights;
  std::vector<train::Metrics> evaluations;
};

// The member trained alone by train::Trainer.
Outcome alone(const RunSpec& spec, DType dtype) {
  const auto task = task_for(spec.seed);
  const auto model = model_for(*task, spec.seed, dtype);
  optim::AdamW optimizer(model->parameters(), optim::AdamWOptions().with_lr(spec.lr));
  Outcome out;
  train::TrainerOptions options;
  options.steps = spec.stop_after;
  options.batch_size = kBatch;
  options.eval_every = kEvery;
  options.clip_grad_norm = 1.0;
  options.progress = false;
  options.on_evaluate = [&](const train::Metrics& t, const train::Metrics&) {
    out.evaluations.push_back(t);
  };
  auto m = model;
  train::Trainer trainer(
      *model, [m](const train::Batch& b) { return m->forward(b.tokens, b.key_padding_mask); },
      *task, optimizer, options, schedule_for(spec.lr));
  trainer.fit();
  out.weights = model->state_dict();
  return out;
}

// Every member trained in one ensemble.
std::vector<Outcome> together(const std::vector<RunSpec>& specs, DType dtype) {
  std::vector<std::unique_ptr<train::Task>> tasks;
  std::vector<std::shared_ptr<nn::GPT>> models;
  std::vector<const nn::GPT*> members;
  std::vector<optim::AdamWOptions> hyper;
  std::vector<train::EnsembleMember> plan;
  for (const RunSpec& s : specs) {
    tasks.push_back(task_for(s.seed));
    models.push_back(model_for(*tasks.back(), s.seed, dtype));
    members.push_back(models.back().get());
    hyper.push_back(optim::AdamWOptions().with_lr(s.lr));
    plan.push_back({tasks.back().get(), schedule_for(s.lr), 1.0});
  }
  nn::GPTEnsemble ensemble(members);
  optim::EnsembleAdamW optimizer(ensemble.parameters(), hyper);
  std::vector<Outcome> out(specs.size());
  train::EnsembleTrainerOptions options;
  options.steps = kSteps;
  options.batch_size = kBatch;
  options.eval_every = kEvery;
  options.on_evaluate = [&](std::int64_t m, const train::Metrics& t) {
    out[static_cast<std::size_t>(m)].evaluations.push_back(t);
    return t.step >= specs[static_cast<std::size_t>(m)].stop_after;
  };
  options.on_finish = [&](std::int64_t m, std::shared_ptr<nn::GPT> model,
                          const train::EnsembleFinish& f) {
    CHECK(f.steps_done == specs[static_cast<std::size_t>(m)].stop_after);
    out[static_cast<std::size_t>(m)].weights = model->state_dict();
  };
  train::EnsembleTrainer trainer(ensemble, optimizer, plan, options);
  trainer.fit();
  return out;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  const auto x = a.to(kFloat64).to_vector<double>(), y = b.to(kFloat64).to_vector<double>();
  return x == y;
}

void check_equal(const std::vector<RunSpec>& specs, DType dtype) {
  const std::vector<Outcome> joint = together(specs, dtype);
  for (std::size_t m = 0; m < specs.size(); ++m) {
    INFO("member " << m << " (seed " << specs[m].seed << ", lr " << specs[m].lr << ")");
    const Outcome solo = alone(specs[m], dtype);
    REQUIRE(joint[m].evaluations.size() == solo.evaluations.size());
    for (std::size_t e = 0; e < solo.evaluations.size(); ++e) {
      CHECK(joint[m].evaluations[e].step == solo.evaluations[e].step);
      CHECK(joint[m].evaluations[e].loss == solo.evaluations[e].loss);  // bitwise
      CHECK(joint[m].evaluations[e].correct == solo.evaluations[e].correct);
    }
    REQUIRE(joint[m].weights.size() == solo.weights.size());
    for (const auto& [name, t] : solo.weights) {
      INFO(name);
      CHECK(same_bits(joint[m].weights.at(name), t));
    }
  }
}

}  // namespace

TEST_CASE("an ensemble of one trains bitwise as the GPT alone") {
  check_equal({{3, 3e-3}}, kFloat32);
}

TEST_CASE("three members with mixed learning rates each train bitwise as alone") {
  check_equal({{0, 1e-3}, {1, 3e-3}, {2, 1e-2}}, kFloat32);
}

TEST_CASE("eight members, one leaving early, each train bitwise as alone") {
  std::vector<RunSpec> specs;
  for (std::uint64_t s = 0; s < 8; ++s) specs.push_back({s, s % 2 == 0 ? 3e-3 : 1e-2});
  specs[2].stop_after = kEvery;      // leaves at the first evaluation
  specs[5].stop_after = 2 * kEvery;  // and another at the second
  check_equal(specs, kFloat32);
}

TEST_CASE("an ensemble trains bitwise as alone in float64") {
  check_equal({{4, 3e-3}, {5, 1e-2}}, kFloat64);
}
