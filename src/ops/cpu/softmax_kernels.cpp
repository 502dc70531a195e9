// softmax's and log_softmax's CPU kernels (Kernels::softmax_forward / softmax_backward) on
// x viewed as (outer, n, inner): last-dim rows (inner == 1) through the row kernels of
// softmax_rows.hpp; otherwise each (n, inner) block is walked slice by slice with per-column
// running values in scratch arrays, so every inner loop is over contiguous memory. The
// formulas and the all -inf conventions are the op's (src/ops/softmax.cpp).
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/dispatch.hpp"
#include "ops/cpu/cpu_kernels.hpp"
#include "ops/cpu/simd.hpp"
#include "ops/cpu/softmax_rows.hpp"

namespace headgrad::cpu {

namespace {

constexpr auto exp_fn = [](const auto& v) { return simd_exp(v); };

template <typename T>
constexpr T kNegInf = -std::numeric_limits<T>::infinity();
template <typename T>
constexpr T kNaN = std::numeric_limits<T>::quiet_NaN();

// The (outer, n, inner) view of a tensor around one dim.
struct RowGeometry {
  std::int64_t outer = 1;
  std::int64_t n = 1;
  std::int64_t inner = 1;
};

// One (n, inner) block with inner > 1: column j is the row x[k*inner + j], k < n.
// col_shift and col_acc are scratch arrays of length inner.
template <typename T>
void softmax_forward_block(const T* x, T* y, std::int64_t n, std::int64_t inner, bool log,
                           bool safe, T* col_shift, T* col_acc) {
  std::fill(col_shift, col_shift + inner, kNegInf<T>);
  for (std::int64_t k = 0; k < n; ++k) {
    const T* xk = x + k * inner;
    for (std::int64_t j = 0; j < inner; ++j)
      col_shift[j] = xk[j] > col_shift[j] ? xk[j] : col_shift[j];
  }
  // A fully masked column shifts by 0 so that exp(-inf - 0) = 0 instead of NaN; its
  // output is fixed below through col_acc.
  for (std::int64_t j = 0; j < inner; ++j)
    if (col_shift[j] == kNegInf<T>) col_shift[j] = T(0);
  std::fill(col_acc, col_acc + inner, T(0));
  for (std::int64_t k = 0; k < n; ++k) {
    const T* xk = x + k * inner;
    T* yk = y + k * inner;
    for (std::int64_t j = 0; j < inner; ++j) yk[j] = xk[j] - col_shift[j];
    simd_map(yk, yk, inner, exp_fn);
    for (std::int64_t j = 0; j < inner; ++j) col_acc[j] += yk[j];
  }
  if (log) {
    // col_acc = log(sum); a masked column (sum 0) uses 0 (safe: y = x = -inf) or NaN.
    const T masked_log = safe ? T(0) : kNaN<T>;
    for (std::int64_t j = 0; j < inner; ++j)
      col_acc[j] = col_acc[j] == T(0) ? masked_log : std::log(col_acc[j]);
    for (std::int64_t k = 0; k < n; ++k) {
      const T* xk = x + k * inner;
      T* yk = y + k * inner;
      for (std::int64_t j = 0; j < inner; ++j) yk[j] = (xk[j] - col_shift[j]) - col_acc[j];
    }
  } else {
    // col_acc = 1/sum; a masked column (sum 0) gives 0 (safe) or NaN (standard).
    const T masked_scale = safe ? T(0) : kNaN<T>;
    for (std::int64_t j = 0; j < inner; ++j)
      col_acc[j] = col_acc[j] == T(0) ? masked_scale : T(1) / col_acc[j];
    for (std::int64_t k = 0; k < n; ++k) {
      T* yk = y + k * inner;
      for (std::int64_t j = 0; j < inner; ++j) yk[j] *= col_acc[j];
    }
  }
}

template <typename T>
void softmax_forward_rows(const T* x, T* y, const RowGeometry& g, bool log, bool safe) {
  const std::int64_t block = g.n * g.inner;
  if (g.inner == 1) {
    for (std::int64_t o = 0; o < g.outer; ++o)
      softmax_row(x + o * block, y + o * block, g.n, log, safe);
    return;
  }
  std::vector<T> col_shift(static_cast<std::size_t>(g.inner));
  std::vector<T> col_acc(static_cast<std::size_t>(g.inner));
  for (std::int64_t o = 0; o < g.outer; ++o)
    softmax_forward_block(x + o * block, y + o * block, g.n, g.inner, log, safe, col_shift.data(),
                          col_acc.data());
}

// softmax backward, dx = y * (dy - sum(dy*y)). A safe-mode masked row has y = 0, so its
// gradient is 0 without a special case.
template <typename T>
void softmax_backward_rows(const T* y, const T* dy, T* dx, const RowGeometry& g) {
  const std::int64_t block = g.n * g.inner;
  if (g.inner == 1) {
    for (std::int64_t o = 0; o < g.outer; ++o)
      softmax_backward_row(y + o * block, dy + o * block, dx + o * block, g.n);
    return;
  }
  std::vector<T> col_dot(static_cast<std::size_t>(g.inner));
  for (std::int64_t o = 0; o < g.outer; ++o) {
    const T* yb = y + o * block;
    const T* dyb = dy + o * block;
    T* dxb = dx + o * block;
    std::fill(col_dot.begin(), col_dot.end(), T(0));
    for (std::int64_t k = 0; k < g.n; ++k)
      for (std::int64_t j = 0; j < g.inner; ++j)
        col_dot[j] += dyb[k * g.inner + j] * yb[k * g.inner + j];
    for (std::int64_t k = 0; k < g.n; ++k)
      for (std::int64_t j = 0; j < g.inner; ++j)
        dxb[k * g.inner + j] = yb[k * g.inner + j] * (dyb[k * g.inner + j] - col_dot[j]);
  }
}

// log_softmax backward, dx = dy - exp(y) * sum(dy). In safe mode a row whose outputs are
// all -inf (a fully masked row; any other row has a finite maximum) gets a zero gradient.
template <typename T>
void log_softmax_backward(const T* y, const T* dy, T* dx, const RowGeometry& g, bool safe) {
  const std::int64_t block = g.n * g.inner;
  if (g.inner == 1) {
    for (std::int64_t o = 0; o < g.outer; ++o) {
      const T* yr = y + o * block;
      T* dxr = dx + o * block;
      if (safe && simd_max(yr, g.n) == kNegInf<T>) {
        std::fill(dxr, dxr + g.n, T(0));
        continue;
      }
      const T dy_sum = simd_sum(dy + o * block, g.n);
      simd_map2(dy + o * block, yr, dxr, g.n,
                [dy_sum](const auto& d, const auto& out) { return d - simd_exp(out) * dy_sum; });
    }
    return;
  }
  std::vector<T> col_sum(static_cast<std::size_t>(g.inner));
  std::vector<T> col_max(static_cast<std::size_t>(g.inner));
  for (std::int64_t o = 0; o < g.outer; ++o) {
    const T* yb = y + o * block;
    const T* dyb = dy + o * block;
    T* dxb = dx + o * block;
    std::fill(col_sum.begin(), col_sum.end(), T(0));
    std::fill(col_max.begin(), col_max.end(), kNegInf<T>);
    for (std::int64_t k = 0; k < g.n; ++k) {
      const T* yk = yb + k * g.inner;
      const T* dyk = dyb + k * g.inner;
      for (std::int64_t j = 0; j < g.inner; ++j) col_sum[j] += dyk[j];
      if (safe)
        for (std::int64_t j = 0; j < g.inner; ++j)
          col_max[j] = yk[j] > col_max[j] ? yk[j] : col_max[j];
    }
    for (std::int64_t k = 0; k < g.n; ++k) {
      const T* dyk = dyb + k * g.inner;
      T* dxk = dxb + k * g.inner;
      simd_map(yb + k * g.inner, dxk, g.inner, exp_fn);
      for (std::int64_t j = 0; j < g.inner; ++j) dxk[j] = dyk[j] - dxk[j] * col_sum[j];
    }
    if (!safe) continue;
    for (std::int64_t j = 0; j < g.inner; ++j) {
      if (col_max[j] != kNegInf<T>) continue;
      for (std::int64_t k = 0; k < g.n; ++k) dxb[k * g.inner + j] = T(0);  // rare: masked column
    }
  }
}

}  // namespace

void CpuKernels::softmax_forward(const Tensor& x, std::int64_t outer, std::int64_t dim,
                                 std::int64_t inner, bool log, bool safe, Tensor& out) {
  const RowGeometry g{outer, dim, inner};
  headgrad::detail::dispatch_floating(
      x.dtype(), log ? "log_softmax" : "softmax", [&]<typename T>() {
        softmax_forward_rows<T>(headgrad::detail::ptr<T>(x), headgrad::detail::ptr<T>(out), g, log,
                                safe);
      });
}

void CpuKernels::softmax_backward(const Tensor& g, const Tensor& y, std::int64_t outer,
                                  std::int64_t dim, std::int64_t inner, bool log, bool safe,
                                  Tensor& dx) {
  const RowGeometry rows{outer, dim, inner};
  using headgrad::detail::ptr;
  headgrad::detail::dispatch_floating(
      y.dtype(), log ? "log_softmax" : "softmax", [&]<typename T>() {
        if (log)
          log_softmax_backward<T>(ptr<T>(y), ptr<T>(g), ptr<T>(dx), rows, safe);
        else
          softmax_backward_rows<T>(ptr<T>(y), ptr<T>(g), ptr<T>(dx), rows);
      });
}

}  // namespace headgrad::cpu
