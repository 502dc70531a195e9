// The training loop (see train/trainer.hpp).
#include "headgrad/train/trainer.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "headgrad/autograd/grad_mode.hpp"
#include "headgrad/core/generator.hpp"
#include "headgrad/ops/elementwise.hpp"
#include "headgrad/ops/loss.hpp"
#include "headgrad/ops/reduce.hpp"
#include "headgrad/ops/shape_ops.hpp"
#include "headgrad/optim/clip.hpp"
#include "headgrad/train/checkpoint.hpp"
#include "nn/training_mode_guard.hpp"
#include "train/atomic_file.hpp"
#include "train/progress.hpp"

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

Trainer::Trainer(nn::Module& model, ForwardFn forward, const Task& task,
                 optim::Optimizer& optimizer, TrainerOptions options,
                 std::optional<optim::LRSchedule> schedule)
    : model_(model),
      forward_(std::move(forward)),
      task_(task),
      optimizer_(optimizer),
      options_(std::move(options)),
      schedule_(std::move(schedule)),
      device_(options_.device.value_or(model.device())),
      run_config_(make_run_config(options_, optimizer, schedule_)) {
  if (options_.steps < 0 || options_.batch_size <= 0 || options_.eval_batches <= 0)
    throw ValueError("Trainer: steps must be >= 0 and batch_size, eval_batches positive");
  if (options_.resume && options_.out_dir.empty())
    throw ValueError("Trainer: resume needs an out_dir holding checkpoint.npz");
  if (options_.group != nullptr && options_.group->size() > 1) {
    const int ranks = options_.group->size();
    if (options_.batch_size % ranks != 0)
      throw ValueError("Trainer: batch_size " + std::to_string(options_.batch_size) +
                       " does not divide over " + std::to_string(ranks) +
                       " ranks: use a multiple of " + std::to_string(ranks));
    if (!device_.is_cpu())
      throw DeviceError(
          "Trainer: data-parallel training over MPI runs on the CPU; the model is on " +
          device_.str());
    group_ = options_.group;
    // Only rank 0 speaks and writes.
    if (group_->rank() != 0) {
      options_.progress = false;
      writes_ = false;
    }
  }
  auto tensors = model_.named_parameters();
  for (auto& b : model_.named_buffers()) tensors.push_back(b);
  for (const auto& [name, t] : tensors)
    if (t.defined() && t.device() != device_)
      throw DeviceError("Trainer: the model's '" + name + "' is on " + t.device().str() +
                        ", the trainer runs on " + device_.str() +
                        ": move the model first (model.to(device)), then build the optimizer");
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

Metrics evaluate(nn::Module& model, const ForwardFn& forward, const Task& task, Split split,
                 std::int64_t batches, std::int64_t batch_size) {
  nn::detail::TrainingModeGuard mode(model);  // restored however the loop ends
  model.eval();
  NoGradGuard no_grad;
  const Device device = model.device();
  double loss_sum = 0;
  std::int64_t correct_sum = 0, scored_sum = 0;
  for (std::int64_t i = 0; i < batches; ++i) {
    const Batch batch = task.batch(split, i, batch_size).to(device);
    Metrics m = evaluate_logits(forward(batch), batch, task.kind());
    loss_sum += m.loss * static_cast<double>(m.scored);
    correct_sum += m.correct;
    scored_sum += m.scored;
  }
  Metrics out;
  out.correct = correct_sum;
  out.scored = scored_sum;
  out.loss = scored_sum > 0 ? loss_sum / static_cast<double>(scored_sum) : 0.0;
  out.accuracy =
      scored_sum > 0 ? static_cast<double>(correct_sum) / static_cast<double>(scored_sum) : 0.0;
  return out;
}

Metrics Trainer::evaluate() const {
  return train::evaluate(model_, forward_, task_, Split::validation, options_.eval_batches,
                         options_.batch_size);
}

TrainResult Trainer::fit() {
  TrainResult result;
  std::vector<std::string> notes;
  if (!options_.out_dir.empty() && writes_) {
    const auto checkpoint = std::filesystem::path(options_.out_dir) / "checkpoint.npz";
    if (const int n = detail::remove_stale_temp_files(checkpoint); n > 0)
      notes.push_back("removed " + std::to_string(n) +
                      " temporary file(s) of an interrupted checkpoint save");
  }
  // Everything in the checkpoint is checked before the metrics files are touched.
  Resumed resumed = options_.resume ? try_resume() : Resumed{};
  const std::int64_t start = resumed.step;
  result.resumed_from = start;
  result.overridden = resumed.overridden;
  notes.insert(notes.end(), resumed.notes.begin(), resumed.notes.end());
  detail::MetricsLog log;
  if (!options_.out_dir.empty() && writes_) log = detail::MetricsLog(options_.out_dir, start);
  // Data-parallel over the group's ranks (after the resume: every rank loaded the same
  // checkpoint; the wrapper checks the models agree and starts all from rank 0's).
  std::optional<distributed::DistributedDataParallel> data_parallel;
  if (group_ != nullptr) data_parallel.emplace(model_, *group_, options_.data_parallel);
  const std::int64_t eval_every = options_.eval_every > 0 ? options_.eval_every : options_.steps;
  detail::Progress progress(start, options_.steps,
                            options_.log_every > 0 ? options_.log_every : eval_every,
                            options_.progress);
  if (writes_)
    for (const auto& note : notes) progress.notice(note);  // rank 0 speaks for all
  if (start > 0) progress.message("resumed from step " + std::to_string(start));
  auto elapsed = [&] { return resumed.elapsed_s + progress.elapsed_seconds(); };

  model_.train();
  Window window = resumed.window;
  std::int64_t step = start;
  while (step < options_.steps) {
    if (schedule_) schedule_->apply(optimizer_, step);
    // Drawn on the CPU (a pure function of the step), then copied to the device.
    // Data-parallel: this rank's shard of the global batch.
    const Batch global_batch = task_.batch(Split::train, step, options_.batch_size);
    const Batch cpu_batch =
        group_ != nullptr ? global_batch.shard(group_->rank(), group_->size()) : global_batch;
    const Batch batch = cpu_batch.to(device_);
    const Tensor logits = forward_(batch);
    Tensor loss = task_loss(logits, batch, task_.kind());
    // The CPU batch's targets: no copy back from the device for the count (regression
    // errors are computed where the predictions are, against the device batch).
    auto [correct, scored] = count_scored(
        logits, task_.kind() == TaskKind::regression ? batch : cpu_batch, task_.kind());
    double step_loss = value_of(loss);
    bool stop = options_.stop_requested && options_.stop_requested->load();
    if (group_ != nullptr) {
      // One all-reduce of the step's counts: the global loss and accuracy, the weight that
      // makes the shards' gradients average to the whole batch's, and a common stop.
      const double local_loss_sum = scored > 0 ? step_loss * static_cast<double>(scored) : 0.0;
      Tensor sums = from_vector<double>({static_cast<double>(scored), static_cast<double>(correct),
                                         local_loss_sum, stop ? 1.0 : 0.0},
                                        {4});
      group_->all_reduce(sums);
      const auto total = sums.to_vector<double>();
      const double weight =
          total[0] > 0 ? static_cast<double>(scored) * group_->size() / total[0] : 0.0;
      // A shard without scored targets still takes part in the gradient all-reduce.
      loss = scored > 0 ? loss * weight : (logits * 0.0).sum();
      correct = static_cast<std::int64_t>(total[1]);
      scored = static_cast<std::int64_t>(total[0]);
      step_loss = total[0] > 0 ? total[2] / total[0] : 0.0;
      stop = total[3] > 0;
    }
    optimizer_.zero_grad();
    loss.backward();
    if (options_.after_backward) options_.after_backward(step + 1);
    if (options_.clip_grad_norm > 0)
      optim::clip_grad_norm_(optimizer_.params(), options_.clip_grad_norm);
    optimizer_.step();
    ++step;

    window.loss_sum += step_loss;
    window.correct += correct;
    window.scored += scored;
    ++window.steps;
    result.last_train = {
        step, window.loss_sum / static_cast<double>(window.steps),
        window.scored > 0 ? static_cast<double>(window.correct) / static_cast<double>(window.scored)
                          : 0.0,
        window.correct, window.scored};
    progress.update(step, result.last_train.loss, result.last_train.accuracy);

    if (step % eval_every == 0 || step == options_.steps || stop) {
      result.last_validation = evaluate();
      result.last_validation.step = step;
      const double rate = progress.steps_per_second(step);
      log.write(step, "train", result.last_train.loss, result.last_train.accuracy, optimizer_.lr(),
                elapsed(), rate);
      log.write(step, "validation", result.last_validation.loss, result.last_validation.accuracy,
                optimizer_.lr(), elapsed(), rate);
      if (options_.on_evaluate) options_.on_evaluate(result.last_train, result.last_validation);
      char line[160];
      std::snprintf(
          line, sizeof line, "step %lld: train loss %.4f acc %.1f%% | val loss %.4f acc %.1f%%",
          static_cast<long long>(step), result.last_train.loss, 100 * result.last_train.accuracy,
          result.last_validation.loss, 100 * result.last_validation.accuracy);
      progress.message(line);
      // Only a regular evaluation starts a new window: a report at a stop or at the end
      // leaves it running, so a run continued from here averages as one that never paused.
      if (step % eval_every == 0) window = Window{};
    }
    if (options_.checkpoint_every > 0 && step % options_.checkpoint_every == 0)
      save(step, elapsed(), window);
    if (stop) {
      result.stopped_early = true;
      break;
    }
  }
  progress.finish();
  if (step == start && start >= options_.steps) {
    result.last_validation = evaluate();
    result.last_validation.step = step;
  }
  save(step, elapsed(), window);
  result.steps_done = step;
  result.seconds = progress.elapsed_seconds();
  return result;
}

}  // namespace headgrad::train
