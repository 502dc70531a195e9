// softmax / log_softmax on the GPU, forward and backward (spec: src/ops/softmax.cpp).
//
// x is viewed as (outer, n, inner) around the softmax dim of size n.
//   inner == 1, n <= 1024 (512 for float64): one warp per row, the row held in registers
//                          (K = ceil(n/32) elements per lane, lane l holding elements l,
//                          l+32, ...); 4 rows per 128-thread block.
//   inner == 1, longer:    one block per row (128..1024 threads), three passes over global
//                          memory (max, sum of exp, write); the re-reads come from L1/L2.
//   inner > 1:             one thread per (outer, inner) column looping over the n entries
//                          with stride inner (adjacent threads read adjacent addresses).
// Every reduction is a fixed shuffle/shared-memory tree: no atomics, bitwise reproducible.
//
// Conventions (as the CPU): a row whose maximum is -inf (all entries -inf) is NaN in
// standard mode; safe mode gives 0 (softmax) or -inf (log_softmax) with a zero gradient.
// A NaN anywhere in a row makes the whole row NaN.
#include "cuda/backend.hpp"
#include "cuda/common.cuh"
#include "cuda/kernels/kernel_util.cuh"

namespace headgrad::cuda {

namespace {

// Output of an all -inf row.
template <typename T>
__device__ __forceinline__ T masked_value(bool log, bool safe) {
  return safe ? (log ? neg_inf<T>() : T(0)) : quiet_nan<T>();
}

// ---------------------------------------------------------------------------------------
// Forward, per row x[0..n):  m = max x,  s = sum exp(x - m)
//   softmax:     y = exp(x - m) * (1/s)
//   log_softmax: y = (x - m) - log(s)
// ---------------------------------------------------------------------------------------

// x, y: (rows, n), n <= 32*K. One warp per row, 4 rows per 128-thread block.
template <typename T, int K>
__global__ void forward_warp_kernel(const T* __restrict__ x, T* __restrict__ y, std::int64_t rows,
                                    int n, bool log, bool safe) {
  const int lane = static_cast<int>(threadIdx.x) % kWarp;
  const int warps = static_cast<int>(blockDim.x) / kWarp;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * warps;
  for (std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * warps + threadIdx.x / kWarp;
       row < rows; row += stride) {  // uniform per warp
    const T* xr = x + row * n;
    T* yr = y + row * n;
    T v[K];
    T m = neg_inf<T>();
#pragma unroll
    for (int j = 0; j < K; ++j) {
      const int i = lane + j * kWarp;
      v[j] = i < n ? xr[i] : neg_inf<T>();
      m = max_nan(m, v[j]);
    }
    m = warp_all_reduce(m, MaxNanOp{});
    if (m == neg_inf<T>()) {  // the same in every lane: the warp branches together
      const T fill = masked_value<T>(log, safe);
#pragma unroll
      for (int j = 0; j < K; ++j)
        if (lane + j * kWarp < n) yr[lane + j * kWarp] = fill;
      continue;
    }
    T s = T(0);
#pragma unroll
    for (int j = 0; j < K; ++j) {
      if (lane + j * kWarp < n) {
        v[j] -= m;  // v now holds x - m
        s += dexp(v[j]);
      }
    }
    s = warp_all_reduce(s, SumOp{});
    if (log) {
      const T log_s = dlog(s);
#pragma unroll
      for (int j = 0; j < K; ++j)
        if (lane + j * kWarp < n) yr[lane + j * kWarp] = v[j] - log_s;
    } else {
      const T inv_s = T(1) / s;
#pragma unroll
      for (int j = 0; j < K; ++j)
        if (lane + j * kWarp < n) yr[lane + j * kWarp] = dexp(v[j]) * inv_s;
    }
  }
}

// x, y: (rows, n) with long rows. One block per row.
template <typename T>
__global__ void forward_block_kernel(const T* __restrict__ x, T* __restrict__ y, std::int64_t rows,
                                     std::int64_t n, bool log, bool safe) {
  __shared__ T scratch[32];
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {  // uniform per block
    const T* xr = x + row * n;
    T* yr = y + row * n;
    T m = neg_inf<T>();
#pragma unroll 4
    for (std::int64_t i = threadIdx.x; i < n; i += blockDim.x) m = max_nan(m, xr[i]);
    m = block_all_reduce(m, MaxNanOp{}, scratch);
    if (m == neg_inf<T>()) {
      const T fill = masked_value<T>(log, safe);
      for (std::int64_t i = threadIdx.x; i < n; i += blockDim.x) yr[i] = fill;
      continue;
    }
    T s = T(0);
#pragma unroll 4
    for (std::int64_t i = threadIdx.x; i < n; i += blockDim.x) s += dexp(xr[i] - m);
    s = block_all_reduce(s, SumOp{}, scratch);
    if (log) {
      const T log_s = dlog(s);
#pragma unroll 4
      for (std::int64_t i = threadIdx.x; i < n; i += blockDim.x) yr[i] = (xr[i] - m) - log_s;
    } else {
      const T inv_s = T(1) / s;
#pragma unroll 4
      for (std::int64_t i = threadIdx.x; i < n; i += blockDim.x) yr[i] = dexp(xr[i] - m) * inv_s;
    }
  }
}

// x, y: (outer, n, inner), inner > 1. One thread per column (o, j), as the CPU's block
// code: shift = max (ignoring NaN, as its `>` compare; a NaN still poisons the sum), an
// all -inf column shifts by 0 and is fixed through its zero sum.
template <typename T>
__global__ void forward_column_kernel(const T* __restrict__ x, T* __restrict__ y,
                                      std::int64_t outer, std::int64_t n, std::int64_t inner,
                                      bool log, bool safe) {
  const std::int64_t columns = outer * inner;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t col = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       col < columns; col += stride) {
    const std::int64_t o = col / inner;
    const std::int64_t base = o * n * inner + (col - o * inner);
    const T* xc = x + base;
    T* yc = y + base;
    T shift = neg_inf<T>();
    for (std::int64_t k = 0; k < n; ++k) {
      const T v = xc[k * inner];
      shift = v > shift ? v : shift;
    }
    if (shift == neg_inf<T>()) shift = T(0);
    T s = T(0);
    for (std::int64_t k = 0; k < n; ++k) s += dexp(xc[k * inner] - shift);
    if (log) {
      // a masked column (sum 0) uses 0 (safe: y = x = -inf) or NaN
      const T log_s = s == T(0) ? (safe ? T(0) : quiet_nan<T>()) : dlog(s);
      for (std::int64_t k = 0; k < n; ++k) yc[k * inner] = (xc[k * inner] - shift) - log_s;
    } else {
      const T scale = s == T(0) ? (safe ? T(0) : quiet_nan<T>()) : T(1) / s;
      for (std::int64_t k = 0; k < n; ++k) yc[k * inner] = dexp(xc[k * inner] - shift) * scale;
    }
  }
}

// ---------------------------------------------------------------------------------------
// Backward, per row, from y (the forward's output) and g = dL/dy:
//   softmax:     dx = y * (g - sum(g * y))       [d y_i / d x_k = y_i (delta_ik - y_k)]
//   log_softmax: dx = g - exp(y) * sum(g)        [d y_i / d x_k = delta_ik - softmax_k]
//                safe mode: dx = 0 on rows whose y is all -inf (max y == -inf)
// ---------------------------------------------------------------------------------------

// g, y, dx: (rows, n), n <= 32*K. One warp per row, y and g in registers.
template <typename T, int K>
__global__ void backward_warp_kernel(const T* __restrict__ g, const T* __restrict__ y,
                                     T* __restrict__ dx, std::int64_t rows, int n, bool log,
                                     bool safe) {
  const int lane = static_cast<int>(threadIdx.x) % kWarp;
  const int warps = static_cast<int>(blockDim.x) / kWarp;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * warps;
  for (std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * warps + threadIdx.x / kWarp;
       row < rows; row += stride) {
    const T* gr = g + row * n;
    const T* yr = y + row * n;
    T* dr = dx + row * n;
    T gv[K], yv[K];
    T acc = T(0);
    T m = neg_inf<T>();
#pragma unroll
    for (int j = 0; j < K; ++j) {
      const int i = lane + j * kWarp;
      gv[j] = i < n ? gr[i] : T(0);
      yv[j] = i < n ? yr[i] : neg_inf<T>();
      if (i < n) {
        acc += log ? gv[j] : gv[j] * yv[j];
        if (log && safe) m = max_nan(m, yv[j]);
      }
    }
    acc = warp_all_reduce(acc, SumOp{});
    if (log && safe) {
      m = warp_all_reduce(m, MaxNanOp{});
      if (m == neg_inf<T>()) {
#pragma unroll
        for (int j = 0; j < K; ++j)
          if (lane + j * kWarp < n) dr[lane + j * kWarp] = T(0);
        continue;
      }
    }
#pragma unroll
    for (int j = 0; j < K; ++j) {
      const int i = lane + j * kWarp;
      if (i < n) dr[i] = log ? gv[j] - dexp(yv[j]) * acc : yv[j] * (gv[j] - acc);
    }
  }
}

// Long rows: one block per row, two passes.
template <typename T>
__global__ void backward_block_kernel(const T* __restrict__ g, const T* __restrict__ y,
                                      T* __restrict__ dx, std::int64_t rows, std::int64_t n,
                                      bool log, bool safe) {
  __shared__ T scratch[32];
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* gr = g + row * n;
    const T* yr = y + row * n;
    T* dr = dx + row * n;
    T acc = T(0);
    T m = neg_inf<T>();
#pragma unroll 4
    for (std::int64_t i = threadIdx.x; i < n; i += blockDim.x) {
      if (log) {
        acc += gr[i];
        if (safe) m = max_nan(m, yr[i]);
      } else {
        acc += gr[i] * yr[i];
      }
    }
    acc = block_all_reduce(acc, SumOp{}, scratch);
    if (log && safe) {
      m = block_all_reduce(m, MaxNanOp{}, scratch);
      if (m == neg_inf<T>()) {
        for (std::int64_t i = threadIdx.x; i < n; i += blockDim.x) dr[i] = T(0);
        continue;
      }
    }
#pragma unroll 4
    for (std::int64_t i = threadIdx.x; i < n; i += blockDim.x)
      dr[i] = log ? gr[i] - dexp(yr[i]) * acc : yr[i] * (gr[i] - acc);
  }
}

