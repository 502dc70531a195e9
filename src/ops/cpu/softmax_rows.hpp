// The softmax row kernels: one contiguous row of n entries at a time (xsimd), shared by
// softmax / log_softmax on the last dim (ops/softmax.cpp) and the fused attention kernel
// (src/ops/attention_fused.cpp), so the two compute every row the same way.
//
//   forward   y  = exp(x - max) / sum(exp(x - max))          softmax
//             y  = (x - max) - log(sum(exp(x - max)))        log_softmax
//   backward  dx = scale * y * (dy - sum(dy * y))            softmax (scale 1 but in attention)
// A row whose entries are all -inf (every key masked) has max = -inf: NaN in standard mode
// (as PyTorch), and in safe mode 0 (softmax) or -inf (log_softmax); its softmax gradient is
// then 0 without a special case, because y = 0.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "ops/cpu/simd.hpp"

namespace headgrad::cpu {

template <typename T>
void softmax_row(const T* x, T* y, std::int64_t n, bool log, bool safe) {
  constexpr T neg_inf = -std::numeric_limits<T>::infinity();
  const T row_max = simd_max(x, n);
  if (row_max == neg_inf) {  // every entry masked (or n == 0)
    std::fill(y, y + n, safe ? (log ? neg_inf : T(0)) : std::numeric_limits<T>::quiet_NaN());
    return;
  }
  const T total = simd_exp_shift_sum(x, y, n, row_max);
  if (log) {
    const T log_total = std::log(total);
    for (std::int64_t i = 0; i < n; ++i) y[i] = (x[i] - row_max) - log_total;
  } else {
    const T inv_total = T(1) / total;
    simd_map(y, y, n, [inv_total](auto v) { return v * inv_total; });
  }
}

// dx may be dy (in place).
template <typename T>
void softmax_backward_row(const T* y, const T* dy, T* dx, std::int64_t n, T scale = T(1)) {
  const T dot = simd_dot(dy, y, n);
  simd_map2(y, dy, dx, n, [dot, scale](auto yi, auto dyi) { return yi * scale * (dyi - dot); });
}

}  // namespace headgrad::cpu
