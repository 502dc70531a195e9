// Trainer hooks and the free functions the per-head study builds on: after_backward runs
// once per step, after backward and before clipping and the optimizer step; on_evaluate
// runs at every evaluation with that step's metrics; train::evaluate is what
// Trainer::evaluate computes; train::task_loss is the cross-entropy over scored targets,
// recomputed by hand from log-sum-exp.
//
// Model: a float32 GPT (1 layer, d_model 8, 2 heads) on copy with length 3.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "headgrad/headgrad.hpp"
#include "headgrad/nn/gpt.hpp"
#include "headgrad/optim/adam.hpp"
#include "headgrad/optim/clip.hpp"
#include "headgrad/train/tasks.hpp"
#include "headgrad/train/trainer.hpp"
#include "helpers.hpp"

using namespace headgrad;

namespace {

struct Setup {
  std::unique_ptr<train::Task> task;
  std::shared_ptr<nn::GPT> model;
  std::unique_ptr<optim::AdamW> optimizer;
  train::ForwardFn forward;

  Setup() {
    task = train::make_task("copy", train::TaskOptions().with_seed(3).with_length(3));
    Generator gen(11);
    model = std::make_shared<nn::GPT>(nn::GPTOptions{.vocab_size = task->vocab_size(),
                                                     .max_len = task->max_len(),
                                                     .d_model = 8,
                                                     .nhead = 2,
                                                     .num_layers = 1,
                                                     .dim_feedforward = 16},
                                      &gen);
    optimizer =
        std::make_unique<optim::AdamW>(model->parameters(), optim::AdamWOptions().with_lr(1e-2));
    auto m = model;
    forward = [m](const train::Batch& b) { return m->forward(b.tokens, b.key_padding_mask); };
  }
  train::TrainerOptions options(std::int64_t steps, std::int64_t eval_every) const {
    train::TrainerOptions o;
    o.steps = steps;
    o.eval_every = eval_every;
    o.batch_size = 4;
    o.eval_batches = 2;
    o.progress = false;
    return o;
  }
};

double total_grad_norm(const std::vector<Tensor>& params) {
  double acc = 0;
  for (const Tensor& p : params)
    for (double g : p.grad().to_vector<double>()) acc += g * g;
  return std::sqrt(acc);
}

}  // namespace

TEST_CASE("after_backward runs once per step with the step number and fresh gradients") {
  Setup s;
  train::TrainerOptions o = s.options(5, 0);
  o.clip_grad_norm = 1e-4;  // so tiny that clipping before the hook would show
  std::vector<std::int64_t> steps;
  std::vector<std::vector<double>> weights;  // one parameter's values at each call
  const Tensor watched = s.model->lm_head->weight;
  const std::vector<double> initial = watched.to_vector<double>();
  o.after_backward = [&](std::int64_t step) {
    steps.push_back(step);
    for (const Tensor& p : s.model->parameters()) CHECK(p.grad().defined());
    CHECK(total_grad_norm(s.model->parameters()) > 1e-3);  // not clipped yet
    weights.push_back(watched.to_vector<double>());
  };
  train::Trainer trainer(*s.model, s.forward, *s.task, *s.optimizer, o);
  trainer.fit();
  CHECK(steps == std::vector<std::int64_t>{1, 2, 3, 4, 5});
  REQUIRE(weights.size() == 5);
  // Called before the optimizer step: the first call sees the initial weights, and each
  // later call the weights the previous step left.
  CHECK(weights[0] == initial);
  for (std::size_t i = 1; i < weights.size(); ++i) CHECK(weights[i] != weights[i - 1]);
  // The gradients after the hook were clipped to the tiny norm.
  CHECK(total_grad_norm(s.model->parameters()) <= 1e-4 * (1 + 1e-4));
}

TEST_CASE("on_evaluate runs at every evaluation with the step's train and validation metrics") {
  Setup s;
  train::TrainerOptions o = s.options(7, 3);
  std::vector<std::int64_t> train_steps, validation_steps;
  o.on_evaluate = [&](const train::Metrics& tr, const train::Metrics& val) {
    train_steps.push_back(tr.step);
    validation_steps.push_back(val.step);
    // The validation metrics are train::evaluate on the model as it is now.
    const train::Metrics now = train::evaluate(
        *s.model, s.forward, *s.task, train::Split::validation, o.eval_batches, o.batch_size);
    CHECK(val.loss == now.loss);
    CHECK(val.accuracy == now.accuracy);
    CHECK(val.scored == now.scored);
    CHECK(tr.scored > 0);
  };
  train::Trainer trainer(*s.model, s.forward, *s.task, *s.optimizer, o);
  const train::TrainResult r = trainer.fit();
  CHECK(train_steps == std::vector<std::int64_t>{3, 6, 7});
  CHECK(validation_steps == std::vector<std::int64_t>{3, 6, 7});
  CHECK(r.last_validation.step == 7);
}

