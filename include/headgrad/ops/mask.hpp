// masked_fill: positions where a bool `mask` (broadcastable to x's shape) is true take
// `value` (for example -inf before a softmax); their gradient is zero, the others pass
// through unchanged. The output has x's shape; the mask may not enlarge it.
#pragma once

#include "headgrad/core/tensor.hpp"

namespace headgrad {

Tensor masked_fill(const Tensor& x, const Tensor& mask, double value);

// Lower-triangular causal mask of shape (size, size) where true = blocked (j > i), the
// convention of PyTorch's attn_mask.
Tensor causal_mask(std::int64_t size);
// (target_len, source_len), true where j > i: top-left aligned, as PyTorch SDPA's is_causal.
Tensor causal_mask(std::int64_t target_len, std::int64_t source_len);

}  // namespace headgrad
