// Raw-pointer copy kernels for the shape ops: permute (contiguous runs or a blocked 2-d
// transpose) and strided block copies (narrow, slice, concat and their backwards). They
// move bytes, so every dtype goes through them: dispatch on the element size with
// with_element_type().
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <vector>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include "headgrad/core/error.hpp"
#include "headgrad/core/shape.hpp"

namespace headgrad::cpu {

// Calls f.template operator()<U>() with an unsigned integer type U of `element_size` bytes.
// Copying U values moves the bits of any dtype of that size unchanged.
template <typename F>
void with_element_type(std::size_t element_size, F&& f) {
  switch (element_size) {
    case 1:
      f.template operator()<std::uint8_t>();
      return;
    case 2:
      f.template operator()<std::uint16_t>();
      return;
    case 4:
      f.template operator()<std::uint32_t>();
      return;
    case 8:
      f.template operator()<std::uint64_t>();
      return;
    default:
      throw DTypeError("copy kernel: unsupported element size " + std::to_string(element_size));
  }
}

// Calls body(offsets) for every multi-index of `sizes` in row-major order, where offsets[k]
// is the dot product of the multi-index with strides[k]. No call when any size is 0; one
// call with zero offsets when `sizes` is empty.
template <std::size_t N, typename F>
void for_each_offset(const Shape& sizes, const std::array<Shape, N>& strides, F&& body) {
  for (auto s : sizes)
    if (s == 0) return;
  std::array<std::int64_t, N> offsets{};
  std::vector<std::int64_t> counter(sizes.size(), 0);
  while (true) {
    body(offsets);
    std::size_t d = sizes.size();
    while (d-- > 0) {
      ++counter[d];
      for (std::size_t k = 0; k < N; ++k) offsets[k] += strides[k][d];
      if (counter[d] < sizes[d]) break;
      for (std::size_t k = 0; k < N; ++k) offsets[k] -= strides[k][d] * sizes[d];
      counter[d] = 0;
    }
    if (d == static_cast<std::size_t>(-1)) return;  // wrapped around every dim
  }
}

// One tile of a 2-d transpose: dst[i * dst_stride + j] = src[i + j * src_stride] for
// i < rows, j < cols. With AVX2, 8x8 blocks of 4-byte and 4x4 blocks of 8-byte elements
// are transposed in registers (unpack/shuffle/permute); the edges are scalar.
template <typename U>
inline void transpose_tile(const U* src, U* dst, std::int64_t rows, std::int64_t cols,
                           std::int64_t src_stride, std::int64_t dst_stride) {
  std::int64_t i_done = 0;
  std::int64_t j_done = 0;
#if defined(__AVX2__)
  if constexpr (sizeof(U) == 4) {
    i_done = rows - rows % 8;
    j_done = cols - cols % 8;
    for (std::int64_t i = 0; i < i_done; i += 8) {
      for (std::int64_t j = 0; j < j_done; j += 8) {
        const float* s = reinterpret_cast<const float*>(src + i + j * src_stride);
        float* d = reinterpret_cast<float*>(dst + i * dst_stride + j);
        __m256 r[8], t[8];
        for (int k = 0; k < 8; ++k) r[k] = _mm256_loadu_ps(s + k * src_stride);
        for (int k = 0; k < 8; k += 2) {
          t[k] = _mm256_unpacklo_ps(r[k], r[k + 1]);
          t[k + 1] = _mm256_unpackhi_ps(r[k], r[k + 1]);
        }
        for (int k = 0; k < 8; k += 4) {
          r[k] = _mm256_shuffle_ps(t[k], t[k + 2], _MM_SHUFFLE(1, 0, 1, 0));
          r[k + 1] = _mm256_shuffle_ps(t[k], t[k + 2], _MM_SHUFFLE(3, 2, 3, 2));
          r[k + 2] = _mm256_shuffle_ps(t[k + 1], t[k + 3], _MM_SHUFFLE(1, 0, 1, 0));
          r[k + 3] = _mm256_shuffle_ps(t[k + 1], t[k + 3], _MM_SHUFFLE(3, 2, 3, 2));
        }
        for (int k = 0; k < 4; ++k) {
          _mm256_storeu_ps(d + k * dst_stride, _mm256_permute2f128_ps(r[k], r[k + 4], 0x20));
          _mm256_storeu_ps(d + (k + 4) * dst_stride, _mm256_permute2f128_ps(r[k], r[k + 4], 0x31));
        }
      }
    }
  } else if constexpr (sizeof(U) == 8) {
    i_done = rows - rows % 4;
    j_done = cols - cols % 4;
    for (std::int64_t i = 0; i < i_done; i += 4) {
      for (std::int64_t j = 0; j < j_done; j += 4) {
        const double* s = reinterpret_cast<const double*>(src + i + j * src_stride);
        double* d = reinterpret_cast<double*>(dst + i * dst_stride + j);
        const __m256d r0 = _mm256_loadu_pd(s);
        const __m256d r1 = _mm256_loadu_pd(s + src_stride);
        const __m256d r2 = _mm256_loadu_pd(s + 2 * src_stride);
        const __m256d r3 = _mm256_loadu_pd(s + 3 * src_stride);
        const __m256d t0 = _mm256_unpacklo_pd(r0, r1);
        const __m256d t1 = _mm256_unpackhi_pd(r0, r1);
        const __m256d t2 = _mm256_unpacklo_pd(r2, r3);
        const __m256d t3 = _mm256_unpackhi_pd(r2, r3);
        _mm256_storeu_pd(d, _mm256_permute2f128_pd(t0, t2, 0x20));
        _mm256_storeu_pd(d + dst_stride, _mm256_permute2f128_pd(t1, t3, 0x20));
        _mm256_storeu_pd(d + 2 * dst_stride, _mm256_permute2f128_pd(t0, t2, 0x31));
        _mm256_storeu_pd(d + 3 * dst_stride, _mm256_permute2f128_pd(t1, t3, 0x31));
      }
    }
  }
#endif
  // Scalar edges: the rows below i_done past column j_done, then all rows from i_done.
  for (std::int64_t i = 0; i < i_done; ++i)
    for (std::int64_t j = j_done; j < cols; ++j) dst[i * dst_stride + j] = src[i + j * src_stride];
  for (std::int64_t i = i_done; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) dst[i * dst_stride + j] = src[i + j * src_stride];
}

// The permutation's copy with size-1 dims dropped and output dims that are also adjacent
// in the input merged: the output's sizes and each one's stride in the input. False when a
// dim has size 0 (nothing to copy).
inline bool simplified_permutation(const Shape& in_shape, const Shape& perm, Shape& sizes,
                                   Shape& src_strides) {
  const Shape in_strides = contiguous_strides(in_shape);
  for (std::size_t d = 0; d < perm.size(); ++d) {
    const std::int64_t size = in_shape[static_cast<std::size_t>(perm[d])];
    if (size == 0) return false;
    if (size == 1) continue;
    sizes.push_back(size);
    src_strides.push_back(in_strides[static_cast<std::size_t>(perm[d])]);
  }
  for (std::size_t d = sizes.size(); d-- > 1;) {
    if (src_strides[d - 1] != src_strides[d] * sizes[d]) continue;
    sizes[d - 1] *= sizes[d];
    src_strides[d - 1] = src_strides[d];
    sizes.erase(sizes.begin() + static_cast<std::ptrdiff_t>(d));
    src_strides.erase(src_strides.begin() + static_cast<std::ptrdiff_t>(d));
  }
  return true;
}

// The permuted copy when the last output dim is contiguous in the input: memcpy runs.
template <typename U>
void copy_runs(const U* src, U* dst, const Shape& sizes, const Shape& src_strides) {
  const std::int64_t run = sizes.back();
  const Shape outer_sizes(sizes.begin(), sizes.end() - 1);
  const Shape outer_strides(src_strides.begin(), src_strides.end() - 1);
  const std::size_t run_bytes = static_cast<std::size_t>(run) * sizeof(U);
  U* out = dst;
  for_each_offset<1>(outer_sizes, {outer_strides}, [&](const std::array<std::int64_t, 1>& off) {
    std::memcpy(out, src + off[0], run_bytes);
    out += run;
  });
}

// Blocked transpose: `a` is the output dim that is innermost in the input (stride 1), `b`
// the last output dim. Reads run along a, writes along b; a tile keeps both cached.
template <typename U>
void blocked_transpose(const U* src, U* dst, const Shape& sizes, const Shape& src_strides) {
  const std::size_t rank = sizes.size();
  const Shape dst_strides = contiguous_strides(sizes);
  const std::size_t b = rank - 1;
  std::size_t a = 0;
  while (src_strides[a] != 1) ++a;
  Shape outer_sizes;
  std::array<Shape, 2> outer_strides;
  for (std::size_t d = 0; d < rank; ++d) {
    if (d == a || d == b) continue;
    outer_sizes.push_back(sizes[d]);
    outer_strides[0].push_back(src_strides[d]);
    outer_strides[1].push_back(dst_strides[d]);
  }
  constexpr std::int64_t tile = 32;
  const std::int64_t size_a = sizes[a];
  const std::int64_t size_b = sizes[b];
  const std::int64_t src_stride_b = src_strides[b];
  const std::int64_t dst_stride_a = dst_strides[a];
  for_each_offset<2>(outer_sizes, outer_strides, [&](const std::array<std::int64_t, 2>& off) {
    const U* s = src + off[0];
    U* o = dst + off[1];
    for (std::int64_t i0 = 0; i0 < size_a; i0 += tile) {
      const std::int64_t i1 = std::min(i0 + tile, size_a);
      for (std::int64_t j0 = 0; j0 < size_b; j0 += tile) {
        const std::int64_t j1 = std::min(j0 + tile, size_b);
        transpose_tile(s + i0 + j0 * src_stride_b, o + i0 * dst_stride_a + j0, i1 - i0, j1 - j0,
                       src_stride_b, dst_stride_a);
      }
    }
  });
}

// dst (contiguous, the permuted shape) = src (contiguous, in_shape) with output dim d taken
// from input dim perm[d].
//
// Size-1 dims are dropped and output dims that are also adjacent in the input are merged.
// Then either the last output dim is contiguous in the input, and the copy is a loop of
// memcpy runs (head split/merge (B,L,H,D)->(B,H,L,D) copies runs of D), or the copy is a
// 2-d transpose between the input's innermost dim and the output's last dim, done in
// cache-sized tiles for every index of the remaining dims.
template <typename U>
void permute_copy(const U* src, U* dst, const Shape& in_shape, const Shape& perm) {
  Shape sizes, src_strides;
  if (!simplified_permutation(in_shape, perm, sizes, src_strides)) return;
  if (sizes.empty())
    dst[0] = src[0];
  else if (src_strides.back() == 1)  // contiguous runs of sizes.back() elements
    copy_runs(src, dst, sizes, src_strides);
  else
    blocked_transpose(src, dst, sizes, src_strides);
}

// For o < outer and k < count, copies the block of `inner` elements at
//   src + o * src_outer + k * src_step        to        dst + o * dst_outer + k * dst_step.
// Narrow, slice (step > 1: inner = the trailing size), concat, and the scatter of their
// backwards are all instances.
template <typename U>
void copy_blocks(const U* src, U* dst, std::int64_t outer, std::int64_t count, std::int64_t inner,
                 std::int64_t src_outer, std::int64_t src_step, std::int64_t dst_outer,
                 std::int64_t dst_step) {
  if (inner == 0) return;
  const std::size_t bytes = static_cast<std::size_t>(inner) * sizeof(U);
  for (std::int64_t o = 0; o < outer; ++o) {
    const U* s = src + o * src_outer;
    U* d = dst + o * dst_outer;
    if (inner == 1) {
      for (std::int64_t k = 0; k < count; ++k) d[k * dst_step] = s[k * src_step];
    } else {
      for (std::int64_t k = 0; k < count; ++k)
        std::memcpy(d + k * dst_step, s + k * src_step, bytes);
    }
  }
}

}  // namespace headgrad::cpu