TEST_CASE("train::evaluate equals Trainer::evaluate and restores the training mode") {
  Setup s;
  train::TrainerOptions o = s.options(1, 0);
  o.eval_batches = 3;
  train::Trainer trainer(*s.model, s.forward, *s.task, *s.optimizer, o);
  s.model->train();
  const train::Metrics a = trainer.evaluate();
  const train::Metrics b =
      train::evaluate(*s.model, s.forward, *s.task, train::Split::validation, 3, o.batch_size);
  CHECK(s.model->is_training());
  CHECK(a.loss == b.loss);
  CHECK(a.accuracy == b.accuracy);
  CHECK(a.correct == b.correct);
  CHECK(a.scored == b.scored);
  // 3 batches of 4 examples, 3 scored targets each (length 3, no padding).
  CHECK(b.scored == 36);
  // The mean loss weights each batch by its scored targets: with equal counts, the mean of
  // the batches' losses.
  double sum = 0;
  for (std::int64_t i = 0; i < 3; ++i) {
    const train::Batch batch = s.task->batch(train::Split::validation, i, o.batch_size);
    NoGradGuard no_grad;
    s.model->eval();
    sum += train::task_loss(s.forward(batch), batch, s.task->kind()).item();
    s.model->train();
  }
  CHECK(b.loss == doctest::Approx(sum / 3).epsilon(1e-6));
  s.model->eval();
  train::evaluate(*s.model, s.forward, *s.task, train::Split::train, 1, 2);
  CHECK_FALSE(s.model->is_training());
}

TEST_CASE("task_loss is the mean cross-entropy over the scored targets") {
  // Sequence: logits (2, 3, 4), three targets ignored.
  Generator gen(5);
  const Tensor logits = randn({2, 3, 4}, kFloat64, &gen).requires_grad_(true);
  train::Batch b;
  b.targets = from_vector<std::int64_t>({3, -100, 0, -100, 2, -100}, {2, 3});
  const auto v = logits.to_vector<double>();
  const auto t = b.targets.to_vector<std::int64_t>();
  double expected = 0;
  int count = 0;
  for (std::size_t row = 0; row < 6; ++row) {
    if (t[row] == -100) continue;
    double top = -INFINITY, total = 0;
    for (std::size_t c = 0; c < 4; ++c) top = std::max(top, v[row * 4 + c]);
    for (std::size_t c = 0; c < 4; ++c) total += std::exp(v[row * 4 + c] - top);
    expected += top + std::log(total) - v[row * 4 + static_cast<std::size_t>(t[row])];
    ++count;
  }
  expected /= count;
  Tensor loss = train::task_loss(logits, b, train::TaskKind::sequence);
  CHECK(loss.dim() == 0);
  CHECK(loss.item() == doctest::Approx(expected).epsilon(1e-12));
  // Differentiable: d loss / d logits = (softmax - onehot) / scored on scored rows, 0 elsewhere.
  loss.backward();
  const auto g = logits.grad().to_vector<double>();
  for (std::size_t row = 0; row < 6; ++row) {
    double top = -INFINITY, total = 0;
    for (std::size_t c = 0; c < 4; ++c) top = std::max(top, v[row * 4 + c]);
    for (std::size_t c = 0; c < 4; ++c) total += std::exp(v[row * 4 + c] - top);
    for (std::size_t c = 0; c < 4; ++c) {
      double want = 0;
      if (t[row] != -100)
        want = (std::exp(v[row * 4 + c] - top) / total -
                (static_cast<std::int64_t>(c) == t[row] ? 1.0 : 0.0)) /
               count;
      CHECK(g[row * 4 + c] == doctest::Approx(want).epsilon(1e-12));
    }
  }

  // Classification: logits (2, 3), labels (2).
  const Tensor class_logits = tensor({0.5, -1.0, 2.0, 1.0, 1.0, 1.0}, kFloat64).reshape({2, 3});
  train::Batch c;
  c.targets = from_vector<std::int64_t>({2, 0}, {2});
  const double lse0 = std::log(std::exp(0.5) + std::exp(-1.0) + std::exp(2.0));
  const double want = ((lse0 - 2.0) + std::log(3.0)) / 2;
  CHECK(train::task_loss(class_logits, c, train::TaskKind::classification).item() ==
        doctest::Approx(want).epsilon(1e-12));
  CHECK_THROWS_AS(train::task_loss(zeros({2, 4}, kFloat64), b, train::TaskKind::sequence),
                  ShapeError);
}
