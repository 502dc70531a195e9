// Losses.
#pragma once

#include <string>

#include "headgrad/core/reduction.hpp"
#include "headgrad/core/tensor.hpp"

namespace headgrad {

// Fused log_softmax + negative log likelihood, like torch.nn.functional.cross_entropy with
// class indices: logits (N, C) with int64 targets (N), logits (C) with a 0-d target, or
// logits (N, C, d1, ...) with targets (N, d1, ...). Targets equal to ignore_index add no
// loss and no gradient; the mean divides by the number of targets not ignored (a mean
// over zero targets is NaN, as in PyTorch). label_smoothing in [0, 1).
Tensor cross_entropy(const Tensor& logits, const Tensor& targets,
                     Reduction reduction = Reduction::mean, std::int64_t ignore_index = -100,
                     double label_smoothing = 0.0);

// Mean squared error between same-shaped (or broadcastable) input and target.
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::mean);

}  // namespace headgrad
