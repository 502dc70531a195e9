// Tests of regression batches in training (include/headgrad/train/batch.hpp, trainer.hpp):
// the squared-error loss against a hand computation, its float64 gradcheck and hand
// gradient, the kRegressionTolerance accuracy rule, scored_per_example for every kind,
// Batch's size/device/to without tokens, and a Trainer run on a small regression task.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "headgrad/autograd/gradcheck.hpp"
#include "headgrad/headgrad.hpp"
#include "headgrad/nn/linear.hpp"
#include "headgrad/optim/adam.hpp"
#include "headgrad/train/tasks.hpp"
#include "headgrad/train/trainer.hpp"

using namespace headgrad;
using namespace headgrad::train;

namespace {

// pred and targets (B = 2, T = 2, F = 2); position (0, 1) unscored when masked. Squared
// errors summed over the 2 coordinates, by hand:
//   (0,0): (1-0)^2 + (2-2)^2         = 1
//   (0,1): (3-100)^2 + (4-100)^2     = 9409 + 9216 = 18625
//   (1,0): (0-1)^2 + (0-1)^2         = 2
//   (1,1): (1-1)^2 + (0.8-1)^2       = 0.04 (below the 0.1 tolerance: correct)
Batch hand_batch(bool masked) {
  Batch b;
  b.inputs = zeros({2, 2, 3});
  b.targets = from_vector<float>({0, 2, 100, 100, 1, 1, 1, 1}, {2, 2, 2});
  if (masked) b.target_mask = from_vector<bool>({true, false, true, true}, {2, 2});
  return b;
}

Tensor hand_pred() { return from_vector<double>({1, 2, 3, 4, 0, 0, 1, 0.8}, {2, 2, 2}, kFloat64); }

// A regression task for the trainer: targets are the inputs times 2 (F_in = F_out = 3), at
// every position, inputs standard normal, the second position of each example unscored.
class DoubleTask : public Task {
 public:
  std::string name() const override { return "double"; }
  TaskKind kind() const override { return TaskKind::regression; }
  std::int64_t vocab_size() const override { return 3; }
  std::int64_t max_len() const override { return 2; }
  std::int64_t input_dim() const override { return 3; }
  Batch batch(Split split, std::int64_t index, std::int64_t batch_size) const override {
    Generator gen(static_cast<std::uint64_t>(index) * 2 + (split == Split::train ? 0 : 1));
    Batch b;
    b.inputs = randn({batch_size, 2, 3}, {}, &gen);
    b.targets = mul(b.inputs, 2.0);
    std::vector<bool> mask(batch_size * 2);
    for (std::int64_t i = 0; i < batch_size; ++i) mask[i * 2] = true;
    b.target_mask = from_vector(mask, {batch_size, 2});
    return b;
  }
};

}  // namespace

TEST_CASE("the regression loss is the mean over scored positions of summed squared errors") {
  const Tensor pred = hand_pred();
  CHECK(task_loss(pred, hand_batch(true), TaskKind::regression).item() ==
        doctest::Approx((1 + 2 + 0.04) / 3).epsilon(1e-12));
  CHECK(task_loss(pred, hand_batch(false), TaskKind::regression).item() ==
        doctest::Approx((1 + 18625 + 2 + 0.04) / 4).epsilon(1e-12));
  // The metrics: same loss, correct = positions with error below 0.1.
  const Metrics masked = evaluate_logits(pred, hand_batch(true), TaskKind::regression);
  CHECK(masked.scored == 3);
  CHECK(masked.correct == 1);
  CHECK(masked.accuracy == doctest::Approx(1.0 / 3));
  CHECK(masked.loss == doctest::Approx((1 + 2 + 0.04) / 3).epsilon(1e-12));
  const Metrics all = evaluate_logits(pred, hand_batch(false), TaskKind::regression);
  CHECK(all.scored == 4);
  CHECK(all.correct == 1);
  CHECK(all.loss == doctest::Approx((1 + 18625 + 2 + 0.04) / 4).epsilon(1e-12));
  // float32 predictions work the same.
  CHECK(task_loss(pred.to(kFloat32), hand_batch(true), TaskKind::regression).item() ==
        doctest::Approx((1 + 2 + 0.04) / 3).epsilon(1e-6));
}

TEST_CASE("the accuracy rule counts summed squared errors below the regression tolerance") {
  CHECK(kRegressionTolerance == 0.1);
  // One scored position per example, target 0, predictions with exact squares:
  // 0.25^2 = 0.0625 and 0.3125^2 = 0.09765625 (correct), 0.328125^2 = 0.107666015625 and
  // 0.25^2 + 0.25^2 = 0.125 (wrong: each coordinate alone is below 0.1, their sum is not).
  Batch b;
  b.targets = zeros({4, 1, 2});
  const Tensor pred =
      from_vector<double>({0.25, 0, 0.3125, 0, 0, 0.328125, 0.25, 0.25}, {4, 1, 2}, kFloat64);
  const Metrics m = evaluate_logits(pred, b, TaskKind::regression);
  CHECK(m.scored == 4);
  CHECK(m.correct == 2);
  CHECK(m.accuracy == 0.5);
  CHECK(m.loss ==
        doctest::Approx((0.0625 + 0.09765625 + 0.107666015625 + 0.125) / 4).epsilon(1e-12));
}

