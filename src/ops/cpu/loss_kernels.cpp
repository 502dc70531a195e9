// The losses' CPU kernels (Kernels::cross_entropy_* and mse_*): a fused log-softmax +
// negative log likelihood over raw contiguous pointers, and mse's loops over broadcast
// operands. The formulas are the op's (src/ops/loss.cpp) and the interface's.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/dispatch.hpp"
#include "ops/cpu/broadcast.hpp"
#include "ops/cpu/cpu_kernels.hpp"
#include "ops/cpu/simd.hpp"

namespace headgrad::cpu {

using headgrad::detail::dispatch_floating;
using headgrad::detail::ptr;

namespace {

// 1 + the first position whose target is outside [0, classes) and not ignore_index, or 0;
// `kept` counts the targets not ignored.
std::int64_t first_bad_target(const std::int64_t* targets, std::int64_t count, std::int64_t classes,
                              std::int64_t ignore_index, std::int64_t& kept) {
  kept = 0;
  for (std::int64_t p = 0; p < count; ++p) {
    const std::int64_t t = targets[p];
    if (t == ignore_index) continue;
    if (t < 0 || t >= classes) return p + 1;
    ++kept;
  }
  return 0;
}

// acc[i] += exp(x[i] - shift[i]).
template <typename T>
void accumulate_exp_shift(const T* x, const T* shift, T* acc, std::int64_t n) {
  using batch = xsimd::batch<T>;
  constexpr std::int64_t w = static_cast<std::int64_t>(batch::size);
  std::int64_t i = 0;
  for (; i + w <= n; i += w) {
    batch e = simd_exp(batch::load_unaligned(x + i) - batch::load_unaligned(shift + i));
    (batch::load_unaligned(acc + i) + e).store_unaligned(acc + i);
  }
  for (; i < n; ++i) acc[i] += std::exp(x[i] - shift[i]);
}

// d[i] = scale[i] * (exp(x[i] - lse[i]) - offset).
template <typename T>
void scaled_softmax_minus(const T* x, const T* lse, const T* scale, T offset, T* d,
                          std::int64_t n) {
  using batch = xsimd::batch<T>;
  constexpr std::int64_t w = static_cast<std::int64_t>(batch::size);
  std::int64_t i = 0;
  const batch off(offset);
  for (; i + w <= n; i += w) {
    batch p = simd_exp(batch::load_unaligned(x + i) - batch::load_unaligned(lse + i));
    (batch::load_unaligned(scale + i) * (p - off)).store_unaligned(d + i);
  }
  for (; i < n; ++i) d[i] = scale[i] * (std::exp(x[i] - lse[i]) - offset);
}

// Forward, per position p with target t (not ignored) and smoothing eps:
//   lse_p  = log sum_c exp(x_pc)                      (max-shifted)
//   loss_p = (1-eps) * (lse_p - x_pt) + eps * (lse_p - mean_c x_pc)
// Ignored positions get loss 0. Writes loss (positions) and lse (positions).
template <typename T>
void cross_entropy_forward_kernel(const T* x, const std::int64_t* targets,
                                  const CrossEntropyProblem& L, std::int64_t ignore_index, T eps,
                                  T* loss, T* lse) {
  const std::int64_t C = L.classes;
  const T inv_classes = C > 0 ? T(1) / static_cast<T>(C) : T(0);
  if (L.inner == 1) {  // each position's logits are one contiguous row
    std::vector<T> scratch(static_cast<std::size_t>(C));
    for (std::int64_t p = 0; p < L.outer; ++p) {
      const T* row = x + p * C;
      const std::int64_t t = targets[p];
      if (t == ignore_index) {
        loss[p] = T(0);
        lse[p] = T(0);
        continue;
      }
      const T m = simd_max(row, C);
      const T l = m + std::log(simd_exp_shift_sum(row, scratch.data(), C, m));
      lse[p] = l;
      T value = l - row[t];
      if (eps > T(0)) value = (T(1) - eps) * value + eps * (l - simd_sum(row, C) * inv_classes);
      loss[p] = value;
    }
    return;
  }
  // Class dim strided by `inner`: run the reductions over c with vectors along j.
  const std::int64_t inner = L.inner;
  std::vector<T> row_max(static_cast<std::size_t>(inner));
  std::vector<T> row_sum(static_cast<std::size_t>(inner));
  std::vector<T> row_total(static_cast<std::size_t>(inner));
  for (std::int64_t n = 0; n < L.outer; ++n) {
    const T* base = x + n * C * inner;
    std::fill(row_max.begin(), row_max.end(), T(-INFINITY));
    std::fill(row_sum.begin(), row_sum.end(), T(0));
    std::fill(row_total.begin(), row_total.end(), T(0));
    for (std::int64_t c = 0; c < C; ++c) {
      const T* xc = base + c * inner;
      for (std::int64_t j = 0; j < inner; ++j) row_max[j] = xc[j] > row_max[j] ? xc[j] : row_max[j];
    }
    for (std::int64_t c = 0; c < C; ++c) {
      const T* xc = base + c * inner;
      accumulate_exp_shift(xc, row_max.data(), row_sum.data(), inner);
      if (eps > T(0))
        for (std::int64_t j = 0; j < inner; ++j) row_total[j] += xc[j];
    }
    for (std::int64_t j = 0; j < inner; ++j) {
      const std::int64_t p = n * inner + j;
      const T l = row_max[j] + std::log(row_sum[j]);
      lse[p] = l;
      const std::int64_t t = targets[p];
      if (t == ignore_index) {
        loss[p] = T(0);
        continue;
      }
      T value = l - base[t * inner + j];
      if (eps > T(0)) value = (T(1) - eps) * value + eps * (l - row_total[j] * inv_classes);
      loss[p] = value;
    }
  }
}

// Backward: for a position p with upstream scale s_p (g_p for none, g for sum, g / kept for
// mean) and target t (not ignored):
//   dx_pc = s_p * (softmax_pc - eps/C - (1-eps) * [c == t])
// and dx_pc = 0 for ignored positions. softmax_pc = exp(x_pc - lse_p) from the saved lse.
template <typename T>
void cross_entropy_backward_kernel(const T* x, const std::int64_t* targets, const T* lse,
                                   const CrossEntropyProblem& L, std::int64_t ignore_index, T eps,
                                   const T* upstream, bool per_position, T* dx) {
  const std::int64_t C = L.classes;
  const T offset = C > 0 ? eps / static_cast<T>(C) : T(0);
  if (L.inner == 1) {
    for (std::int64_t p = 0; p < L.outer; ++p) {
      const T* row = x + p * C;
      T* drow = dx + p * C;
      const std::int64_t t = targets[p];
      if (t == ignore_index) {
        std::fill(drow, drow + C, T(0));
        continue;
      }
      const T s = per_position ? upstream[p] : upstream[0];
      const T l = lse[p];
      simd_map(row, drow, C, [&](auto v) {
        using V = decltype(v);
        return V(s) * (simd_exp(v - V(l)) - V(offset));
      });
      drow[t] -= s * (T(1) - eps);
    }
    return;
  }
  const std::int64_t inner = L.inner;
  std::vector<T> scale(static_cast<std::size_t>(inner));
  for (std::int64_t n = 0; n < L.outer; ++n) {
    const T* base = x + n * C * inner;
    T* dbase = dx + n * C * inner;
    const T* lse_n = lse + n * inner;
    const std::int64_t* t_n = targets + n * inner;
    for (std::int64_t j = 0; j < inner; ++j)
      scale[j] =
          t_n[j] == ignore_index ? T(0) : (per_position ? upstream[n * inner + j] : upstream[0]);
    for (std::int64_t c = 0; c < C; ++c)
      scaled_softmax_minus(base + c * inner, lse_n, scale.data(), offset, dbase + c * inner, inner);
    for (std::int64_t j = 0; j < inner; ++j) {
      const std::int64_t t = t_n[j];
      if (t == ignore_index) {  // exactly zero, even where the scale times a softmax is NaN
        for (std::int64_t c = 0; c < C; ++c) dbase[c * inner + j] = T(0);
        continue;
      }
      dbase[t * inner + j] -= scale[j] * (T(1) - eps);
    }
  }
}

// ============================================================================
// mse_loss helpers
// ============================================================================

// dst (dst_shape, zero-filled here) = sign * (src summed over the dims broadcast from
// dst_shape to src_shape): the gradient of broadcasting, on raw pointers.
template <typename T>
void sum_into_broadcast_source(const T* src, const Shape& src_shape, T* dst, const Shape& dst_shape,
                               T sign) {
  std::fill(dst, dst + numel_of(dst_shape), T(0));
  broadcast_loop<1>(src_shape, {dst_shape},
                    [&](std::int64_t o, const std::array<std::int64_t, 1>& offsets, std::int64_t n,
                        const std::array<std::int64_t, 1>& strides) {
                      T* d = dst + offsets[0];
                      const std::int64_t s = strides[0];
                      for (std::int64_t i = 0; i < n; ++i) d[i * s] += sign * src[o + i];
                    });
}

}  // namespace

void CpuKernels::cross_entropy_forward(const Tensor& logits, const Tensor& targets,
                                       const CrossEntropyProblem& problem, Tensor& out, Tensor& lse,
                                       Tensor& kept, Tensor& bad_target) {
  const std::int64_t positions = problem.positions();
  std::int64_t count = 0;
  const std::int64_t bad = first_bad_target(ptr<std::int64_t>(targets), positions, problem.classes,
                                            problem.ignore_index, count);
  ptr<std::int64_t>(bad_target)[0] = bad;
  ptr<std::int64_t>(kept)[0] = count;
  if (bad != 0) return;
  dispatch_floating(logits.dtype(), "cross_entropy", [&]<typename T>() {
    const bool reduce = problem.reduction != Reduction::none;
    std::vector<T> per_position(reduce ? static_cast<std::size_t>(positions) : 0);
    T* losses = reduce ? per_position.data() : ptr<T>(out);
    cross_entropy_forward_kernel<T>(ptr<T>(logits), ptr<std::int64_t>(targets), problem,
                                    problem.ignore_index, static_cast<T>(problem.label_smoothing),
                                    losses, ptr<T>(lse));
    if (!reduce) return;
    double total = 0.0;  // ignored positions hold exactly 0
    for (std::int64_t p = 0; p < positions; ++p) total += static_cast<double>(losses[p]);
    if (problem.reduction == Reduction::mean) total /= static_cast<double>(count);  // 0/0: NaN
    ptr<T>(out)[0] = static_cast<T>(total);
  });
}

void CpuKernels::cross_entropy_backward(const Tensor& g, const Tensor& logits, const Tensor& lse,
                                        const Tensor& targets, const Tensor& kept,
                                        const CrossEntropyProblem& problem, Tensor& dlogits) {
  dispatch_floating(logits.dtype(), "cross_entropy backward", [&]<typename T>() {
    const bool per_position = problem.reduction == Reduction::none;
    T scalar_scale = T(0);
    if (!per_position) {
      const double gv = static_cast<double>(ptr<T>(g)[0]);
      scalar_scale = static_cast<T>(problem.reduction == Reduction::mean
                                        ? gv / static_cast<double>(ptr<std::int64_t>(kept)[0])
                                        : gv);
    }
    cross_entropy_backward_kernel<T>(
        ptr<T>(logits), ptr<std::int64_t>(targets), ptr<T>(lse), problem, problem.ignore_index,
        static_cast<T>(problem.label_smoothing), per_position ? ptr<T>(g) : &scalar_scale,
        per_position, ptr<T>(dlogits));
  });
}

void CpuKernels::mse_forward(const Tensor& a, const Tensor& b, const Shape& shape,
                             Reduction reduction, Tensor& out) {
  const std::int64_t count = numel_of(shape);
  dispatch_floating(a.dtype(), "mse_loss", [&]<typename T>() {
    const T* pa = ptr<T>(a);
    const T* pb = ptr<T>(b);
    T* y = ptr<T>(out);
    double total = 0.0;
    broadcast_loop<2>(shape, {a.shape(), b.shape()},
                      [&](std::int64_t o, const std::array<std::int64_t, 2>& offsets,
                          std::int64_t n, const std::array<std::int64_t, 2>& strides) {
                        const T* ai = pa + offsets[0];
                        const T* bi = pb + offsets[1];
                        if (reduction == Reduction::none) {
                          for (std::int64_t i = 0; i < n; ++i) {
                            const T d = ai[i * strides[0]] - bi[i * strides[1]];
                            y[o + i] = d * d;
                          }
                        } else {
                          T run = T(0);
                          for (std::int64_t i = 0; i < n; ++i) {
                            const T d = ai[i * strides[0]] - bi[i * strides[1]];
                            run += d * d;
                          }
                          total += static_cast<double>(run);
                        }
                      });
    if (reduction == Reduction::mean) total /= static_cast<double>(count);  // empty: NaN
    if (reduction != Reduction::none) y[0] = static_cast<T>(total);
  });
}

// d is written straight into da when a has the broadcast shape, else into a scratch buffer
// that da and db sum from.
void CpuKernels::mse_backward(const Tensor& g, const Tensor& a, const Tensor& b, const Shape& shape,
                              Reduction reduction, Tensor& da, Tensor& db) {
  const std::int64_t count = numel_of(shape);
  dispatch_floating(a.dtype(), "mse_loss backward", [&]<typename T>() {
    const T* gp = ptr<T>(g);
    const bool per_element = reduction == Reduction::none;
    const T scale = static_cast<T>(
        per_element ? 0.0
                    : 2.0 * static_cast<double>(gp[0]) /
                          (reduction == Reduction::mean ? static_cast<double>(count) : 1.0));
    const bool d_is_da = da.defined() && a.shape() == shape;
    std::vector<T> scratch(d_is_da ? 0 : static_cast<std::size_t>(count));
    T* dp = d_is_da ? ptr<T>(da) : scratch.data();
    const T* pa = ptr<T>(a);
    const T* pb = ptr<T>(b);
    if (count > 0)
      broadcast_loop<2>(shape, {a.shape(), b.shape()},
                        [&](std::int64_t o, const std::array<std::int64_t, 2>& offsets,
                            std::int64_t n, const std::array<std::int64_t, 2>& strides) {
                          const T* ai = pa + offsets[0];
                          const T* bi = pb + offsets[1];
                          for (std::int64_t i = 0; i < n; ++i) {
                            const T diff = ai[i * strides[0]] - bi[i * strides[1]];
                            dp[o + i] = per_element ? T(2) * diff * gp[o + i] : scale * diff;
                          }
                        });
    if (db.defined()) sum_into_broadcast_source<T>(dp, shape, ptr<T>(db), b.shape(), T(-1));
    if (da.defined() && !d_is_da)
      sum_into_broadcast_source<T>(dp, shape, ptr<T>(da), a.shape(), T(1));
  });
}

}  // namespace headgrad::cpu
