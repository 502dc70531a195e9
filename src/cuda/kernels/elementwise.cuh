// The launcher behind every elementwise kernel (src/cuda/kernels/*.cu): out[i] = f(in_0, ...,
// in_k) with each input broadcast to out's shape. Functors are plain structs with a
// __device__ operator() taking one value per input; the launcher picks the layout:
//   - contiguous: every input has out's numel (same layout) or is one element (a scalar,
//     read once); no index math. Vectorized by 4 elements when all pointers allow it.
//   - strided: broadcast inputs (bias over rows, column vectors, ...). Size-1 dims are
//     dropped and dims contiguous for every operand merged first (detail::merge_dims,
//     shared with the CPU's broadcast_loop), then each element's offsets come from one div/mod per
//     merged dim, in 32-bit arithmetic when the sizes allow.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>

#include "core/broadcast.hpp"
#include "cuda/common.cuh"

namespace headgrad::cuda::ew {

constexpr int kVec = 4;  // elements per vectorized access

template <typename T, int N>
struct alignas(sizeof(T) * N) Vec {
  T v[N];
};

// An input of the contiguous kernel: same layout as out, or one element read everywhere.
template <typename T>
struct Src {
  const T* p;
  bool scalar;

  __device__ T at(std::int64_t i) const { return p[scalar ? 0 : i]; }
  __device__ Vec<T, kVec> vec(std::int64_t vi) const {
    if (scalar) {
      Vec<T, kVec> r;
      const T s = p[0];
#pragma unroll
      for (int k = 0; k < kVec; ++k) r.v[k] = s;
      return r;
    }
    return reinterpret_cast<const Vec<T, kVec>*>(p)[vi];
  }
};

template <typename Out, typename F, typename... In>
__device__ __forceinline__ void apply_vec(const F& f, Out* out, std::int64_t vi,
                                          const Vec<In, kVec>&... v) {
  Vec<Out, kVec> o;
#pragma unroll
  for (int k = 0; k < kVec; ++k) o.v[k] = f(v.v[k]...);
  reinterpret_cast<Vec<Out, kVec>*>(out)[vi] = o;
}

// out[i] = f(in[i]...) for i < n, all operands contiguous (or scalar). kVectorized: the
// first n/4*4 elements in 4-element vectors (all pointers aligned to 4 elements), the rest
// one by one. Each element is read before its own position is written, so out may be an
// input (in-place ops).
template <bool kVectorized, typename Out, typename F, typename... In>
__global__ void contiguous_kernel(std::int64_t n, F f, Out* out, Src<In>... in) {
  const std::int64_t stride = static_cast<std::int64_t>(blockDim.x) * gridDim.x;
  std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if constexpr (kVectorized) {
    const std::int64_t nv = n / kVec;
    for (std::int64_t vi = i; vi < nv; vi += stride) apply_vec(f, out, vi, in.vec(vi)...);
    i += nv * kVec;
  }
  for (; i < n; i += stride) out[i] = f(in.at(i)...);
}

// Sizes of the (merged) output dims and each of K operands' strides along them, stored
// right-aligned in kMaxDims slots (dims [kMaxDims - rank, kMaxDims) are used) so that the
// unrolled loops below index them statically. With 32-bit indices, division by sizes[d]
// is a multiply-high and a shift (magic numbers from the host, as PyTorch's IntDivider;
// exact for dividends and divisors below 2^31).
template <typename Index, int K>
struct Layout {
  int rank;
  Index sizes[kMaxDims];
  Index strides[K][kMaxDims];
  std::uint32_t magic[kMaxDims];  // 32-bit only
  std::uint32_t shift[kMaxDims];

  __device__ __forceinline__ Index div(Index n, int d) const {
    if constexpr (std::is_same_v<Index, std::uint32_t>)
      return (__umulhi(n, magic[d]) + n) >> shift[d];
    else
      return n / sizes[d];
  }

