// train::Trainer: the training loop a researcher runs from a CLI or a notebook-like C++
// program. It draws batches from a Task (pure functions of the step, so a resumed run sees
// the same data), computes the loss (task_loss: cross-entropy with ignore_index -100, or
// the squared error for regression tasks), steps the
// optimizer (with optional gradient clipping and an LR schedule), evaluates every N steps,
// appends metrics to CSV and JSON lines, shows a progress bar (plain periodic lines when
// stderr is not a terminal), checkpoints every N steps and at the end, and resumes from
// the last checkpoint bitwise exactly (at a fixed thread count).
//
// Devices: the trainer runs where the model is. Its device is TrainerOptions::device, or
// the device of the model's parameters when that is unset; every parameter must be there
// (move the model with model.to(device) before building the optimizer). Batches are drawn
// on the CPU, as the tasks make them, and copied to the device before the forward
// function sees them; losses and accuracies are read back as CPU numbers. Checkpoints copy
// device tensors to the CPU to write them, and loading copies the file's values into the
// model's and optimizer's tensors wherever they live, so a checkpoint written on a GPU
// resumes on the CPU and the other way round. On a GPU every kernel runs on one stream
// without atomics, so a run is reproducible there too (its numbers differ from the CPU's
// in the last bits: float32 sums in another order).
//
// Files in out_dir:
//   metrics.csv      step,split,loss,accuracy,lr,elapsed_s,steps_per_s
//   metrics.jsonl    the same rows as JSON objects
//   checkpoint.npz   model (PyTorch names), optimizer/..., trainer/... (see checkpoint.hpp)
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "headgrad/distributed/data_parallel.hpp"
#include "headgrad/distributed/process_group.hpp"
#include "headgrad/nn/module.hpp"
#include "headgrad/optim/optimizer.hpp"
#include "headgrad/optim/schedule.hpp"
#include "headgrad/train/batch.hpp"
#include "headgrad/train/run_config.hpp"
#include "headgrad/train/task_loss.hpp"
#include "headgrad/train/tasks.hpp"

namespace headgrad::train {

struct TrainerOptions {
  std::int64_t steps = 1000;
  std::int64_t batch_size = 64;
  std::int64_t eval_every = 100;      // 0 = only at the end
  std::int64_t eval_batches = 8;      // validation batches per evaluation
  std::int64_t checkpoint_every = 0;  // 0 = only at the end
  std::int64_t log_every = 0;         // plain-line interval when not a terminal; 0 = eval_every
  double clip_grad_norm = 0.0;        // 0 = no clipping
  std::string out_dir;                // empty = write no files
  // Where the model is trained: unset = the device of the model's parameters (the CPU
  // for a model without any). The model must already be there.
  std::optional<Device> device;
  bool resume = false;  // continue from out_dir/checkpoint.npz if it exists
  // What this run is (model, task, seed, ...: see run_config.hpp). The trainer adds the
  // optimizer's type and hyperparameters and its own settings, records the whole in every
  // checkpoint, and on resume refuses a checkpoint whose configuration differs, naming each
  // field, except settings listed in config.explicit_settings (used, and logged).
  RunConfig config;
  // Data-parallel training over this group's ranks when it has more than one (for example
  // distributed::world() under mpirun): every rank runs the same Trainer; each trains on
  // its shard of every global batch of batch_size examples (a multiple of the group's
  // size), gradients are averaged by DistributedDataParallel with `data_parallel`'s
  // buckets, and the loss is weighted so that the step equals one process's on the whole
  // batch even when shards score different numbers of targets. Train metrics are summed
  // over ranks every step (one small all-reduce, which also carries stop_requested, so all
  // ranks stop together); every rank evaluates the validation batches itself. Only rank 0
  // prints progress and writes out_dir; every rank reads the checkpoint to resume (a folder
  // all ranks see), whatever world size wrote it. Null or one rank: a single process.
  distributed::ProcessGroup* group = nullptr;
  distributed::DataParallelOptions data_parallel;
  bool progress = true;  // progress bar / lines on stderr
  // Checked after every step; when it becomes true the trainer checkpoints and returns
  // (a CLI sets it from SIGINT).
  const std::atomic<bool>* stop_requested = nullptr;
  // Called after each backward, before clipping and the optimizer step, with the number
  // of the step being completed (1-based): the place to read gradients, e.g.
  // inspect::head_grad_norms.
  std::function<void(std::int64_t step)> after_backward;
  // Called after each evaluation with the training window's and the validation metrics
  // (both carry the step).
  std::function<void(const Metrics& train, const Metrics& validation)> on_evaluate;
};

struct TrainResult {
  std::int64_t steps_done = 0;    // the step the run ended at
  std::int64_t resumed_from = 0;  // 0 when it started fresh
  bool stopped_early = false;     // stop_requested
  // On resume: the settings given explicitly that differ from the checkpoint's, as
  // "optimizer.lr: 0.001 in the checkpoint, 0.003 now (given explicitly: 0.003 is used)".
  std::vector<std::string> overridden;
  Metrics last_train;
  Metrics last_validation;
  double seconds = 0.0;  // this call's training time (metrics' elapsed_s spans resumes)
};

// Logits for a batch: (B, T, V) for sequence tasks, (B, C) for classification; for
// regression tasks the predictions (B, T, F_out), F_out = the task's vocab_size().
using ForwardFn = std::function<Tensor(const Batch&)>;

// Mean loss and accuracy over validation-style batches 0 .. batches-1 of `split` (eval
// mode, no graph); the model's training mode is restored afterwards. Each batch is moved
// to the model's device (model.device()) before `forward` sees it.
Metrics evaluate(nn::Module& model, const ForwardFn& forward, const Task& task, Split split,
                 std::int64_t batches, std::int64_t batch_size);

class Trainer {
 public:
  Trainer(nn::Module& model, ForwardFn forward, const Task& task, optim::Optimizer& optimizer,
          TrainerOptions options, std::optional<optim::LRSchedule> schedule = std::nullopt);

