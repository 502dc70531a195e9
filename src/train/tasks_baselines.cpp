// Reference predictors of the synthetic tasks (Task::baselines): chance, predict_zero and
// the default of Task::baselines by task kind; the key-agnostic predictors live beside
// their tasks (tasks_sequence.cpp, tasks_recall.cpp).
#include <cmath>
#include <string>
#include <vector>

#include "headgrad/core/error.hpp"
#include "headgrad/train/trainer.hpp"
#include "tasks_detail.hpp"

namespace headgrad::train {

std::vector<Baseline> Task::baselines(Split split, std::int64_t batches,
                                      std::int64_t batch_size) const {
  switch (kind()) {
    case TaskKind::regression:
      return {detail::predict_zero_baseline(*this, split, batches, batch_size)};
    case TaskKind::classification:
      return {detail::chance_baseline(*this, split, batches, batch_size, num_classes(),
                                      "the " + std::to_string(num_classes()) + " classes")};
    case TaskKind::sequence:
      break;
  }
  return {detail::chance_baseline(*this, split, batches, batch_size, vocab_size(),
                                  "the " + std::to_string(vocab_size()) + " token ids")};
}

namespace detail {

std::int64_t count_scored_targets(const Task& task, Split split, std::int64_t batches,
                                  std::int64_t batch_size) {
  std::int64_t scored = 0;
  for (std::int64_t i = 0; i < batches; ++i)
    for (std::int64_t y : task.batch(split, i, batch_size).targets.to_vector<std::int64_t>())
      scored += y != kIgnoreIndex;
  return scored;
}

Baseline chance_baseline(const Task& task, Split split, std::int64_t batches,
                         std::int64_t batch_size, std::int64_t count, const std::string& what) {
  if (count < 1)
    throw ValueError(task.name() + ".baselines: chance needs at least 1 target id, got " +
                     std::to_string(count));
  // Every scored target scores log(count) and 1/count: the means are those, once any
  // target is scored.
  const std::int64_t scored = count_scored_targets(task, split, batches, batch_size);
  Baseline b{"chance", "uniform over " + what};
  b.exact_loss = std::log(static_cast<double>(count));
  b.exact_accuracy = 1.0 / static_cast<double>(count);
  if (scored > 0) {
    b.loss = std::log(static_cast<double>(count));
    b.accuracy = 1.0 / static_cast<double>(count);
  }
  return b;
}

Baseline predict_zero_baseline(const Task& task, Split split, std::int64_t batches,
                               std::int64_t batch_size) {
  double total = 0;
  std::int64_t scored = 0, correct = 0;
  for (std::int64_t i = 0; i < batches; ++i) {
    const Batch batch = task.batch(split, i, batch_size);
    const auto y = batch.targets.to_vector<double>();
    const std::int64_t positions = batch.targets.size(0) * batch.targets.size(1);
    const std::int64_t width = batch.targets.size(2);
    const std::vector<bool> mask = batch.target_mask.defined() ? batch.target_mask.to_vector<bool>()
                                                               : std::vector<bool>(positions, true);
    for (std::int64_t p = 0; p < positions; ++p) {
      if (!mask[p]) continue;
      double norm2 = 0;
      for (std::int64_t f = 0; f < width; ++f) norm2 += y[p * width + f] * y[p * width + f];
      total += norm2;
      correct += norm2 < kRegressionTolerance;
      ++scored;
    }
  }
  Baseline b{"predict_zero", "outputs the zero vector at every position"};
  if (scored > 0) {
    b.loss = total / static_cast<double>(scored);
    b.accuracy = static_cast<double>(correct) / static_cast<double>(scored);
  }
  return b;
}

}  // namespace detail
}  // namespace headgrad::train
