// A task's scoring (train/task_loss.hpp, Task::loss, Task::count_scored, Task::metrics):
// the defaults are the kind's functions, and the trainers and train::evaluate ask the task,
// so a task that scores otherwise is trained and evaluated by its own rule.
#include <doctest/doctest.h>

#include "headgrad/headgrad.hpp"
#include "headgrad/nn/gpt.hpp"
#include "headgrad/optim/sgd.hpp"
#include "headgrad/train/task_loss.hpp"
#include "headgrad/train/trainer.hpp"
#include "helpers.hpp"

using namespace headgrad;

namespace {

// The copy task, scored with `factor` times its loss (its counts unchanged).
class ScaledLossTask : public train::Task {
 public:
  ScaledLossTask(std::unique_ptr<train::Task> inner, double factor)
      : inner_(std::move(inner)), factor_(factor) {}
  std::string name() const override { return "scaled_" + inner_->name(); }
  train::TaskKind kind() const override { return inner_->kind(); }
  std::int64_t vocab_size() const override { return inner_->vocab_size(); }
  std::int64_t max_len() const override { return inner_->max_len(); }
  train::Batch batch(train::Split split, std::int64_t index,
                     std::int64_t batch_size) const override {
    return inner_->batch(split, index, batch_size);
  }
  Tensor loss(const Tensor& logits, const train::Batch& batch) const override {
    return mul(inner_->loss(logits, batch), factor_);
  }
  train::Metrics metrics(const Tensor& logits, const train::Batch& batch) const override {
    train::Metrics m = inner_->metrics(logits, batch);
    m.loss *= factor_;
    return m;
  }

 private:
  std::unique_ptr<train::Task> inner_;
  double factor_;
};

std::unique_ptr<train::Task> copy_task() {
  train::TaskOptions options;
  options.seed = 3;
  options.length = 4;
  return train::make_task("copy", options);
}

// One step at learning rate 0 (the weights stay put) with `task`: the trained step's loss
// and the validation loss, from the same initial weights.
std::pair<double, double> one_step(const train::Task& task) {
  manual_seed(5);
  nn::GPTOptions o;
  o.vocab_size = task.vocab_size();
  o.max_len = task.max_len();
  o.d_model = 8;
  o.nhead = 2;
  o.num_layers = 1;
  nn::GPT model(o);
  optim::SGD sgd(model.parameters(), optim::SGDOptions().with_lr(0.0));
  train::TrainerOptions options;
  options.steps = 1;
  options.batch_size = 8;
  options.eval_batches = 2;
  options.progress = false;
  train::Trainer trainer(
      model, [&model](const train::Batch& b) { return model.forward(b.tokens); }, task, sgd,
      options);
  const train::TrainResult r = trainer.fit();
  return {r.last_train.loss, r.last_validation.loss};
}

}  // namespace

TEST_CASE("a task's default scoring is its kind's loss, counts and metrics") {
  const auto task = copy_task();
  const train::Batch b = task->batch(train::Split::train, 0, 4);
  manual_seed(1);
  const Tensor logits = randn({4, task->max_len(), task->vocab_size()});
  CHECK(task->loss(logits, b).item() ==
        train::task_loss(logits, b, train::TaskKind::sequence).item());
  CHECK(task->count_scored(logits, b) == train::count_scored(logits, b, train::TaskKind::sequence));
  const train::Metrics m = task->metrics(logits, b);
  const train::Metrics expected = train::evaluate_logits(logits, b, train::TaskKind::sequence);
  CHECK(m.loss == expected.loss);
  CHECK(m.correct == expected.correct);
  CHECK(m.scored == expected.scored);
}

TEST_CASE("the trainer trains and evaluates with the task's own loss and metrics") {
  const auto [train_loss, validation_loss] = one_step(*copy_task());
  const ScaledLossTask scaled(copy_task(), 3.0);
  const auto [scaled_train, scaled_validation] = one_step(scaled);
  CHECK(train_loss > 0);
  CHECK(scaled_train == doctest::Approx(3 * train_loss).epsilon(1e-6));
  CHECK(scaled_validation == doctest::Approx(3 * validation_loss).epsilon(1e-6));
}
