// The training loop (see train/trainer.hpp).
#include "headgrad/train/trainer.hpp"

#include <cstdio>
#include <filesystem>
#include <tuple>

#include "headgrad/autograd/grad_mode.hpp"
#include "headgrad/core/interrupt.hpp"
#include "headgrad/ops/elementwise.hpp"
#include "headgrad/ops/reduce.hpp"
#include "headgrad/optim/clip.hpp"
#include "headgrad/train/atomic_write.hpp"
#include "headgrad/train/checkpoint.hpp"
#include "nn/training_mode_guard.hpp"
#include "train/progress.hpp"

namespace headgrad::train {

namespace {

// A 0-d tensor's value, read on the CPU.
double value_of(const Tensor& t) { return (t.device().is_cpu() ? t : t.to(Device::cpu())).item(); }

}  // namespace

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
    Metrics m = task.metrics(forward(batch), batch);
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

struct Trainer::Run {
  Run(Trainer& t, TrainResult& result)
      : resumed(t.start_or_resume()),
        eval_every(t.options_.eval_every > 0 ? t.options_.eval_every : t.options_.steps),
        progress(resumed.step, t.options_.steps,
                 t.options_.log_every > 0 ? t.options_.log_every : eval_every, t.options_.progress),
        window(resumed.window) {
    result.resumed_from = resumed.step;
    result.overridden = resumed.overridden;
    if (!t.options_.out_dir.empty() && t.writes_)
      log = detail::MetricsLog(t.options_.out_dir, resumed.step);
    // After the resume: every rank loaded the same checkpoint; the wrapper checks that the
    // models agree and starts all from rank 0's.
    if (t.group_ != nullptr) data_parallel.emplace(t.model_, *t.group_, t.options_.data_parallel);
    if (t.writes_)
      for (const auto& note : resumed.notes) progress.notice(note);  // rank 0 speaks for all
    if (resumed.step > 0) progress.message("resumed from step " + std::to_string(resumed.step));
  }
  double elapsed() const { return resumed.elapsed_s + progress.elapsed_seconds(); }
  // Adds a step to the training window; the window's running metrics.
  Metrics add(const StepOutcome& s, std::int64_t step) {
    window.loss_sum += s.loss;
    window.correct += s.correct;
    window.scored += s.scored;
    ++window.steps;
    return {step, window.loss_sum / static_cast<double>(window.steps),
            window.scored > 0
                ? static_cast<double>(window.correct) / static_cast<double>(window.scored)
                : 0.0,
            window.correct, window.scored};
  }

