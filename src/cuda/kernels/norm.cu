// layer_norm on the GPU, forward and backward (spec: src/ops/norm.cpp).
//
// x is viewed as (rows, D), D = cols; weight and bias (D) are optional.
//   forward:  mean = sum(x)/D,  var = sum((x - mean)^2)/D (biased, centered second pass),
//             rstd = 1/sqrt(var + eps),  xhat = (x - mean)*rstd,  y = xhat*w + b
//   backward: with g = dy*w,
//             dx = rstd * (g - mean(g) - xhat * mean(g*xhat))
//             dw = sum over rows of dy*xhat,  db = sum over rows of dy
// Launches:
//   D <= 1024 (512 for float64): one warp per row, the row in registers (K = ceil(D/32)
//              elements per lane), 4 rows per 128-thread block.
//   longer:    one block per row, passes over global memory (re-reads hit L1/L2).
//   dw/db:     column sums without atomics: a fixed number of row chunks per column (set by
//              `rows` only) write partial sums, a second kernel adds the chunks in order.
// mean and rstd have x's dtype (as the CPU op saves them). Accumulation is in T, as the CPU.
#include <limits>

#include "cuda/backend.hpp"
#include "cuda/common.cuh"
#include "cuda/kernels/kernel_util.cuh"

namespace headgrad::cuda {

namespace {

constexpr const char* kOp = "layer_norm";

// rstd from the variance: NaN when the variance overflowed (float32 values ~1e19 apart), so
// the row comes out NaN as on the CPU and in PyTorch, rather than the bias (rstd = 0).
template <typename T>
__device__ __forceinline__ T rstd_of(T var, T eps) {
  return isinf(var) ? std::numeric_limits<T>::quiet_NaN() : T(1) / dsqrt(var + eps);
}

// ---------------------------------------------------------------------------------------
// forward
// ---------------------------------------------------------------------------------------

// x, y: (rows, D), D <= 32*K; mean, rstd: (rows); w, b: (D) or null. One warp per row.
template <typename T, int K>
__global__ void forward_warp_kernel(const T* __restrict__ x, const T* __restrict__ w,
                                    const T* __restrict__ b, T* __restrict__ y,
                                    T* __restrict__ mean, T* __restrict__ rstd, std::int64_t rows,
                                    int d, T eps) {
  const int lane = static_cast<int>(threadIdx.x) % kWarp;
  const int warps = static_cast<int>(blockDim.x) / kWarp;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * warps;
  for (std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * warps + threadIdx.x / kWarp;
       row < rows; row += stride) {  // uniform per warp
    const T* xr = x + row * d;
    T* yr = y + row * d;
    T v[K];
    T sum = T(0);
#pragma unroll
    for (int j = 0; j < K; ++j) {
      const int i = lane + j * kWarp;
      v[j] = i < d ? xr[i] : T(0);
      sum += v[j];
    }
    const T mu = warp_all_reduce(sum, SumOp{}) / static_cast<T>(d);
    T sq = T(0);
#pragma unroll
    for (int j = 0; j < K; ++j) {
      if (lane + j * kWarp < d) {
        v[j] -= mu;  // v now holds x - mean
        sq += v[j] * v[j];
      }
    }
    const T var = warp_all_reduce(sq, SumOp{}) / static_cast<T>(d);
    const T rs = rstd_of(var, eps);
    if (lane == 0) {
      mean[row] = mu;
      rstd[row] = rs;
    }
#pragma unroll
    for (int j = 0; j < K; ++j) {
      const int i = lane + j * kWarp;
      if (i >= d) continue;
      T out = v[j] * rs;
      if (w) out = out * w[i];
      if (b) out = out + b[i];
      yr[i] = out;
    }
  }
}

// Long rows: one block per row, three passes (sum, centered sum of squares, write).
template <typename T>
__global__ void forward_block_kernel(const T* __restrict__ x, const T* __restrict__ w,
                                     const T* __restrict__ b, T* __restrict__ y,
                                     T* __restrict__ mean, T* __restrict__ rstd, std::int64_t rows,
                                     std::int64_t d, T eps) {
  __shared__ T scratch[32];
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {  // uniform per block
    const T* xr = x + row * d;
    T* yr = y + row * d;
    T sum = T(0);
#pragma unroll 4
    for (std::int64_t i = threadIdx.x; i < d; i += blockDim.x) sum += xr[i];
    const T mu = block_all_reduce(sum, SumOp{}, scratch) / static_cast<T>(d);
    T sq = T(0);
#pragma unroll 4
    for (std::int64_t i = threadIdx.x; i < d; i += blockDim.x) {
      const T c = xr[i] - mu;
      sq += c * c;
    }
    const T var = block_all_reduce(sq, SumOp{}, scratch) / static_cast<T>(d);
    const T rs = rstd_of(var, eps);
    if (threadIdx.x == 0) {
      mean[row] = mu;
      rstd[row] = rs;
    }
#pragma unroll 4
    for (std::int64_t i = threadIdx.x; i < d; i += blockDim.x) {
      T out = (xr[i] - mu) * rs;
      if (w) out = out * w[i];
      if (b) out = out + b[i];
      yr[i] = out;
    }
  }
}

// ---------------------------------------------------------------------------------------
// backward: dx
// ---------------------------------------------------------------------------------------

// dy, x, dx: (rows, D), D <= 32*K; w (D) or null (ones). One warp per row.
template <typename T, int K>
__global__ void dx_warp_kernel(const T* __restrict__ dy, const T* __restrict__ x,
                               const T* __restrict__ w, const T* __restrict__ mean,
                               const T* __restrict__ rstd, T* __restrict__ dx, std::int64_t rows,
                               int d) {
  const int lane = static_cast<int>(threadIdx.x) % kWarp;
  const int warps = static_cast<int>(blockDim.x) / kWarp;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * warps;
  const T inv_d = T(1) / static_cast<T>(d);
  for (std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * warps + threadIdx.x / kWarp;
       row < rows; row += stride) {
    const T* dyr = dy + row * d;
    const T* xr = x + row * d;
    const T mu = mean[row];
    const T rs = rstd[row];
    T gv[K], xh[K];  // g = dy*w and xhat
    T sum_g = T(0), sum_gx = T(0);
#pragma unroll
    for (int j = 0; j < K; ++j) {
      const int i = lane + j * kWarp;
      gv[j] = T(0);
      xh[j] = T(0);
      if (i < d) {
        gv[j] = w ? dyr[i] * w[i] : dyr[i];
        xh[j] = (xr[i] - mu) * rs;
        sum_g += gv[j];
        sum_gx += gv[j] * xh[j];
      }
    }
    const T mean_g = warp_all_reduce(sum_g, SumOp{}) * inv_d;
    const T mean_gx = warp_all_reduce(sum_gx, SumOp{}) * inv_d;
    T* dxr = dx + row * d;
#pragma unroll
    for (int j = 0; j < K; ++j) {
      const int i = lane + j * kWarp;
      if (i < d) dxr[i] = rs * (gv[j] - mean_g - xh[j] * mean_gx);
    }
  }
}

// Long rows: one block per row, two passes.
template <typename T>
__global__ void dx_block_kernel(const T* __restrict__ dy, const T* __restrict__ x,
                                const T* __restrict__ w, const T* __restrict__ mean,
                                const T* __restrict__ rstd, T* __restrict__ dx, std::int64_t rows,
                                std::int64_t d) {
  __shared__ T scratch[32];
  const T inv_d = T(1) / static_cast<T>(d);
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* dyr = dy + row * d;
    const T* xr = x + row * d;
    const T mu = mean[row];
    const T rs = rstd[row];
    T sum_g = T(0), sum_gx = T(0);
#pragma unroll 4
    for (std::int64_t i = threadIdx.x; i < d; i += blockDim.x) {
      const T g = w ? dyr[i] * w[i] : dyr[i];
      sum_g += g;
      sum_gx += g * ((xr[i] - mu) * rs);
    }
    const T mean_g = block_all_reduce(sum_g, SumOp{}, scratch) * inv_d;
    const T mean_gx = block_all_reduce(sum_gx, SumOp{}, scratch) * inv_d;
    T* dxr = dx + row * d;
#pragma unroll 4
    for (std::int64_t i = threadIdx.x; i < d; i += blockDim.x) {
      const T g = w ? dyr[i] * w[i] : dyr[i];
      dxr[i] = rs * (g - mean_g - ((xr[i] - mu) * rs) * mean_gx);
    }
  }
}

// ---------------------------------------------------------------------------------------
// backward: dw = sum_r dy[r, :] * xhat[r, :],  db = sum_r dy[r, :]
// ---------------------------------------------------------------------------------------

constexpr int kTileCols = 32;  // threadIdx.x: one column each (a warp reads 32 adjacent)
constexpr int kTileRows = 16;  // threadIdx.y: rows r0+ty, r0+ty+16, ... of the chunk

// Row chunks per column: a function of `rows` only, so the summation order never depends
// on the device. About 128 rows per chunk, at most 128 chunks.
std::int64_t param_chunks(std::int64_t rows) {
  const std::int64_t c = (rows + 127) / 128;
  return c < 1 ? 1 : (c > 128 ? 128 : c);
}

// Block (32, 16), grid (ceil(D/32), chunks). Chunk c covers rows [c*per_chunk, ...). Writes
// pw[c*D + col] and pb[c*D + col] (either may be null): the chunk's sums, per thread row
// then over the 16 thread rows in order.
template <typename T>
__global__ void param_partial_kernel(const T* __restrict__ dy, const T* __restrict__ x,
                                     const T* __restrict__ mean, const T* __restrict__ rstd,
                                     std::int64_t rows, std::int64_t d, std::int64_t per_chunk,
                                     T* __restrict__ pw, T* __restrict__ pb) {
  __shared__ T sw[kTileRows][kTileCols + 1];
  __shared__ T sb[kTileRows][kTileCols + 1];
  const int tx = static_cast<int>(threadIdx.x);
  const int ty = static_cast<int>(threadIdx.y);
  const std::int64_t col = static_cast<std::int64_t>(blockIdx.x) * kTileCols + tx;
  const std::int64_t r0 = static_cast<std::int64_t>(blockIdx.y) * per_chunk;
  const std::int64_t r1 = r0 + per_chunk < rows ? r0 + per_chunk : rows;
  T acc_w = T(0), acc_b = T(0);
  if (col < d) {
    for (std::int64_t r = r0 + ty; r < r1; r += kTileRows) {
      const T g = dy[r * d + col];
      if (pw) acc_w += g * ((x[r * d + col] - mean[r]) * rstd[r]);
      acc_b += g;
    }
  }
  sw[ty][tx] = acc_w;
  sb[ty][tx] = acc_b;
  __syncthreads();
  if (ty == 0 && col < d) {
    T tw = sw[0][tx], tb = sb[0][tx];
    for (int k = 1; k < kTileRows; ++k) {
      tw += sw[k][tx];
      tb += sb[k][tx];
    }
    const std::int64_t at = static_cast<std::int64_t>(blockIdx.y) * d + col;
    if (pw) pw[at] = tw;
    if (pb) pb[at] = tb;
  }
}

// out[col] = sum over c < chunks of partial[c*D + col], in order. One thread per column.
template <typename T>
__global__ void param_final_kernel(const T* __restrict__ partial, std::int64_t chunks,
                                   std::int64_t d, T* __restrict__ out) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t col = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; col < d;
       col += stride) {
    T acc = partial[col];
    for (std::int64_t c = 1; c < chunks; ++c) acc += partial[c * d + col];
    out[col] = acc;
  }
}