// (outer, n, inner) with inner > 1: one thread per column. The masked-column test uses the
// CPU's `>` max (NaN ignored).
template <typename T>
__global__ void backward_column_kernel(const T* __restrict__ g, const T* __restrict__ y,
                                       T* __restrict__ dx, std::int64_t outer, std::int64_t n,
                                       std::int64_t inner, bool log, bool safe) {
  const std::int64_t columns = outer * inner;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t col = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       col < columns; col += stride) {
    const std::int64_t o = col / inner;
    const std::int64_t base = o * n * inner + (col - o * inner);
    const T* gc = g + base;
    const T* yc = y + base;
    T* dc = dx + base;
    T acc = T(0);
    T m = neg_inf<T>();
    for (std::int64_t k = 0; k < n; ++k) {
      const T gk = gc[k * inner];
      const T yk = yc[k * inner];
      if (log) {
        acc += gk;
        m = yk > m ? yk : m;
      } else {
        acc += gk * yk;
      }
    }
    const bool zero = log && safe && m == neg_inf<T>();
    for (std::int64_t k = 0; k < n; ++k) {
      const T gk = gc[k * inner];
      const T yk = yc[k * inner];
      dc[k * inner] = zero ? T(0) : (log ? gk - dexp(yk) * acc : yk * (gk - acc));
    }
  }
}

}  // namespace

