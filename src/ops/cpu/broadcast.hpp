// Broadcast iteration on raw pointers. The output is contiguous; each input is read
// through strides that are 0 along broadcast dims. Adjacent dims that stay contiguous for
// every operand are merged first (detail::merge_dims, shared with the CUDA launcher), so
// the common cases (same shape, bias over rows, scalar) become one long inner run that the
// compiler vectorizes.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "core/broadcast.hpp"
#include "core/parallel.hpp"
#include "headgrad/core/shape.hpp"

namespace headgrad::cpu {

using detail::broadcast_strides;

namespace detail_loop {

// Runs inner over the outer indices [first, last) of merged (sizes, strides).
template <std::size_t N, typename F>
void loop_range(const Shape& sizes, const std::array<Shape, N>& strides, std::int64_t first,
                std::int64_t last, F& inner) {
  if (first >= last) return;  // nothing to do (also: a size-0 dim, which % must not see)
  const std::size_t rank = sizes.size();
  const std::int64_t n = sizes[rank - 1];
  std::array<std::int64_t, N> offsets{};
  std::array<std::int64_t, N> inner_strides{};
  for (std::size_t k = 0; k < N; ++k) inner_strides[k] = strides[k][rank - 1];
  // The outer multi-index (dims 0..rank-2) of `first`, and the input offsets there.
  std::vector<std::int64_t> counter(rank, 0);
  for (std::int64_t rest = first, d = static_cast<std::int64_t>(rank) - 2; d >= 0; --d) {
    const auto dim = static_cast<std::size_t>(d);
    counter[dim] = rest % sizes[dim];
    rest /= sizes[dim];
    for (std::size_t k = 0; k < N; ++k) offsets[k] += counter[dim] * strides[k][dim];
  }
  for (std::int64_t o = first; o < last; ++o) {
    inner(o * n, offsets, n, inner_strides);
    // advance the outer multi-index (dims 0..rank-2) and the input offsets
    for (std::size_t d = rank - 1; d-- > 0;) {
      ++counter[d];
      for (std::size_t k = 0; k < N; ++k) offsets[k] += strides[k][d];
      if (counter[d] < sizes[d]) break;
      for (std::size_t k = 0; k < N; ++k) offsets[k] -= strides[k][d] * sizes[d];
      counter[d] = 0;
    }
  }
}

template <std::size_t N>
void merged(const Shape& out_shape, const std::array<Shape, N>& in_shapes, Shape& sizes,
            std::array<Shape, N>& strides) {
  sizes = out_shape;
  for (std::size_t k = 0; k < N; ++k) strides[k] = broadcast_strides(in_shapes[k], out_shape);
  detail::merge_dims(sizes, strides);
}

}  // namespace detail_loop

// Calls inner(out_offset, in_offsets, n, inner_strides) for runs of n contiguous output
// elements; input k's elements are at in_offsets[k] + i * inner_strides[k], i < n.
template <std::size_t N, typename F>
void broadcast_loop(const Shape& out_shape, const std::array<Shape, N>& in_shapes, F&& inner) {
  Shape sizes;
  std::array<Shape, N> strides;
  detail_loop::merged(out_shape, in_shapes, sizes, strides);
  if (sizes.empty()) {  // a single element
    inner(std::int64_t{0}, std::array<std::int64_t, N>{}, std::int64_t{1},
          std::array<std::int64_t, N>{});
    return;
  }
  std::int64_t outer = 1;
  for (std::size_t d = 0; d + 1 < sizes.size(); ++d) outer *= sizes[d];
  detail_loop::loop_range(sizes, strides, 0, outer, inner);
}

// Outputs below this many elements are computed on one thread.
inline constexpr std::int64_t kParallelElements = 16384;
// Chunks of one long run start at multiples of this (whole SIMD vectors, so every element
// is computed by the same instructions as in a single call).
inline constexpr std::int64_t kRunAlign = 64;

// As broadcast_loop, split across the thread pool (core/parallel.hpp), for an `inner` that
// writes only the output elements [out_offset, out_offset + n) of its run: whole runs per
// thread, or aligned pieces of the run when there is only one.
template <std::size_t N, typename F>
void parallel_broadcast_loop(const Shape& out_shape, const std::array<Shape, N>& in_shapes,
                             F&& inner) {
  Shape sizes;
  std::array<Shape, N> strides;
  detail_loop::merged(out_shape, in_shapes, sizes, strides);
  std::int64_t total = 1;
  for (std::int64_t s : sizes) total *= s;
  if (sizes.empty() || total < kParallelElements) {
    broadcast_loop<N>(out_shape, in_shapes, inner);
    return;
  }
  const std::int64_t n = sizes.back();
  const std::int64_t outer = total / n;
  if (outer == 1) {
    std::array<std::int64_t, N> inner_strides{};
    for (std::size_t k = 0; k < N; ++k) inner_strides[k] = strides[k].back();
    headgrad::detail::parallel_for_aligned(n, kRunAlign, kParallelElements,
                                           [&](std::int64_t begin, std::int64_t end) {
                                             std::array<std::int64_t, N> offsets{};
                                             for (std::size_t k = 0; k < N; ++k)
                                               offsets[k] = begin * inner_strides[k];
                                             inner(begin, offsets, end - begin, inner_strides);
                                           });
    return;
  }
  const std::int64_t grain = std::max<std::int64_t>(1, kParallelElements / n);
  headgrad::detail::parallel_for(outer, grain, [&](std::int64_t first, std::int64_t last) {
    detail_loop::loop_range(sizes, strides, first, last, inner);
  });
}

}  // namespace headgrad::cpu