template <typename T>
void param_grads(const T* dy, const T* x, const T* mean, const T* rstd, std::int64_t rows,
                 std::int64_t d, Tensor& dweight, Tensor& dbias, cudaStream_t s) {
  T* dw = dweight.defined() ? dptr<T>(dweight) : nullptr;
  T* db = dbias.defined() ? dptr<T>(dbias) : nullptr;
  if (rows == 0) {  // sums over no rows
    if (dw) check(cudaMemsetAsync(dw, 0, sizeof(T) * d, s), "layer_norm backward");
    if (db) check(cudaMemsetAsync(db, 0, sizeof(T) * d, s), "layer_norm backward");
    return;
  }
  const std::int64_t chunks = param_chunks(rows);
  const std::int64_t per_chunk = (rows + chunks - 1) / chunks;
  const dim3 block(kTileCols, kTileRows);
  const dim3 grid(static_cast<unsigned>((d + kTileCols - 1) / kTileCols),
                  static_cast<unsigned>(chunks));
  if (chunks == 1) {  // one chunk: its sums are the result
    param_partial_kernel<T><<<grid, block, 0, s>>>(dy, x, mean, rstd, rows, d, per_chunk, dw, db);
    check_launch("layer_norm backward");
    return;
  }
  Tensor partial =
      empty({2, chunks, d}, TensorOptions()
                                .dtype(dtype_of<T>())
                                .device(dweight.defined() ? dweight.device() : dbias.device()));
  T* pw = dw ? dptr<T>(partial) : nullptr;
  T* pb = db ? dptr<T>(partial) + chunks * d : nullptr;
  param_partial_kernel<T><<<grid, block, 0, s>>>(dy, x, mean, rstd, rows, d, per_chunk, pw, pb);
  check_launch("layer_norm backward");
  if (dw) {
    param_final_kernel<T><<<blocks_for(d), kThreads, 0, s>>>(pw, chunks, d, dw);
    check_launch("layer_norm backward");
  }
  if (db) {
    param_final_kernel<T><<<blocks_for(d), kThreads, 0, s>>>(pb, chunks, d, db);
    check_launch("layer_norm backward");
  }
}

}  // namespace

