// A task's loss and its scoring of logits against a batch's targets, by the task's kind
// (see train/task_loss.hpp).
#include "headgrad/train/task_loss.hpp"

#include <cmath>

#include "headgrad/autograd/grad_mode.hpp"
#include "headgrad/ops/elementwise.hpp"
#include "headgrad/ops/loss.hpp"
#include "headgrad/ops/reduce.hpp"
#include "headgrad/ops/shape_ops.hpp"

namespace headgrad::train {

namespace {

constexpr std::int64_t kIgnore = -100;

// Logits and targets as (N, C) and (N): sequence logits (B, T, V) are flattened.
std::pair<Tensor, Tensor> flat(const Tensor& logits, const Batch& batch, TaskKind kind) {
  if (kind == TaskKind::sequence) {
    if (logits.dim() != 3 || batch.targets.dim() != 2 || logits.size(0) != batch.targets.size(0) ||
        logits.size(1) != batch.targets.size(1))
      throw ShapeError("trainer: sequence logits " + shape_str(logits.shape()) +
                       " do not match targets " + shape_str(batch.targets.shape()) +
                       " (expected (B, T, V) and (B, T))");
    const std::int64_t n = logits.size(0) * logits.size(1);
    return {reshape(logits, {n, logits.size(2)}), reshape(batch.targets, {n})};
  }
  if (logits.dim() != 2 || batch.targets.dim() != 1 || logits.size(0) != batch.targets.size(0))
    throw ShapeError("trainer: classification logits " + shape_str(logits.shape()) +
                     " do not match targets " + shape_str(batch.targets.shape()) +
                     " (expected (B, C) and (B))");
  return {logits, batch.targets};
}

// `t` on the CPU (itself when it is there already): reading values needs CPU memory.
Tensor on_cpu(const Tensor& t) { return t.device().is_cpu() ? t : t.to(Device::cpu()); }

// A one-element tensor's value, read on the CPU.
double value_of(const Tensor& t) { return on_cpu(t).item(); }

// `targets` on the logits' device (itself when it is there already).
Tensor beside(const Tensor& targets, const Tensor& logits) {
  return targets.device() == logits.device() ? targets : targets.to(logits.device());
}

// (correct, scored) over targets that are not ignored. The argmax runs where the logits
// are; only the predicted ids (and the targets, if they are elsewhere) come to the CPU.
std::pair<std::int64_t, std::int64_t> count_correct(const Tensor& flat_logits,
                                                    const Tensor& flat_targets) {
  NoGradGuard no_grad;
  const auto predicted = on_cpu(argmax(flat_logits.detach(), -1)).to_vector<std::int64_t>();
  const auto targets = on_cpu(flat_targets).to_vector<std::int64_t>();
  std::int64_t correct = 0, scored = 0;
  for (std::size_t i = 0; i < targets.size(); ++i) {
    if (targets[i] == kIgnore) continue;
    ++scored;
    correct += predicted[i] == targets[i];
  }
  return {correct, scored};
}

// Regression: the squared error of every position summed over the F_out coordinates,
// err[b,t] = sum_f (pred[b,t,f] - targets[b,t,f])^2, (B, T) on the predictions' device
// (differentiable in pred; the targets are converted to its dtype). The gradient is
// d err[b,t] / d pred[b,t,f] = 2 (pred[b,t,f] - targets[b,t,f]).
Tensor position_errors(const Tensor& pred, const Batch& batch) {
  const Tensor& y = batch.targets;
  if (pred.dim() != 3 || y.dim() != 3 || pred.shape() != y.shape())
    throw ShapeError("trainer: regression predictions " + shape_str(pred.shape()) +
                     " do not match targets " + shape_str(y.shape()) +
                     " (expected (B, T, F_out) both)");
  const Tensor& mask = batch.target_mask;
  if (mask.defined() && (mask.dim() != 2 || mask.size(0) != pred.size(0) ||
                         mask.size(1) != pred.size(1) || mask.dtype() != kBool))
    throw ShapeError("trainer: regression target_mask " + shape_str(mask.shape()) +
                     " must be a bool (B, T) = (" + std::to_string(pred.size(0)) + ", " +
                     std::to_string(pred.size(1)) + ") mask");
  Tensor target = beside(y, pred);
  if (target.dtype() != pred.dtype()) target = target.to(pred.dtype());
  const Tensor diff = sub(pred, target);
  return sum(mul(diff, diff), {2});
}

// The scored positions of a regression batch, row-major (B*T), read on the CPU.
std::vector<bool> scored_positions(const Batch& batch) {
  const std::int64_t n = batch.targets.size(0) * batch.targets.size(1);
  if (!batch.target_mask.defined()) return std::vector<bool>(n, true);
  return on_cpu(batch.target_mask).to_vector<bool>();
}

std::int64_t count_true(const std::vector<bool>& v) {
  return static_cast<std::int64_t>(std::count(v.begin(), v.end(), true));
}

// The regression loss: the mean over scored positions of position_errors (0 when none).
Tensor regression_loss(const Tensor& pred, const Batch& batch) {
  Tensor err = position_errors(pred, batch);
  if (batch.target_mask.defined())
    err = where(beside(batch.target_mask, err), err, zeros_like(err));
  const std::int64_t scored = count_true(scored_positions(batch));
  return div(sum(err), static_cast<double>(std::max<std::int64_t>(scored, 1)));
}

// Regression (correct, scored, summed error over scored positions): a position is correct
// when its error is below kRegressionTolerance.
struct RegressionCounts {
  std::int64_t correct = 0, scored = 0;
  double error_sum = 0;
};

RegressionCounts count_regression(const Tensor& pred, const Batch& batch) {
  NoGradGuard no_grad;
  const auto err = on_cpu(position_errors(pred.detach(), batch)).to_vector<double>();
  const auto scored = scored_positions(batch);
  RegressionCounts c;
  for (std::size_t i = 0; i < err.size(); ++i) {
    if (!scored[i]) continue;
    ++c.scored;
    c.correct += err[i] < kRegressionTolerance;
    c.error_sum += err[i];
  }
  return c;
}

}  // namespace

std::pair<std::int64_t, std::int64_t> count_scored(const Tensor& logits, const Batch& batch,
                                                   TaskKind kind) {
  if (kind == TaskKind::regression) {
    const RegressionCounts c = count_regression(logits, batch);
    return {c.correct, c.scored};
  }
  auto [l, t] = flat(logits, batch, kind);
  return count_correct(l, t);
}

Metrics evaluate_logits(const Tensor& logits, const Batch& batch, TaskKind kind) {
  NoGradGuard no_grad;
  Metrics m;
  if (kind == TaskKind::regression) {
    const RegressionCounts c = count_regression(logits, batch);
    m.correct = c.correct;
    m.scored = c.scored;
    m.accuracy =
        c.scored > 0 ? static_cast<double>(c.correct) / static_cast<double>(c.scored) : 0.0;
    m.loss = c.scored > 0 ? c.error_sum / static_cast<double>(c.scored) : 0.0;
    return m;
  }
  auto [l, t] = flat(logits, batch, kind);
  auto [correct, scored] = count_correct(l, t);
  m.correct = correct;
  m.scored = scored;
  m.accuracy = scored > 0 ? static_cast<double>(correct) / static_cast<double>(scored) : 0.0;
  m.loss = scored > 0 ? value_of(cross_entropy(l, beside(t, l), Reduction::mean, kIgnore)) : 0.0;
  return m;
}

Tensor task_loss(const Tensor& logits, const Batch& batch, TaskKind kind) {
  if (kind == TaskKind::regression) return regression_loss(logits, batch);
  auto [l, t] = flat(logits, batch, kind);
  return cross_entropy(l, beside(t, l), Reduction::mean, kIgnore);
}

std::vector<std::int64_t> scored_per_example(const Batch& batch, TaskKind kind) {
  const Tensor& y = batch.targets;
  const std::int64_t expected_dim = kind == TaskKind::sequence         ? 2
                                    : kind == TaskKind::classification ? 1
                                                                       : 3;
  if (!y.defined() || y.dim() != expected_dim)
    throw ShapeError("scored_per_example: " + to_string(kind) + " targets must have " +
                     std::to_string(expected_dim) + " dimensions, got " +
                     (y.defined() ? shape_str(y.shape()) : std::string("undefined")));
  const std::int64_t b_size = y.size(0);
  if (kind == TaskKind::classification) return std::vector<std::int64_t>(b_size, 1);
  std::vector<std::int64_t> out(b_size, 0);
  const std::int64_t t_max = y.size(1);
  if (kind == TaskKind::sequence) {
    const auto targets = on_cpu(y).to_vector<std::int64_t>();
    for (std::int64_t b = 0; b < b_size; ++b)
      for (std::int64_t t = 0; t < t_max; ++t) out[b] += targets[b * t_max + t] != kIgnore;
    return out;
  }
  if (batch.target_mask.defined() && batch.target_mask.shape() != Shape{b_size, t_max})
    throw ShapeError("scored_per_example: target_mask " + shape_str(batch.target_mask.shape()) +
                     " does not match targets " + shape_str(y.shape()) + " (expected (B, T))");
  const auto scored = scored_positions(batch);
  for (std::int64_t b = 0; b < b_size; ++b)
    for (std::int64_t t = 0; t < t_max; ++t) out[b] += scored[b * t_max + t];
  return out;
}

}  // namespace headgrad::train
