// layer_norm's row kernels on raw pointers (x viewed as (rows, D)): the CPU's implementation
// of Kernels::layer_norm_forward / layer_norm_backward (src/ops/cpu/cpu_kernels.cpp) and
// grouped_layer_norm's per-group loop (src/ops/norm.cpp) both run them. The formulas are
// layer_norm's, above the op in src/ops/norm.cpp.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/parallel.hpp"
#include "ops/cpu/simd.hpp"

namespace headgrad::cpu {

// mean and rstd of one row. The variance takes a second pass over the (cached) row,
// centered on the mean, which stays accurate when |mean| >> std (E[x^2] - E[x]^2 does not).
// A sum of squares that overflows (float32 values ~1e19 apart) makes rstd NaN, so the row
// comes out NaN as in PyTorch, rather than rstd = 1/sqrt(inf) = 0, which silently returned
// the bias.
template <typename T>
void row_moments(const T* x, std::int64_t d, T eps, T& mean, T& rstd) {
  using batch = xsimd::batch<T>;
  constexpr std::int64_t w = static_cast<std::int64_t>(batch::size);
  mean = simd_sum(x, d) / static_cast<T>(d);
  const batch m(mean);
  batch acc(T(0));
  std::int64_t i = 0;
  for (; i + w <= d; i += w) {
    const batch c = batch::load_unaligned(x + i) - m;
    acc = xsimd::fma(c, c, acc);
  }
  T sum_sq = xsimd::hadd(acc);
  for (; i < d; ++i) sum_sq += (x[i] - mean) * (x[i] - mean);
  rstd = std::isinf(sum_sq) ? std::numeric_limits<T>::quiet_NaN()
                            : T(1) / std::sqrt(sum_sq / static_cast<T>(d) + eps);
}

// Rows per chunk of the thread pool: at least ~16k elements, so small inputs stay on one
// thread. Rows are independent, and the column sums of the backward are split by column
// (each sum still runs over the rows in order): the same bits at every thread count.
inline std::int64_t row_grain(std::int64_t d) {
  return std::max<std::int64_t>(1, 16384 / std::max<std::int64_t>(d, 1));
}

// w and b may be null (no affine part).
template <typename T>
void layer_norm_forward(const T* x, const T* w, const T* b, T* y, T* mean, T* rstd,
                        std::int64_t rows, std::int64_t d, T eps) {
  headgrad::detail::parallel_for(rows, row_grain(d), [&](std::int64_t first, std::int64_t last) {
    for (std::int64_t r = first; r < last; ++r) {
      const T* xr = x + r * d;
      T* yr = y + r * d;
      row_moments(xr, d, eps, mean[r], rstd[r]);
      const T mu = mean[r];
      const T rs = rstd[r];
      if (w && b) {
        for (std::int64_t i = 0; i < d; ++i) yr[i] = (xr[i] - mu) * rs * w[i] + b[i];
      } else if (w) {
        for (std::int64_t i = 0; i < d; ++i) yr[i] = (xr[i] - mu) * rs * w[i];
      } else {
        for (std::int64_t i = 0; i < d; ++i) yr[i] = (xr[i] - mu) * rs;
        if (b)
          for (std::int64_t i = 0; i < d; ++i) yr[i] += b[i];
      }
    }
  });
}

// One row of dx: dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * w.
template <typename T>
inline void layer_norm_backward_row(const T* xr, const T* w, T mu, T rs, const T* dyr, T* dxr,
                                    std::int64_t d) {
  using batch = xsimd::batch<T>;
  constexpr std::int64_t lanes = static_cast<std::int64_t>(batch::size);
  const T inv_d = T(1) / static_cast<T>(d);
  // sums of g = dy*w and of g*xhat over the row
  const batch mu_b(mu);
  const batch rs_b(rs);
  batch acc_g(T(0));
  batch acc_gx(T(0));
  std::int64_t i = 0;
  for (; i + lanes <= d; i += lanes) {
    const batch xhat = (batch::load_unaligned(xr + i) - mu_b) * rs_b;
    const batch g = batch::load_unaligned(dyr + i) * batch::load_unaligned(w + i);
    acc_g += g;
    acc_gx = xsimd::fma(g, xhat, acc_gx);
  }
  T sum_g = xsimd::hadd(acc_g);
  T sum_gx = xsimd::hadd(acc_gx);
  for (; i < d; ++i) {
    const T g = dyr[i] * w[i];
    sum_g += g;
    sum_gx += g * ((xr[i] - mu) * rs);
  }
  const T mean_g = sum_g * inv_d;
  const T mean_gx = sum_gx * inv_d;
  for (std::int64_t j = 0; j < d; ++j) {
    const T xhat = (xr[j] - mu) * rs;
    dxr[j] = rs * (dyr[j] * w[j] - mean_g - xhat * mean_gx);
  }
}

// dw[j] = sum_r dy[r, j] xhat[r, j], db[j] = sum_r dy[r, j] (either may be null; else
// zero-initialized, (D)): 16-column pieces per thread.
template <typename T>
void layer_norm_backward_params(const T* x, const T* mean, const T* rstd, const T* dy, T* dw, T* db,
                                std::int64_t rows, std::int64_t d) {
  constexpr std::int64_t piece = 16;
  const std::int64_t pieces = (d + piece - 1) / piece;
  const std::int64_t grain =
      std::max<std::int64_t>(1, 16384 / std::max<std::int64_t>(rows * piece, 1));
  headgrad::detail::parallel_for(pieces, grain, [&](std::int64_t first, std::int64_t last) {
    const std::int64_t begin = first * piece, end = std::min(d, last * piece);
    for (std::int64_t r = 0; r < rows; ++r) {
      const T* xr = x + r * d;
      const T* dyr = dy + r * d;
      const T mu = mean[r];
      const T rs = rstd[r];
      if (dw)
        for (std::int64_t j = begin; j < end; ++j) dw[j] += dyr[j] * ((xr[j] - mu) * rs);
      if (db)
        for (std::int64_t j = begin; j < end; ++j) db[j] += dyr[j];
    }
  });
}

// dx (may be null), dw and db (null when not needed, else zero-initialized, (D)).
// ones is a row of D ones standing in for a missing weight.
template <typename T>
void layer_norm_backward(const T* x, const T* w, const T* mean, const T* rstd, const T* dy, T* dx,
                         T* dw, T* db, std::int64_t rows, std::int64_t d) {
  std::vector<T> ones;
  if (!w) {
    ones.assign(static_cast<std::size_t>(d), T(1));
    w = ones.data();
  }
  if (dx)
    headgrad::detail::parallel_for(rows, row_grain(d), [&](std::int64_t first, std::int64_t last) {
      for (std::int64_t r = first; r < last; ++r)
        layer_norm_backward_row(x + r * d, w, mean[r], rstd[r], dy + r * d, dx + r * d, d);
    });
  if (dw || db) layer_norm_backward_params(x, mean, rstd, dy, dw, db, rows, d);
}

}  // namespace headgrad::cpu