void CudaBackend::layer_norm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias,
                                     std::int64_t rows, std::int64_t cols, double eps, Tensor& out,
                                     Tensor& mean, Tensor& rstd) {
  dispatch_floating(x.dtype(), kOp, [&]<typename T>() {
    if (rows == 0 || cols == 0) return;
    cudaStream_t s = stream_of(out);
    const T* xp = dptr<T>(x);
    const T* w = weight.defined() ? dptr<T>(weight) : nullptr;
    const T* b = bias.defined() ? dptr<T>(bias) : nullptr;
    T* yp = dptr<T>(out);
    T* mp = dptr<T>(mean);
    T* rp = dptr<T>(rstd);
    const T e = static_cast<T>(eps);
    if (cols <= warp_row_max<T>()) {
      with_per_lane<T>(cols, [&]<int K>() {
        forward_warp_kernel<T, K>
            <<<row_grid(rows, kWarpRowThreads / kWarp), kWarpRowThreads, 0, s>>>(
                xp, w, b, yp, mp, rp, rows, static_cast<int>(cols), e);
      });
    } else {
      forward_block_kernel<T><<<row_grid(rows, 1), row_block_threads(cols), 0, s>>>(
          xp, w, b, yp, mp, rp, rows, cols, e);
    }
    check_launch(kOp);
  });
}

