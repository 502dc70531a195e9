// Olsson et al.'s in-context-learning score (declared in inspect/mechanism.hpp): the mean
// next-token loss late in the context minus early in it, from the model's logits.
#include <cmath>
#include <string>
#include <vector>

#include "headgrad/autograd/grad_mode.hpp"
#include "headgrad/core/error.hpp"
#include "headgrad/inspect/mechanism.hpp"
#include "headgrad/train/batch.hpp"
#include "nn/training_mode_guard.hpp"

namespace headgrad::inspect {
namespace {

void check_ranges(const train::Task& task, std::int64_t batches, std::int64_t batch_size,
                  std::int64_t early_from, std::int64_t early_to, std::int64_t late_from) {
  const std::int64_t t = task.max_len();
  if (task.kind() != train::TaskKind::sequence)
    throw ValueError("in_context_score: task " + task.name() +
                     " is not a sequence task (next-token losses by position)");
  if (!(0 <= early_from && early_from < early_to && early_to <= late_from && late_from < t))
    throw ValueError("in_context_score(" + task.name() +
                     "): the positions need 0 <= early_from = " + std::to_string(early_from) +
                     " < early_to = " + std::to_string(early_to) + " <= late_from = " +
                     std::to_string(late_from) + " < T = " + std::to_string(t));
  if (batches <= 0 || batch_size <= 0)
    throw ValueError("in_context_score: batches and batch_size must be positive, got " +
                     std::to_string(batches) + " and " + std::to_string(batch_size));
}

// -log softmax(row)[target], in float64.
double cross_entropy(const double* row, std::int64_t vocab, std::int64_t target) {
  double max = row[0];
  for (std::int64_t v = 1; v < vocab; ++v) max = std::max(max, row[v]);
  double sum = 0;
  for (std::int64_t v = 0; v < vocab; ++v) sum += std::exp(row[v] - max);
  return max + std::log(sum) - row[target];
}

}  // namespace

InContextScore in_context_score(nn::Module& model, const train::ForwardFn& forward,
                                const train::Task& task, train::Split split, std::int64_t batches,
                                std::int64_t batch_size, std::int64_t early_from,
                                std::int64_t early_to, std::int64_t late_from) {
  check_ranges(task, batches, batch_size, early_from, early_to, late_from);
  nn::detail::TrainingModeGuard mode(model);  // restored however the loop ends
  model.eval();
  NoGradGuard no_grad;
  double early = 0, late = 0, early_count = 0, late_count = 0;
  for (std::int64_t b = 0; b < batches; ++b) {
    const train::Batch batch = task.batch(split, b, batch_size);
    const Tensor logits = forward(batch.to(model.device())).to(Device::cpu()).to(kFloat64);
    const std::int64_t n = logits.size(0), t_len = logits.size(1), vocab = logits.size(2);
    const std::vector<double> values = logits.to_vector<double>();
    const std::vector<std::int64_t> targets = batch.targets.to_vector<std::int64_t>();
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t t = early_from; t < t_len; ++t) {
        const std::int64_t y = targets[i * t_len + t];
        const bool is_early = t < early_to, is_late = t >= late_from;
        if (y == train::kIgnoreIndex || !(is_early || is_late)) continue;
        const double loss = cross_entropy(values.data() + (i * t_len + t) * vocab, vocab, y);
        (is_early ? early : late) += loss;
        (is_early ? early_count : late_count) += 1;
      }
  }
  if (early_count == 0 || late_count == 0)
    throw ValueError("in_context_score(" + task.name() +
                     "): no scored target in the early or the late positions");
  InContextScore out;
  out.early_loss = early / early_count;
  out.late_loss = late / late_count;
  out.score = out.late_loss - out.early_loss;
  return out;
}

}  // namespace headgrad::inspect