TEST_CASE("the regression loss passes gradcheck and matches the hand gradient") {
  Generator gen(4);
  const Tensor pred = randn({3, 4, 2}, TensorOptions(kFloat64).requires_grad(), &gen);
  Batch b;
  b.targets = randn({3, 4, 2}, {}, &gen);  // float32, as tasks build them
  std::vector<bool> mask(12);
  for (std::size_t i = 0; i < mask.size(); ++i) mask[i] = i % 3 != 1;  // 8 scored
  b.target_mask = from_vector(mask, {3, 4});
  const auto fn = [&](const std::vector<Tensor>& in) {
    return task_loss(in[0], b, TaskKind::regression);
  };
  const GradcheckResult r = gradcheck(fn, {pred}, GradcheckOptions{.full_jacobian = true});
  CHECK_MESSAGE(r.passed, r.report());
  // d loss / d pred[b,t,f] = 2 (pred - target) / scored at scored positions, 0 elsewhere.
  Tensor loss = task_loss(pred, b, TaskKind::regression);
  loss.backward();
  const auto g = pred.grad().to_vector<double>();
  const auto p = pred.to_vector<double>();
  const auto y = b.targets.to_vector<double>();
  for (std::size_t i = 0; i < g.size(); ++i) {
    const double want = mask[i / 2] ? 2 * (p[i] - y[i]) / 8 : 0.0;
    CHECK(g[i] == doctest::Approx(want).epsilon(1e-12));
  }
}

TEST_CASE("scored_per_example counts scored targets for every task kind") {
  Batch seq;
  seq.targets = from_vector<std::int64_t>({-100, 3, 4, -100, -100, -100}, {2, 3});
  CHECK(scored_per_example(seq, TaskKind::sequence) == std::vector<std::int64_t>{2, 0});
  Batch cls;
  cls.targets = from_vector<std::int64_t>({1, 0, 1}, {3});
  CHECK(scored_per_example(cls, TaskKind::classification) == std::vector<std::int64_t>{1, 1, 1});
  CHECK(scored_per_example(hand_batch(true), TaskKind::regression) ==
        std::vector<std::int64_t>{1, 2});
  CHECK(scored_per_example(hand_batch(false), TaskKind::regression) ==
        std::vector<std::int64_t>{2, 2});
  CHECK_THROWS_AS(scored_per_example(seq, TaskKind::regression), ShapeError);
  CHECK_THROWS_AS(scored_per_example(cls, TaskKind::sequence), ShapeError);
}

TEST_CASE("regression shapes that do not match throw ShapeError") {
  Batch b = hand_batch(true);
  CHECK_THROWS_AS(task_loss(zeros({2, 2, 3}, kFloat64), b, TaskKind::regression), ShapeError);
  CHECK_THROWS_AS(evaluate_logits(zeros({2, 2}, kFloat64), b, TaskKind::regression), ShapeError);
  b.target_mask = from_vector<bool>({true, false}, {2, 1});
  CHECK_THROWS_AS(task_loss(hand_pred(), b, TaskKind::regression), ShapeError);
}

TEST_CASE("a batch without tokens takes its size and device from inputs") {
  Batch b = hand_batch(true);
  CHECK(b.size() == 2);
  CHECK(b.device() == Device::cpu());
  const Batch moved = b.to(Device::cpu());
  CHECK(moved.inputs.defined());
  CHECK(moved.target_mask.defined());
  CHECK_FALSE(moved.tokens.defined());
  CHECK(moved.size() == 2);
  CHECK(Batch{}.size() == 0);
}

TEST_CASE("the trainer fits and evaluates a regression task") {
  manual_seed(3);
  DoubleTask task;
  auto model = std::make_shared<nn::Linear>(3, 3);
  optim::AdamW optimizer(model->parameters(), optim::AdamWOptions().with_lr(3e-2));
  const ForwardFn forward = [model](const Batch& b) { return model->forward(b.inputs); };
  const Metrics before = evaluate(*model, forward, task, Split::validation, 2, 16);
  CHECK(before.scored == 32);  // one scored position per example
  TrainerOptions options;
  options.steps = 300;
  options.batch_size = 16;
  options.eval_every = 300;
  options.eval_batches = 2;
  options.progress = false;
  Trainer trainer(*model, forward, task, optimizer, options);
  const TrainResult result = trainer.fit();
  MESSAGE("regression fit: validation loss " << before.loss << " -> " << result.last_validation.loss
                                             << ", accuracy " << result.last_validation.accuracy);
  CHECK(result.last_validation.scored == 32);
  CHECK(result.last_validation.loss < 0.01 * before.loss);
  CHECK(result.last_validation.accuracy == 1.0);
  CHECK(result.last_train.scored > 0);
}
