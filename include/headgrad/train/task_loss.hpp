// The loss and metrics of logits against a batch's targets, by task kind: the training loss
// (task_loss), the (correct, scored) counts and evaluate_logits's loss and accuracy. A
// Task's loss() and count_scored() use them for its kind(); the trainers ask the task.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "headgrad/core/tensor.hpp"
#include "headgrad/train/batch.hpp"
#include "headgrad/train/tasks.hpp"

namespace headgrad::train {

// One evaluation or training report.
struct Metrics {
  std::int64_t step = 0;
  double loss = 0.0;
  double accuracy = 0.0;     // correct / scored (token or label accuracy)
  std::int64_t correct = 0;  // scored targets predicted exactly
  std::int64_t scored = 0;
};

// A regression position counts as correct when its squared error, summed over the F_out
// coordinates, is below this. Regression tasks scale their targets so that a target row's
// mean squared norm is 1, so this is 10% of a target's energy.
inline constexpr double kRegressionTolerance = 0.1;

// Loss and accuracy of logits against a batch's targets. Sequence and classification:
// cross-entropy (ignore_index -100), accuracy = argmax hits / scored targets. Regression:
// the loss of task_loss, `scored` = the scored positions (target_mask, or all B*T),
// `correct` = scored positions whose summed squared error is below kRegressionTolerance.
// The logits may live on any device; the targets are used from wherever they are (copied
// to the logits' device for the loss, to the CPU for the count).
Metrics evaluate_logits(const Tensor& logits, const Batch& batch, TaskKind kind);

// The training loss, differentiable, on the logits' device (targets elsewhere are copied
// there). Sequence and classification: cross-entropy of logits against the batch's targets,
// the mean over the scored (not -100) targets. Regression: the mean over scored positions
// (batch.target_mask true, or every position when it is undefined) of the squared error
// summed over the F_out coordinates, sum_f (logits[b,t,f] - targets[b,t,f])^2; 0 when no
// position is scored. ShapeError when they do not match.
Tensor task_loss(const Tensor& logits, const Batch& batch, TaskKind kind);

// (correct, scored) of logits against a batch, counted as evaluate_logits counts them
// (the logits are read on the CPU).
std::pair<std::int64_t, std::int64_t> count_scored(const Tensor& logits, const Batch& batch,
                                                   TaskKind kind);

// The number of scored targets of each example of a batch (B entries, read on the CPU):
// sequence tasks count the targets that are not -100, classification tasks score 1 per
// example, regression tasks count the true entries of the example's target_mask row (T
// when the mask is undefined).
std::vector<std::int64_t> scored_per_example(const Batch& batch, TaskKind kind);

}  // namespace headgrad::train