  // The K operands' element offsets of output element `linear` (row-major over sizes).
  __device__ __forceinline__ void offsets(Index linear, Index (&off)[K]) const {
#pragma unroll
    for (int k = 0; k < K; ++k) off[k] = 0;
    const int first = kMaxDims - rank;
#pragma unroll
    for (int d = kMaxDims - 1; d >= 0; --d) {
      if (d < first) break;
      Index r = linear;  // the outermost dim needs no division (linear < sizes[first])
      if (d > first) {
        const Index q = div(linear, d);
        r = linear - q * sizes[d];
        linear = q;
      }
#pragma unroll
      for (int k = 0; k < K; ++k) off[k] += r * strides[k][d];
    }
  }
};

template <typename Index, typename F, std::size_t... I, typename... In>
__device__ __forceinline__ auto gather_apply(const F& f, const Index* off,
                                             std::index_sequence<I...>, const In*... in) {
  return f(in[off[I]]...);
}

// out[i] = f(in_k[offset_k(i)]...) for i < n, out contiguous, inputs through `layout`.
template <typename Index, typename Out, typename F, typename... In>
__global__ void strided_kernel(Index n, F f, Out* out, Layout<Index, sizeof...(In)> layout,
                               const In*... in) {
  constexpr int K = sizeof...(In);
  const Index stride = static_cast<Index>(blockDim.x) * gridDim.x;
  for (Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    Index off[K];
    layout.offsets(i, off);
    out[i] = gather_apply(f, off, std::index_sequence_for<In...>{}, in...);
  }
}

template <typename Index, std::size_t K>
Layout<Index, static_cast<int>(K)> make_layout(const Shape& sizes,
                                               const std::array<Shape, K>& strides) {
  Layout<Index, static_cast<int>(K)> l{};
  l.rank = static_cast<int>(sizes.size());
  const int lead = kMaxDims - l.rank;
  for (int d = 0; d < l.rank; ++d) {
    const std::int64_t size = sizes[static_cast<std::size_t>(d)];
    l.sizes[lead + d] = static_cast<Index>(size);
    if constexpr (std::is_same_v<Index, std::uint32_t>) {
      std::uint32_t sh = 0;
      while (sh < 32 && (std::uint64_t{1} << sh) < static_cast<std::uint64_t>(size)) ++sh;
      const std::uint64_t one = 1;
      l.shift[lead + d] = sh;
      l.magic[lead + d] = static_cast<std::uint32_t>(
          ((one << 32) * ((one << sh) - static_cast<std::uint64_t>(size))) /
              static_cast<std::uint64_t>(size) +
          1);
    }
    for (std::size_t k = 0; k < K; ++k)
      l.strides[k][lead + d] = static_cast<Index>(strides[k][static_cast<std::size_t>(d)]);
  }
  return l;
}

// Strides for reading a contiguous tensor of shape `in` broadcast to `out`; checks what the
// shared helper assumes (extra leading dims of `in` must be 1).
inline Shape checked_broadcast_strides(const Shape& in, const Shape& out) {
  if (in.size() > out.size()) {
    for (std::size_t d = 0; d < in.size() - out.size(); ++d)
      if (in[d] != 1)
        throw ShapeError("cuda elementwise: " + shape_str(in) + " does not broadcast to " +
                         shape_str(out));
    return detail::broadcast_strides(
        Shape(in.end() - static_cast<std::ptrdiff_t>(out.size()), in.end()), out);
  }
  return detail::broadcast_strides(in, out);
}

template <typename T>
bool vec_aligned(const T* p) {
  return reinterpret_cast<std::uintptr_t>(p) % (sizeof(T) * kVec) == 0;
}

// out = f(ins...) with each input (a contiguous tensor of element type In) broadcast to
// out's shape. Out and In... are the element types; `op` names launch errors.
//   launch<bool, float, float>("eq", Eq<float>{}, out, x, y);
template <typename Out, typename... In, typename F, typename... Ts>
void launch(const char* op, const F& f, Tensor& out, const Ts&... ins) {
  static_assert(sizeof...(In) == sizeof...(Ts), "one element type per input");
  constexpr std::size_t K = sizeof...(In);
  const std::int64_t n = out.numel();
  if (n == 0) return;
  cudaStream_t s = stream_of(out);
  Out* po = dptr<Out>(out);

  const bool simple = ((ins.numel() == n || ins.numel() == 1) && ...);
  if (simple) {
    const bool vec =
        n >= kVec && vec_aligned(po) && ((ins.numel() == 1 || vec_aligned(dptr<In>(ins))) && ...);
    if (vec)
      contiguous_kernel<true, Out, F, In...><<<blocks_for(n / kVec), kThreads, 0, s>>>(
          n, f, po, Src<In>{dptr<In>(ins), ins.numel() != n}...);
    else
      contiguous_kernel<false, Out, F, In...><<<blocks_for(n), kThreads, 0, s>>>(
          n, f, po, Src<In>{dptr<In>(ins), ins.numel() != n}...);
    check_launch(op);
    return;
  }
  if constexpr (K > 0) {
    Shape sizes = out.shape();
    if (sizes.size() > static_cast<std::size_t>(kMaxDims))
      throw ShapeError(std::string(op) + ": tensors of rank " + std::to_string(sizes.size()) +
                       " are not supported on cuda (at most " + std::to_string(kMaxDims) + ")");
    std::array<Shape, K> strides{checked_broadcast_strides(ins.shape(), out.shape())...};
    detail::merge_dims(sizes, strides);
    if (n <= std::numeric_limits<std::int32_t>::max()) {
      strided_kernel<std::uint32_t, Out, F, In...><<<blocks_for(n), kThreads, 0, s>>>(
          static_cast<std::uint32_t>(n), f, po, make_layout<std::uint32_t, K>(sizes, strides),
          dptr<In>(ins)...);
    } else {
      strided_kernel<std::int64_t, Out, F, In...><<<blocks_for(n), kThreads, 0, s>>>(
          n, f, po, make_layout<std::int64_t, K>(sizes, strides), dptr<In>(ins)...);
    }
    check_launch(op);
  }
}

}  // namespace headgrad::cuda::ew
