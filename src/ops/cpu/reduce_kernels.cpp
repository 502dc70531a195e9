// The CPU's reductions (Kernels::reduce, max_dim, max_dim_backward). Every sum goes through
// reduce_into: it walks x in contiguous runs (the broadcast iterator, with the reduced
// tensor read at stride 0 along reduced dims), so a reduction over the last dim is a
// vectorized row sum and one over leading dims (the bias gradient) a vectorized row add; no
// strided per-column gathers. max over one dim keeps the first maximum (NaN maximal).
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "core/broadcast.hpp"
#include "core/dispatch.hpp"
#include "ops/cpu/broadcast.hpp"
#include "ops/cpu/cpu_kernels.hpp"
#include "ops/cpu/simd.hpp"

namespace headgrad::cpu {

using headgrad::detail::around_dim;
using headgrad::detail::AroundDim;

using headgrad::detail::dispatch_floating;
using headgrad::detail::ptr;

namespace {

// out (a shape broadcastable to x's) += the sum of x over the broadcast dims; with
// is_max, out = max(out, x) instead.
template <typename T, bool is_max>
void reduce_into(const Tensor& x, Tensor& out) {
  const T* px = headgrad::detail::ptr<T>(x);
  T* po = headgrad::detail::ptr<T>(out);
  broadcast_loop<1>(x.shape(), {out.shape()},
                    [&](std::int64_t xo, const std::array<std::int64_t, 1>& off, std::int64_t n,
                        const std::array<std::int64_t, 1>& st) {
                      const T* src = px + xo;
                      T* dst = po + off[0];
                      if constexpr (is_max) {
                        if (st[0] == 0) {
                          const T m = simd_max(src, n);
                          *dst = m > *dst || m != m ? m : *dst;  // NaN propagates
                        } else {
                          for (std::int64_t i = 0; i < n; ++i) {
                            const T d = dst[i * st[0]];
                            dst[i * st[0]] = src[i] > d || src[i] != src[i] ? src[i] : d;
                          }
                        }
                      } else {
                        if (st[0] == 0) {
                          *dst += simd_sum(src, n);
                        } else if (st[0] == 1) {
                          for (std::int64_t i = 0; i < n; ++i) dst[i] += src[i];
                        } else {
                          for (std::int64_t i = 0; i < n; ++i) dst[i * st[0]] += src[i];
                        }
                      }
                    });
}

// The first maximum along the middle dim and its position; values may be null.
template <typename T>
void first_max(const T* px, const AroundDim& m, T* pv, std::int64_t* pi) {
  for (std::int64_t o = 0; o < m.outer; ++o)
    for (std::int64_t j = 0; j < m.inner; ++j) {
      const T* row = px + o * m.n * m.inner + j;
      T best = row[0];
      std::int64_t arg = 0;
      for (std::int64_t k = 1; k < m.n; ++k)
        if (row[k * m.inner] > best || (std::isnan(row[k * m.inner]) && !std::isnan(best))) {
          best = row[k * m.inner];
          arg = k;
        }
      if (pv) pv[o * m.inner + j] = best;
      pi[o * m.inner + j] = arg;
    }
}

// The one dim where keep_shape (x's rank) is 1 and x is not (argmax reduces exactly one).
std::int64_t reduced_dim(const Shape& x_shape, const Shape& keep_shape) {
  for (std::size_t d = 0; d < x_shape.size(); ++d)
    if (keep_shape[d] == 1 && x_shape[d] != 1) return static_cast<std::int64_t>(d);
  return 0;
}

}  // namespace

void CpuKernels::reduce(Reduce op, const Tensor& x, const Shape& keep_shape, Tensor& out) {
  if (op == Reduce::sum && x.dtype() == kInt64) {  // exact (wrapping as torch's), any order
    Tensor view = headgrad::detail::alias(out, keep_shape);
    std::fill(ptr<std::int64_t>(view), ptr<std::int64_t>(view) + view.numel(), 0);
    reduce_into<std::int64_t, false>(x, view);
    return;
  }
  dispatch_floating(x.dtype(), op == Reduce::sum ? "sum" : "amax", [&]<typename T>() {
    if (op == Reduce::argmax) {
      first_max<T>(ptr<T>(x), around_dim(x.shape(), reduced_dim(x.shape(), keep_shape)), nullptr,
                   ptr<std::int64_t>(out));
      return;
    }
    Tensor view = headgrad::detail::alias(out, keep_shape);
    const bool is_max = op == Reduce::amax;
    std::fill(ptr<T>(view), ptr<T>(view) + view.numel(),
              is_max ? -std::numeric_limits<T>::infinity() : T(0));
    if (is_max)
      reduce_into<T, true>(x, view);
    else
      reduce_into<T, false>(x, view);
  });
}

void CpuKernels::max_dim(const Tensor& x, std::int64_t dim, Tensor& values, Tensor& indices) {
  dispatch_floating(x.dtype(), "max", [&]<typename T>() {
    first_max<T>(ptr<T>(x), around_dim(x.shape(), dim), ptr<T>(values), ptr<std::int64_t>(indices));
  });
}

void CpuKernels::max_dim_backward(const Tensor& g, const Tensor& indices, std::int64_t dim,
                                  Tensor& dx) {
  const AroundDim m = around_dim(dx.shape(), dim);
  dispatch_floating(dx.dtype(), "max backward", [&]<typename T>() {
    const T* pg = ptr<T>(g);
    const std::int64_t* pi = ptr<std::int64_t>(indices);
    T* pd = ptr<T>(dx);
    std::fill(pd, pd + dx.numel(), T(0));
    for (std::int64_t o = 0; o < m.outer; ++o)
      for (std::int64_t j = 0; j < m.inner; ++j)
        pd[(o * m.n + pi[o * m.inner + j]) * m.inner + j] = pg[o * m.inner + j];
  });
}

}  // namespace headgrad::cpu
