// The training loop (see train/trainer.hpp).
#include "headgrad/train/trainer.hpp"

#include <cmath>
#include <cstdio>
#include <filesystem>

#include "headgrad/autograd/grad_mode.hpp"
#include "headgrad/core/generator.hpp"
#include "headgrad/ops/loss.hpp"
#include "headgrad/ops/reduce.hpp"
#include "headgrad/ops/shape_ops.hpp"
#include "headgrad/optim/clip.hpp"
#include "headgrad/train/checkpoint.hpp"
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

}  // namespace

Metrics evaluate_logits(const Tensor& logits, const Batch& batch, TaskKind kind) {
  NoGradGuard no_grad;
  auto [l, t] = flat(logits, batch, kind);
  Metrics m;
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
      device_(options_.device.value_or(model.device())) {
  if (options_.steps < 0 || options_.batch_size <= 0 || options_.eval_batches <= 0)
    throw ValueError("Trainer: steps must be >= 0 and batch_size, eval_batches positive");
  if (options_.resume && options_.out_dir.empty())
    throw ValueError("Trainer: resume needs an out_dir holding checkpoint.npz");
  auto tensors = model_.named_parameters();
  for (auto& b : model_.named_buffers()) tensors.push_back(b);
  for (const auto& [name, t] : tensors)
    if (t.defined() && t.device() != device_)
      throw DeviceError("Trainer: the model's '" + name + "' is on " + t.device().str() +
                        ", the trainer runs on " + device_.str() +
                        ": move the model first (model.to(device)), then build the optimizer");
}

Tensor task_loss(const Tensor& logits, const Batch& batch, TaskKind kind) {
  auto [l, t] = flat(logits, batch, kind);
  return cross_entropy(l, beside(t, l), Reduction::mean, kIgnore);
}

Metrics evaluate(nn::Module& model, const ForwardFn& forward, const Task& task, Split split,
                 std::int64_t batches, std::int64_t batch_size) {
  // Restores the training mode however the loop ends.
  struct ModeGuard {
    nn::Module& model;
    bool was_training;
    ~ModeGuard() { model.train(was_training); }
  } mode{model, model.is_training()};
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

void Trainer::save(std::int64_t step) const {
  if (options_.out_dir.empty()) return;
  nn::StateDict state;
  state.insert("step", scalar_tensor(static_cast<double>(step), kInt64));
  state.insert("default_generator", generator_state(default_generator()));
  save_checkpoint((std::filesystem::path(options_.out_dir) / "checkpoint.npz").string(), model_,
                  &optimizer_, state);
}

std::int64_t Trainer::try_resume() {
  const auto path = std::filesystem::path(options_.out_dir) / "checkpoint.npz";
  if (!std::filesystem::exists(path)) return 0;
  // The trainer's own entries are checked before anything is loaded into the model.
  const nn::StateDict entries = load_npz(path.string());
  const Tensor* step = entries.find(std::string(kTrainerPrefix) + "step");
  const Tensor* gen = entries.find(std::string(kTrainerPrefix) + "default_generator");
  if (!step || !gen)
    throw ValueError("Trainer: " + path.string() +
                     " lacks trainer/step or trainer/default_generator: not a trainer checkpoint");
  Generator restored;
  set_generator_state(restored, *gen);  // validates
  load_checkpoint(path.string(), model_, &optimizer_);
  default_generator() = restored;
  return static_cast<std::int64_t>(value_of(*step));
}

TrainResult Trainer::fit() {
  TrainResult result;
  const std::int64_t start = options_.resume ? try_resume() : 0;
  result.resumed_from = start;
  detail::MetricsLog log;
  if (!options_.out_dir.empty()) log = detail::MetricsLog(options_.out_dir, start);
  const std::int64_t eval_every = options_.eval_every > 0 ? options_.eval_every : options_.steps;
  detail::Progress progress(start, options_.steps,
                            options_.log_every > 0 ? options_.log_every : eval_every,
                            options_.progress);
  if (start > 0) progress.message("resumed from step " + std::to_string(start));

  model_.train();
  double window_loss = 0;
  std::int64_t window_correct = 0, window_scored = 0, window_steps = 0;
  std::int64_t step = start;
  while (step < options_.steps) {
    if (schedule_) schedule_->apply(optimizer_, step);
    // Drawn on the CPU (a pure function of the step), then copied to the device.
    const Batch cpu_batch = task_.batch(Split::train, step, options_.batch_size);
    const Batch batch = cpu_batch.to(device_);
    const Tensor logits = forward_(batch);
    auto [l, t] = flat(logits, batch, task_.kind());
    Tensor loss = cross_entropy(l, beside(t, l), Reduction::mean, kIgnore);
    optimizer_.zero_grad();
    loss.backward();
    if (options_.after_backward) options_.after_backward(step + 1);
    if (options_.clip_grad_norm > 0)
      optim::clip_grad_norm_(optimizer_.params(), options_.clip_grad_norm);
    optimizer_.step();
    ++step;

    // The CPU batch's targets: no copy back from the device for the count.
    auto [correct, scored] = count_correct(l, flat(logits, cpu_batch, task_.kind()).second);
    window_loss += value_of(loss);
    window_correct += correct;
    window_scored += scored;
    ++window_steps;
    result.last_train = {
        step, window_loss / static_cast<double>(window_steps),
        window_scored > 0 ? static_cast<double>(window_correct) / static_cast<double>(window_scored)
                          : 0.0,
        window_correct, window_scored};
    progress.update(step, result.last_train.loss, result.last_train.accuracy);

    const bool stop = options_.stop_requested && options_.stop_requested->load();
    if (step % eval_every == 0 || step == options_.steps || stop) {
      result.last_validation = evaluate();
      result.last_validation.step = step;
      const double elapsed = progress.elapsed_seconds(), rate = progress.steps_per_second(step);
      log.write(step, "train", result.last_train.loss, result.last_train.accuracy, optimizer_.lr(),
                elapsed, rate);
      log.write(step, "validation", result.last_validation.loss, result.last_validation.accuracy,
                optimizer_.lr(), elapsed, rate);
      if (options_.on_evaluate) options_.on_evaluate(result.last_train, result.last_validation);
      char line[160];
      std::snprintf(
          line, sizeof line, "step %lld: train loss %.4f acc %.1f%% | val loss %.4f acc %.1f%%",
          static_cast<long long>(step), result.last_train.loss, 100 * result.last_train.accuracy,
          result.last_validation.loss, 100 * result.last_validation.accuracy);
      progress.message(line);
      window_loss = 0;
      window_correct = window_scored = window_steps = 0;
    }
    if (options_.checkpoint_every > 0 && step % options_.checkpoint_every == 0) save(step);
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
  save(step);
  result.steps_done = step;
  result.seconds = progress.elapsed_seconds();
  return result;
}

}  // namespace headgrad::train