void CudaBackend::layer_norm_backward(const Tensor& g, const Tensor& x, const Tensor& weight,
                                      const Tensor& mean, const Tensor& rstd, std::int64_t rows,
                                      std::int64_t cols, Tensor& dx, Tensor& dweight,
                                      Tensor& dbias) {
  dispatch_floating(x.dtype(), "layer_norm backward", [&]<typename T>() {
    if (cols == 0) return;
    cudaStream_t s = stream_of(x);
    const T* gp = dptr<T>(g);
    const T* xp = dptr<T>(x);
    const T* w = weight.defined() ? dptr<T>(weight) : nullptr;
    const T* mp = rows > 0 ? dptr<T>(mean) : nullptr;
    const T* rp = rows > 0 ? dptr<T>(rstd) : nullptr;
    if (dx.defined() && rows > 0) {
      T* dp = dptr<T>(dx);
      if (cols <= warp_row_max<T>()) {
        with_per_lane<T>(cols, [&]<int K>() {
          dx_warp_kernel<T, K><<<row_grid(rows, kWarpRowThreads / kWarp), kWarpRowThreads, 0, s>>>(
              gp, xp, w, mp, rp, dp, rows, static_cast<int>(cols));
        });
      } else {
        dx_block_kernel<T><<<row_grid(rows, 1), row_block_threads(cols), 0, s>>>(gp, xp, w, mp, rp,
                                                                                 dp, rows, cols);
      }
      check_launch("layer_norm backward");
    }
    if (dweight.defined() || dbias.defined())
      param_grads<T>(gp, xp, mp, rp, rows, cols, dweight, dbias, s);
  });
}

}  // namespace headgrad::cuda
