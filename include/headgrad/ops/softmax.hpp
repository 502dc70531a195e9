// softmax and log_softmax over any dim, numerically stable (the row max is subtracted).
//
// SoftmaxMode::safe: a row whose entries are all -inf (every key masked) yields zeros in
// the output and in the gradient, instead of the NaN that the plain formula (0/0) and
// PyTorch 1.13 give. In standard mode such a row is NaN, as in PyTorch.
#pragma once

#include "headgrad/core/tensor.hpp"

namespace headgrad {

enum class SoftmaxMode { standard, safe };

Tensor softmax(const Tensor& x, std::int64_t dim, SoftmaxMode mode = SoftmaxMode::standard);
// For an all -inf row log_softmax is NaN in standard mode (as PyTorch) and, in safe mode,
// -inf with a zero gradient.
Tensor log_softmax(const Tensor& x, std::int64_t dim, SoftmaxMode mode = SoftmaxMode::standard);

}  // namespace headgrad