  Resumed resumed;
  std::int64_t eval_every;
  detail::Progress progress;
  Window window;
  detail::MetricsLog log;
  std::optional<distributed::DistributedDataParallel> data_parallel;
};

Trainer::Resumed Trainer::start_or_resume() {
  std::vector<std::string> notes;
  if (!options_.out_dir.empty() && writes_) {
    // Left by a process killed while it saved a checkpoint or rewrote the metrics.
    if (const int n = remove_stale_temp_files(options_.out_dir); n > 0)
      notes.push_back("removed " + std::to_string(n) +
                      " temporary file(s) of an interrupted save in " + options_.out_dir);
  }
  // Everything in the checkpoint is checked before the metrics files are touched.
  Resumed resumed = options_.resume ? try_resume() : Resumed{};
  resumed.notes.insert(resumed.notes.begin(), notes.begin(), notes.end());
  return resumed;
}

TrainResult Trainer::fit() {
  TrainResult result;
  Run run(*this, result);
  model_.train();
  std::int64_t step = run.resumed.step;
  bool stop = false;
  while (step < options_.steps && !stop) {
    const StepOutcome outcome = train_step(step);
    ++step;
    stop = outcome.stop;
    result.last_train = run.add(outcome, step);
    run.progress.update(step, result.last_train.loss, result.last_train.accuracy);
    if (step % run.eval_every == 0 || step == options_.steps || stop)
      evaluate_and_log(run, step, result);
    if (options_.checkpoint_every > 0 && step % options_.checkpoint_every == 0)
      save(step, run.elapsed(), run.window);
  }
  result.stopped_early = stop;
  finish(run, step, result);
  // An interrupt (Ctrl-C in Python) stopped the loop as stop_requested does; the caller
  // learns it from the exception, after the evaluation and the checkpoint are written.
  if (stop && interrupt_requested())
    throw Interrupted(
        "Trainer.fit: interrupted after step " + std::to_string(step) + " of " +
        std::to_string(options_.steps) +
        (options_.out_dir.empty() || !writes_
             ? std::string()
             : "; its checkpoint is in " + options_.out_dir + " (resume continues from it)"));
  return result;
}

Trainer::StepOutcome Trainer::train_step(std::int64_t step) {
  if (schedule_) schedule_->apply(optimizer_, step);
  // Drawn on the CPU (a pure function of the step), then copied to the device.
  // Data-parallel: this rank's shard of the global batch.
  const Batch global_batch = task_.batch(Split::train, step, options_.batch_size);
  const Batch batch =
      (group_ != nullptr ? global_batch.shard(group_->rank(), group_->size()) : global_batch)
          .to(device_);
  const Tensor logits = forward_(batch);
  Tensor loss = task_.loss(logits, batch);
  StepOutcome outcome;
  std::tie(outcome.correct, outcome.scored) = task_.count_scored(logits, batch);
  outcome.loss = value_of(loss);
  outcome.stop =
      (options_.stop_requested && options_.stop_requested->load()) || interrupt_requested();
  if (group_ != nullptr) outcome = reduce_over_ranks(loss, logits, outcome);
  optimizer_.zero_grad();
  loss.backward();
  if (options_.after_backward) options_.after_backward(step + 1);
  if (options_.clip_grad_norm > 0)
    optim::clip_grad_norm_(optimizer_.params(), options_.clip_grad_norm);
  optimizer_.step();
  return outcome;
}

Trainer::StepOutcome Trainer::reduce_over_ranks(Tensor& loss, const Tensor& logits,
                                                StepOutcome local) const {
  // One all-reduce: the global loss and accuracy, the weight that makes the shards'
  // gradients average to the whole batch's, and a common stop.
  const double local_loss_sum =
      local.scored > 0 ? local.loss * static_cast<double>(local.scored) : 0.0;
  Tensor sums =
      from_vector<double>({static_cast<double>(local.scored), static_cast<double>(local.correct),
                           local_loss_sum, local.stop ? 1.0 : 0.0},
                          {4});
  group_->all_reduce(sums);
  const auto total = sums.to_vector<double>();
  const double weight =
      total[0] > 0 ? static_cast<double>(local.scored) * group_->size() / total[0] : 0.0;
  // A shard without scored targets still takes part in the gradient all-reduce.
  loss = local.scored > 0 ? loss * weight : (logits * 0.0).sum();
  return {total[0] > 0 ? total[2] / total[0] : 0.0, static_cast<std::int64_t>(total[1]),
          static_cast<std::int64_t>(total[0]), total[3] > 0};
}

void Trainer::evaluate_and_log(Run& run, std::int64_t step, TrainResult& result) {
  result.last_validation = evaluate();
  result.last_validation.step = step;
  const Metrics& train = result.last_train;
  const Metrics& validation = result.last_validation;
  const double rate = run.progress.steps_per_second(step);
  run.log.write(step, "train", train.loss, train.accuracy, optimizer_.lr(), run.elapsed(), rate);
  run.log.write(step, "validation", validation.loss, validation.accuracy, optimizer_.lr(),
                run.elapsed(), rate);
  if (options_.on_evaluate) options_.on_evaluate(train, validation);
  char line[160];
  std::snprintf(line, sizeof line,
                "step %lld: train loss %.4f acc %.1f%% | val loss %.4f acc %.1f%%",
                static_cast<long long>(step), train.loss, 100 * train.accuracy, validation.loss,
                100 * validation.accuracy);
  run.progress.message(line);
  // Only a regular evaluation starts a new window: a report at a stop or at the end leaves
  // it running, so a run continued from here averages as one that never paused.
  if (step % run.eval_every == 0) run.window = Window{};
}

void Trainer::finish(Run& run, std::int64_t step, TrainResult& result) {
  run.progress.finish();
  if (step == run.resumed.step && step >= options_.steps) {
    result.last_validation = evaluate();
    result.last_validation.step = step;
  }
  save(step, run.elapsed(), run.window);
  result.steps_done = step;
  result.seconds = run.progress.elapsed_seconds();
}

}  // namespace headgrad::train
