// The broadcasting binary map the CPU's binary kernels run (src/ops/cpu/binary_kernels.cpp).
#pragma once

#include <algorithm>
#include <cstdint>

#include "core/dispatch.hpp"
#include "headgrad/core/tensor.hpp"
#include "ops/cpu/broadcast.hpp"

namespace headgrad::cpu {

// out[i] = f(a[i'], b[i'']) over the broadcast of a and b, split across the thread pool
// (parallel_broadcast_loop). out must be allocated with the broadcast shape; it may be a
// (same-shaped) input. The four inner cases (both contiguous, one a scalar run, general
// strides) are separate loops so the common ones vectorize.
template <typename T, typename R, typename F>
void binary_map(const Tensor& a, const Tensor& b, Tensor& out, F f) {
  const T* pa = detail::ptr<T>(a);
  const T* pb = detail::ptr<T>(b);
  R* po = detail::ptr<R>(out);
  parallel_broadcast_loop<2>(out.shape(), {a.shape(), b.shape()},
                             [&](std::int64_t o, const std::array<std::int64_t, 2>& off,
                                 std::int64_t n, const std::array<std::int64_t, 2>& st) {
                               const T* x = pa + off[0];
                               const T* y = pb + off[1];
                               R* z = po + o;
                               if (st[0] == 1 && st[1] == 1) {
                                 for (std::int64_t i = 0; i < n; ++i) z[i] = f(x[i], y[i]);
                               } else if (st[0] == 1 && st[1] == 0) {
                                 const T yv = *y;
                                 for (std::int64_t i = 0; i < n; ++i) z[i] = f(x[i], yv);
                               } else if (st[0] == 0 && st[1] == 1) {
                                 const T xv = *x;
                                 for (std::int64_t i = 0; i < n; ++i) z[i] = f(xv, y[i]);
                               } else {
                                 for (std::int64_t i = 0; i < n; ++i)
                                   z[i] = f(x[i * st[0]], y[i * st[1]]);
                               }
                             });
}

}  // namespace headgrad::cpu
