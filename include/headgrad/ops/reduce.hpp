// Reductions over dims (negative dims allowed, empty `dims` = all dims) with keepdim, and
// sum_to, the helper that reduces a broadcast gradient back to an input's shape.
#pragma once

#include "headgrad/core/tensor.hpp"

namespace headgrad {

Tensor sum(const Tensor& x);  // all elements -> 0-d
Tensor sum(const Tensor& x, const Shape& dims, bool keepdim = false);
Tensor mean(const Tensor& x);
Tensor mean(const Tensor& x, const Shape& dims, bool keepdim = false);
// Variance with Bessel's correction by default (correction = 1), like torch.var.
Tensor var(const Tensor& x, const Shape& dims, bool keepdim = false, std::int64_t correction = 1);
Tensor var(const Tensor& x);  // all elements, correction 1; var(x, {}, false, 0) for none

// max over one dim: values and the int64 index of the first maximum. The gradient goes to
// that index only.
struct MaxResult {
  Tensor values;
  Tensor indices;
};
MaxResult max(const Tensor& x, std::int64_t dim, bool keepdim = false);
// max of all elements (0-d); the gradient is split evenly between tied maxima, as PyTorch.
Tensor max(const Tensor& x);
// amax over several dims (gradient split evenly between ties).
Tensor amax(const Tensor& x, const Shape& dims, bool keepdim = false);
// Index of the maximum along dim (not differentiable).
Tensor argmax(const Tensor& x, std::int64_t dim, bool keepdim = false);

// Sums `x` over the dims that were broadcast to reach its shape from `shape`: the
// gradient of broadcasting. Differentiable (its backward is expand).
Tensor sum_to(const Tensor& x, const Shape& shape);

}  // namespace headgrad