  TrainResult fit();
  // Mean loss and accuracy over options.eval_batches validation batches (eval mode, no
  // graph); the model's training mode is restored afterwards.
  Metrics evaluate() const;
  // The device the trainer runs on (see TrainerOptions::device).
  Device device() const { return device_; }
  // options.config with the trainer's own fields: what checkpoints record.
  const RunConfig& run_config() const { return run_config_; }

  // The running training average between evaluations; checkpoints carry it, so that a
  // resumed run's first report averages the same steps as an uninterrupted one.
  struct Window {
    double loss_sum = 0;
    std::int64_t correct = 0, scored = 0, steps = 0;
  };

 private:
  struct Resumed {
    std::int64_t step = 0;
    double elapsed_s = 0;  // training time before this call
    Window window;
    std::vector<std::string> overridden;
    std::vector<std::string> notes;  // for the progress display
  };
  // One fit() call's state: where it resumed, the metrics files, the data-parallel
  // wrapper, the progress display and the training window (trainer.cpp).
  struct Run;
  // One training step's numbers (over every rank when data-parallel) and whether to stop.
  struct StepOutcome {
    double loss = 0;
    std::int64_t correct = 0, scored = 0;
    bool stop = false;
  };
  // Forward, loss, backward, clipping and the optimizer step of step `step` (0-based).
  StepOutcome train_step(std::int64_t step);
  // Data-parallel: one all-reduce of the step's counts and stop flag; `loss` is weighted so
  // that the shards' gradients average to the whole batch's.
  StepOutcome reduce_over_ranks(Tensor& loss, const Tensor& logits, StepOutcome local) const;
  // The evaluation after step `step`: validation metrics, the metrics files, on_evaluate,
  // the progress line; a regular evaluation starts a new training window.
  void evaluate_and_log(Run& run, std::int64_t step, TrainResult& result);
  // After the loop: the final checkpoint and the result's totals.
  void finish(Run& run, std::int64_t step, TrainResult& result);
  // Stale temporary files of an interrupted save removed, then try_resume (when asked).
  Resumed start_or_resume();
  static RunConfig make_run_config(const TrainerOptions& options, const optim::Optimizer& optimizer,
                                   const std::optional<optim::LRSchedule>& schedule);
  void save(std::int64_t step, double elapsed_s, const Window& window) const;
  // Reads and checks out_dir/checkpoint.npz completely (trainer entries, configuration,
  // model and optimizer entries) before loading anything; nothing when there is none.
  Resumed try_resume();

  nn::Module& model_;
  ForwardFn forward_;
  const Task& task_;
  optim::Optimizer& optimizer_;
  TrainerOptions options_;
  std::optional<optim::LRSchedule> schedule_;
  Device device_;
  RunConfig run_config_;
  distributed::ProcessGroup* group_ = nullptr;  // data-parallel: the group (size > 1)
  bool writes_ = true;                          // false on ranks other than 0
};

}  // namespace headgrad::train
