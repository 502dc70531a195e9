// Gathering rows by integer index: index_select and the embedding lookup.
#pragma once

#include <optional>
#include <vector>

#include "headgrad/core/tensor.hpp"

namespace headgrad {

// Rows of x along dim picked by a 1-d int64 `index` (repeats allowed; the backward
// scatters-adds).
Tensor index_select(const Tensor& x, std::int64_t dim, const Tensor& index);

// weight (V, D), indices int64 of any shape -> (*indices.shape, D). The backward adds each
// looked-up row's gradient into weight's gradient; rows equal to padding_idx get none.
Tensor embedding(const Tensor& weight, const Tensor& indices,
                 std::optional<std::int64_t> padding_idx = std::nullopt);

// x with `value` (broadcast to the region x[indices]) written there, or added when
// `accumulate` (repeated positions add up; without it the last one written wins), as a new
// tensor: torch.index_put. Differentiable in x and value: x's gradient is zero where it was
// overwritten, value's is the output gradient read at the region, summed to its shape.
Tensor index_put(const Tensor& x, const std::vector<indexing::TensorIndex>& indices,
                 const Tensor& value, bool accumulate = false);

// One-hot encoding of int64 `indices` (values in [0, num_classes)) as float32 (or dtype).
Tensor one_hot(const Tensor& indices, std::int64_t num_classes, DType dtype = DType::float32);

}  // namespace headgrad
