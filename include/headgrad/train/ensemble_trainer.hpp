// train::EnsembleTrainer: trains an nn::GPTEnsemble, each member on its own task (its own
// data stream), learning-rate schedule and clipping norm, as train::Trainer trains one GPT.
//
// Step s (0-based) of every member still in the ensemble, as Trainer::fit does it alone:
//   lr_k = schedule_k.lr_at(s)                    (members without a schedule keep theirs)
//   batch_k = task_k.batch(Split::train, s, batch_size)
//   logits = ensemble(stack of the members' inputs)          (K, B, T, V), one forward
//   loss_k = task_loss(logits[k], batch_k)                   per member, then one backward
//                                                            of sum_k loss_k
//   after_backward(member, s + 1, batch_k)
//   clip member k's gradients to clip_k (0: none); optimizer step (each member its own lr)
//   every eval_every steps and at the last: on_evaluate(member, train window metrics);
//   it returns true to stop that member, which then leaves the ensemble (early stop)
// A member that leaves, or finishes, is handed to on_finish as an ordinary GPT with its
// final weights. Members are named by their index in `members` throughout, whoever left.
//
// On the CPU at a fixed thread count each member's trajectory is bitwise the one
// Trainer::fit gives that member's GPT alone (tests/train/test_ensemble_trainer.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "headgrad/core/device.hpp"
#include "headgrad/nn/gpt.hpp"
#include "headgrad/nn/gpt_ensemble.hpp"
#include "headgrad/optim/ensemble_adamw.hpp"
#include "headgrad/optim/schedule.hpp"
#include "headgrad/train/tasks.hpp"
#include "headgrad/train/trainer.hpp"

namespace headgrad::train {

struct EnsembleMember {
  const Task* task = nullptr;                 // the member's data; must outlive fit()
  std::optional<optim::LRSchedule> schedule;  // none: the optimizer's lr for member k
  double clip_grad_norm = 0.0;                // 0: no clipping
};

struct EnsembleFinish {
  std::int64_t steps_done = 0;
  bool stopped_early = false;
  Metrics last_train;  // the last evaluation's training-window metrics
};

struct EnsembleTrainerOptions {
  std::int64_t steps = 1000;
  std::int64_t batch_size = 32;
  std::int64_t eval_every = 100;  // <= 0: only at the end
  // Called with (member, step just taken, the member's batch) after the backward pass and
  // before clipping; the ensemble's gradients are in place.
  std::function<void(std::int64_t, std::int64_t, const Batch&)> after_backward;
  // Called with (member, training-window metrics, .step set) at each evaluation step;
  // true stops the member (it leaves after this step).
  std::function<bool(std::int64_t, const Metrics&)> on_evaluate;
  // Called once per member when it leaves or at the end, with its final weights.
  std::function<void(std::int64_t, std::shared_ptr<nn::GPT>, const EnsembleFinish&)> on_finish;
  // Called after every step with the number of members still training.
  std::function<void(std::int64_t step, std::int64_t active)> on_step;
};

class EnsembleTrainer {
 public:
  // One EnsembleMember per ensemble member (same order); the optimizer must be built on
  // ensemble.parameters() with one options entry per member. All tasks must be of one
  // kind and give batches of one shape.
  EnsembleTrainer(nn::GPTEnsemble& ensemble, optim::EnsembleAdamW& optimizer,
                  std::vector<EnsembleMember> members, EnsembleTrainerOptions options);

  void fit();

  // The original index of the member at position `position` of the ensemble now.
  std::int64_t member_at(std::int64_t position) const;
  // Member `member`'s current weights as a GPT (ValueError when it has left).
  std::shared_ptr<nn::GPT> member_model(std::int64_t member) const;

 private:
  using Window = Trainer::Window;  // per member, indexed by original member index
  // One step's batches: each active member's as drawn (CPU), the stacked copy on the
  // ensemble's device, and each member's slice of it (the CPU batches on the CPU).
  struct StepBatches {
    std::vector<Batch> cpu, member;
    Batch stacked;
  };
  std::int64_t position_of(std::int64_t member) const;
  Batch stacked_batch(const std::vector<Batch>& batches) const;
  StepBatches draw(std::int64_t step);
  // The ensemble's forward; each member's loss (its task's), added to `windows` with its
  // counts; returns the members' summed loss for one backward.
  Tensor forward_and_score(const StepBatches& batches, std::vector<Window>& windows);
  // Backward of `total`, after_backward, each member's clipping and the optimizer step.
  void backward_and_step(const Tensor& total, const StepBatches& batches, std::int64_t step);
  // The evaluation after step `step`: each active member's window reported to on_evaluate
  // (a regular evaluation starts a new window); the members that asked to stop.
  std::vector<std::int64_t> report_windows(std::int64_t step, std::int64_t eval_every,
                                           std::vector<Window>& windows);
  void leave(const std::vector<std::int64_t>& stopping, std::int64_t step);

  nn::GPTEnsemble& ensemble_;
  optim::EnsembleAdamW& optimizer_;
  std::vector<EnsembleMember> members_;
  EnsembleTrainerOptions options_;
  std::vector<std::int64_t> active_;  // original member indices, in ensemble order
  std::vector<EnsembleFinish> finish_;
};

}  // namespace headgrad::train