void CudaBackend::softmax_forward(const Tensor& x, std::int64_t outer, std::int64_t dim,
                                  std::int64_t inner, bool log, bool safe, Tensor& out) {
  const char* op = log ? "log_softmax" : "softmax";
  dispatch_floating(x.dtype(), op, [&]<typename T>() {
    if (outer == 0 || dim == 0 || inner == 0) return;
    cudaStream_t s = stream_of(out);
    const T* xp = dptr<T>(x);
    T* yp = dptr<T>(out);
    if (inner > 1) {
      forward_column_kernel<T>
          <<<blocks_for(outer * inner), kThreads, 0, s>>>(xp, yp, outer, dim, inner, log, safe);
    } else if (dim <= warp_row_max<T>()) {
      with_per_lane<T>(dim, [&]<int K>() {
        forward_warp_kernel<T, K>
            <<<row_grid(outer, kWarpRowThreads / kWarp), kWarpRowThreads, 0, s>>>(
                xp, yp, outer, static_cast<int>(dim), log, safe);
      });
    } else {
      forward_block_kernel<T>
          <<<row_grid(outer, 1), row_block_threads(dim), 0, s>>>(xp, yp, outer, dim, log, safe);
    }
    check_launch(op);
  });
}

void CudaBackend::softmax_backward(const Tensor& g, const Tensor& y, std::int64_t outer,
                                   std::int64_t dim, std::int64_t inner, bool log, bool safe,
                                   Tensor& dx) {
  const char* op = log ? "log_softmax backward" : "softmax backward";
  dispatch_floating(y.dtype(), op, [&]<typename T>() {
    if (outer == 0 || dim == 0 || inner == 0) return;
    cudaStream_t s = stream_of(dx);
    const T* gp = dptr<T>(g);
    const T* yp = dptr<T>(y);
    T* dp = dptr<T>(dx);
    if (inner > 1) {
      backward_column_kernel<T>
          <<<blocks_for(outer * inner), kThreads, 0, s>>>(gp, yp, dp, outer, dim, inner, log, safe);
    } else if (dim <= warp_row_max<T>()) {
      with_per_lane<T>(dim, [&]<int K>() {
        backward_warp_kernel<T, K>
            <<<row_grid(outer, kWarpRowThreads / kWarp), kWarpRowThreads, 0, s>>>(
                gp, yp, dp, outer, static_cast<int>(dim), log, safe);
      });
    } else {
      backward_block_kernel<T>
          <<<row_grid(outer, 1), row_block_threads(dim), 0, s>>>(gp, yp, dp, outer, dim, log, safe);
    }
    check_launch(op);
  });
}

}  // namespace headgrad::cuda
