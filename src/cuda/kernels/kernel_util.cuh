// Helpers shared by the row-wise kernels of src/cuda/kernels (softmax, layer norm, losses,
// indexing): float/double dispatch, NaN-aware max, warp and block all-reductions, launch
// shapes for "one warp per row" and "one block per row", and a deterministic search for the
// first out-of-range index.
//
// Everything here is a template or inline and lives in an unnamed namespace, so every .cu
// file that includes it gets its own copy of the kernels (no cross-file kernel symbols).
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "cuda/common.cuh"
#include "headgrad/core/dtype.hpp"
#include "headgrad/core/error.hpp"
#include "headgrad/core/tensor.hpp"

namespace headgrad::cuda {
namespace {

constexpr unsigned kFullMask = 0xffffffffu;
constexpr int kWarp = 32;
// Rows of at most this many elements get one warp each (held in registers where the
// kernel keeps them); longer rows get one block each. See warp_row_max.
constexpr std::int64_t kWarpRowMax = 1024;
// Block size of the warp-per-row kernels: 4 rows per block.
constexpr int kWarpRowThreads = 128;

// Calls f.template operator()<T>() with T = float or double; throws DTypeError naming `op`
// for any other dtype.
template <typename F>
void dispatch_floating(DType dtype, const char* op, F&& f) {
  switch (dtype) {
    case DType::float32:
      f.template operator()<float>();
      return;
    case DType::float64:
      f.template operator()<double>();
      return;
    default:
      throw DTypeError(std::string(op) + ": expected a float32 or float64 tensor, got " +
                       to_string(dtype));
  }
}

template <typename T>
__host__ __device__ __forceinline__ T neg_inf() {
  return -static_cast<T>(INFINITY);
}
template <typename T>
__host__ __device__ __forceinline__ T quiet_nan() {
  return static_cast<T>(NAN);
}

// exp / log / sqrt at full precision for each type (never the fast-math intrinsics).
__device__ __forceinline__ float dexp(float v) { return expf(v); }
__device__ __forceinline__ double dexp(double v) { return exp(v); }
__device__ __forceinline__ float dlog(float v) { return logf(v); }
__device__ __forceinline__ double dlog(double v) { return log(v); }
__device__ __forceinline__ float dsqrt(float v) { return sqrtf(v); }
__device__ __forceinline__ double dsqrt(double v) { return sqrt(v); }

// max that propagates NaN from either side (as the CPU's simd_max / torch.max).
template <typename T>
__device__ __forceinline__ T max_nan(T a, T b) {
  return (a > b || a != a) ? a : b;
}

struct SumOp {
  template <typename T>
  __device__ __forceinline__ T operator()(T a, T b) const {
    return a + b;
  }
};
struct MaxNanOp {
  template <typename T>
  __device__ __forceinline__ T operator()(T a, T b) const {
    return max_nan(a, b);
  }
};
struct MinOp {
  template <typename T>
  __device__ __forceinline__ T operator()(T a, T b) const {
    return b < a ? b : a;
  }
};

// Butterfly all-reduce over a full warp: every lane ends with op over the 32 lanes. The
// whole warp must be converged here. a+b == b+a bitwise, so all lanes hold the same sum.
template <typename T, typename Op>
__device__ __forceinline__ T warp_all_reduce(T v, Op op) {
#pragma unroll
  for (int offset = kWarp / 2; offset > 0; offset >>= 1)
    v = op(v, __shfl_xor_sync(kFullMask, v, offset));
  return v;
}

// All-reduce over the whole block (blockDim.x a multiple of 32, at most 1024): warps reduce
// with shuffles, then every thread combines the per-warp values in warp order (fixed order,
// same result in every thread). `scratch` is 32 shared elements; the leading barrier makes
// back-to-back calls with the same scratch safe. Every thread of the block must call it.
template <typename T, typename Op>
__device__ __forceinline__ T block_all_reduce(T v, Op op, T* scratch) {
  v = warp_all_reduce(v, op);
  const int warp = static_cast<int>(threadIdx.x) / kWarp;
  const int warps = static_cast<int>(blockDim.x) / kWarp;
  __syncthreads();
  if (threadIdx.x % kWarp == 0) scratch[warp] = v;
  __syncthreads();
  T r = scratch[0];
  for (int w = 1; w < warps; ++w) r = op(r, scratch[w]);
  return r;
}

// Threads for a block-per-row kernel over rows of n elements: about 4 elements per thread,
// a power of two in [128, 1024].
inline int row_block_threads(std::int64_t n) {
  int t = 128;
  while (t < 1024 && static_cast<std::int64_t>(t) * 4 < n) t *= 2;
  return t;
}

// Grid for `rows` independent rows with `per_block` rows per block; kernels loop
// (grid-stride) when rows exceed the cap.
inline unsigned row_grid(std::int64_t rows, int per_block) {
  const std::int64_t b = (rows + per_block - 1) / per_block;
  return static_cast<unsigned>(b < 1 ? 1 : (b > 2147483647 ? 2147483647 : b));
}

// Rows of at most this many elements of T get one warp each. Doubles stop at 512 so that
// kernels holding two register arrays of K doubles per lane (backwards) do not spill.
template <typename T>
constexpr std::int64_t warp_row_max() {
  return sizeof(T) > 4 ? kWarpRowMax / 2 : kWarpRowMax;
}

// Calls f.template operator()<K>() with K, elements per lane, the smallest of 1, 2, 4, 8,
// 16, 32 with 32*K >= n (n <= warp_row_max<T>(), so K = 32 exists for 4-byte T only).
template <typename T, typename F>
void with_per_lane(std::int64_t n, F&& f) {
  if (n <= 32)
    f.template operator()<1>();
  else if (n <= 64)
    f.template operator()<2>();
  else if (n <= 128)
    f.template operator()<4>();
  else if (n <= 256)
    f.template operator()<8>();
  else if (n <= 512)
    f.template operator()<16>();
  else if constexpr (sizeof(T) == 4)
    f.template operator()<32>();
}

// --- first out-of-range index -------------------------------------------------------------

// An index is bad when it is outside [0, limit) and is not `ignore` (when has_ignore).
__device__ __forceinline__ bool bad_index(std::int64_t v, std::int64_t limit, bool has_ignore,
                                          std::int64_t ignore) {
  return (v < 0 || v >= limit) && !(has_ignore && v == ignore);
}

// Pass 1: partial[b] = the smallest bad position in block b's grid-stride share, or n.
// Pass 2 (one block, partial of `parts` entries): out = 1 + min, or 0 when min == n.
// min is exact in any order, and the number of blocks depends on n only.
__global__ void first_bad_partial_kernel(const std::int64_t* idx, std::int64_t n,
                                         std::int64_t limit, bool has_ignore, std::int64_t ignore,
                                         std::int64_t* partial) {
  __shared__ std::int64_t scratch[32];
  std::int64_t first = n;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    if (bad_index(idx[i], limit, has_ignore, ignore)) {
      first = i;  // i only grows in this thread's loop: its first hit is its minimum
      break;
    }
  }
  first = block_all_reduce(first, MinOp{}, scratch);
  if (threadIdx.x == 0) partial[blockIdx.x] = first;
}

__global__ void first_bad_final_kernel(const std::int64_t* partial, int parts, std::int64_t n,
                                       std::int64_t* out) {
  __shared__ std::int64_t scratch[32];
  std::int64_t first = n;
  for (int i = static_cast<int>(threadIdx.x); i < parts; i += static_cast<int>(blockDim.x))
    first = partial[i] < first ? partial[i] : first;
  first = block_all_reduce(first, MinOp{}, scratch);
  if (threadIdx.x == 0) *out = first == n ? 0 : first + 1;
}

// out (one int64 on the device of `like`) = 1 + the first position p < n with idx[p]
// outside [0, limit) and not `ignore` (when has_ignore), else 0. Two launches, no atomics.
inline void first_bad_index(const std::int64_t* idx, std::int64_t n, std::int64_t limit,
                            bool has_ignore, std::int64_t ignore, std::int64_t* out,
                            const Tensor& like, const char* op) {
  cudaStream_t s = stream_of(like);
  constexpr int kThreadsBad = 256;
  const std::int64_t want = (n + kThreadsBad - 1) / kThreadsBad;
  const int parts = static_cast<int>(want < 1 ? 1 : (want > 1024 ? 1024 : want));
  Tensor partial = empty({parts}, TensorOptions().dtype(DType::int64).device(like.device()));
  std::int64_t* pp = static_cast<std::int64_t*>(partial.impl()->data());
  first_bad_partial_kernel<<<parts, kThreadsBad, 0, s>>>(idx, n, limit, has_ignore, ignore, pp);
  check_launch(op);
  first_bad_final_kernel<<<1, 1024, 0, s>>>(pp, parts, n, out);
  check_launch(op);
}

}  // namespace
}  // namespace headgrad::cuda
