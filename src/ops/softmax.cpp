// softmax and log_softmax over one dim, forward and backward side by side.
//
// A tensor is viewed as (outer, n, inner) around the softmax dim of size n:
//   - inner == 1 (the last dim, attention rows): each row is contiguous and handled by the
//     row kernels of ops/cpu/softmax_rows.hpp (xsimd), which the fused attention shares;
//   - inner > 1: for each outer block the n slices of length `inner` are walked in order,
//     keeping per-column running values in scratch arrays, so every inner loop is over
//     contiguous memory (no strided gather of a row).
//
// Both save their OUTPUT for backward. A row whose entries are all -inf (every key masked)
// has max = -inf: NaN in standard mode (as PyTorch); SoftmaxMode::safe turns it into zeros
// (softmax) or -inf (log_softmax) with a zero gradient. Rows with only some -inf entries are
// ordinary rows.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/cuda_backend.hpp"
#include "core/dispatch.hpp"
#include "headgrad/autograd/function.hpp"
#include "headgrad/ops/softmax.hpp"
#include "ops/cpu/simd.hpp"
#include "ops/cpu/softmax_rows.hpp"

namespace headgrad {

namespace {

constexpr auto exp_fn = [](const auto& v) { return cpu::simd_exp(v); };

// The (outer, n, inner) view of a tensor around one dim.
struct RowGeometry {
  std::int64_t outer = 1;
  std::int64_t n = 1;
  std::int64_t inner = 1;
};

RowGeometry row_geometry(const Tensor& x, std::int64_t dim, const char* op) {
  const Shape& shape = x.shape();
  const auto rank = static_cast<std::int64_t>(shape.size());
  const std::int64_t r = rank == 0 ? 1 : rank;  // a 0-d tensor accepts dims -1 and 0
  if (dim < -r || dim >= r)
    throw IndexError(std::string(op) + ": dim " + std::to_string(dim) + " is out of range for " +
                     detail::describe(x) + " (expected a dim in [" + std::to_string(-r) + ", " +
                     std::to_string(r - 1) + "])");
  RowGeometry g;
  if (rank == 0) return g;
  const std::int64_t d = dim < 0 ? dim + rank : dim;
  g.n = shape[static_cast<std::size_t>(d)];
  for (std::int64_t i = 0; i < d; ++i) g.outer *= shape[static_cast<std::size_t>(i)];
  for (std::int64_t i = d + 1; i < rank; ++i) g.inner *= shape[static_cast<std::size_t>(i)];
  return g;
}

template <typename T>
constexpr T kNegInf = -std::numeric_limits<T>::infinity();
template <typename T>
constexpr T kNaN = std::numeric_limits<T>::quiet_NaN();

// ---------------------------------------------------------------------------------------
// softmax: x (outer, n, inner) -> y (outer, n, inner), y = exp(x - max) / sum(exp(x - max))
//          dx = y * (dy - sum(dy * y))          (sums over the n axis)
// log_softmax: y = (x - max) - log(sum(exp(x - max)))
//          dx = dy - exp(y) * sum(dy)
// All -inf row: standard mode gives NaN for both (as PyTorch: -inf - (-inf) is NaN); safe
// mode gives 0 for softmax and -inf for log_softmax, both with a zero gradient.
// ---------------------------------------------------------------------------------------

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
    cpu::simd_map(yk, yk, inner, exp_fn);
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
void softmax_forward(const T* x, T* y, const RowGeometry& g, bool log, bool safe) {
  const std::int64_t block = g.n * g.inner;
  if (g.inner == 1) {
    for (std::int64_t o = 0; o < g.outer; ++o)
      cpu::softmax_row(x + o * block, y + o * block, g.n, log, safe);
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
void softmax_backward(const T* y, const T* dy, T* dx, const RowGeometry& g) {
  const std::int64_t block = g.n * g.inner;
  if (g.inner == 1) {
    for (std::int64_t o = 0; o < g.outer; ++o)
      cpu::softmax_backward_row(y + o * block, dy + o * block, dx + o * block, g.n);
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
      if (safe && cpu::simd_max(yr, g.n) == kNegInf<T>) {
        std::fill(dxr, dxr + g.n, T(0));
        continue;
      }
      const T dy_sum = cpu::simd_sum(dy + o * block, g.n);
      cpu::simd_map2(dy + o * block, yr, dxr, g.n, [dy_sum](const auto& d, const auto& out) {
        return d - cpu::simd_exp(out) * dy_sum;
      });
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
      cpu::simd_map(yb + k * g.inner, dxk, g.inner, exp_fn);
      for (std::int64_t j = 0; j < g.inner; ++j) dxk[j] = dyk[j] - dxk[j] * col_sum[j];
    }
    if (!safe) continue;
    for (std::int64_t j = 0; j < g.inner; ++j) {
      if (col_max[j] != kNegInf<T>) continue;
      for (std::int64_t k = 0; k < g.n; ++k) dxb[k * g.inner + j] = T(0);  // rare: masked column
    }
  }
}

Tensor softmax_op(const Tensor& x, std::int64_t dim, SoftmaxMode mode, bool log) {
  const char* op = log ? "log_softmax" : "softmax";
  detail::check_float_op(op, x);
  const RowGeometry g = row_geometry(x, dim, op);
  const bool safe = mode == SoftmaxMode::safe;
  Tensor out = detail::new_tensor(x.shape(), x.dtype(), x.device());
  if (x.device().is_cuda())
    cuda::backend().softmax_forward(x, g.outer, g.n, g.inner, log, safe, out);
  else
    detail::dispatch_floating(x.dtype(), op, [&]<typename T>() {
      softmax_forward<T>(detail::ptr<T>(x), detail::ptr<T>(out), g, log, safe);
    });
  autograd::record(
      op, {x}, {&out}, {out},
      [g, log, safe, mode, op](const std::vector<Tensor>& grads,
                               const autograd::BackwardContext& ctx) -> std::vector<Tensor> {
        const Tensor& y = ctx.saved(0);
        const Tensor& dy = grads[0];
        Tensor dx = detail::new_tensor(y.shape(), y.dtype(), y.device());
        if (y.device().is_cuda()) {
          cuda::backend().softmax_backward(dy, y, g.outer, g.n, g.inner, log, safe, dx);
          return {dx};
        }
        detail::dispatch_floating(y.dtype(), op, [&]<typename T>() {
          if (log)
            log_softmax_backward<T>(detail::ptr<T>(y), detail::ptr<T>(dy), detail::ptr<T>(dx), g,
                                    safe);
          else
            softmax_backward<T>(detail::ptr<T>(y), detail::ptr<T>(dy), detail::ptr<T>(dx), g);
        });
        return {dx};
      });
  return out;
}

}  // namespace

Tensor softmax(const Tensor& x, std::int64_t dim, SoftmaxMode mode) {
  return softmax_op(x, dim, mode, /*log=*/false);
}

Tensor log_softmax(const Tensor& x, std::int64_t dim, SoftmaxMode mode) {
  return softmax_op(x, dim, mode, /*log=*/true);
}

}  // namespace headgrad
