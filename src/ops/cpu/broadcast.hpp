// Broadcast iteration on raw pointers. The output is contiguous; each input is read
// through strides that are 0 along broadcast dims. Adjacent dims that stay contiguous for
// every operand are merged first (detail::merge_dims, shared with the CUDA launcher), so
// the common cases (same shape, bias over rows, scalar) become one long inner run that the
// compiler vectorizes.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "core/broadcast.hpp"
#include "headgrad/core/shape.hpp"

namespace headgrad::cpu {

using detail::broadcast_strides;

// Calls inner(out_offset, in_offsets, n, inner_strides) for runs of n contiguous output
// elements; input k's elements are at in_offsets[k] + i * inner_strides[k], i < n.
template <std::size_t N, typename F>
void broadcast_loop(const Shape& out_shape, const std::array<Shape, N>& in_shapes, F&& inner) {
  Shape sizes = out_shape;
  std::array<Shape, N> strides;
  for (std::size_t k = 0; k < N; ++k) strides[k] = broadcast_strides(in_shapes[k], out_shape);
  detail::merge_dims(sizes, strides);
  std::array<std::int64_t, N> offsets{};
  std::array<std::int64_t, N> inner_strides{};
  if (sizes.empty()) {  // a single element
    inner(std::int64_t{0}, offsets, std::int64_t{1}, inner_strides);
    return;
  }
  const std::size_t rank = sizes.size();
  const std::int64_t n = sizes[rank - 1];
  for (std::size_t k = 0; k < N; ++k) inner_strides[k] = strides[k][rank - 1];
  std::int64_t outer = 1;
  for (std::size_t d = 0; d + 1 < rank; ++d) outer *= sizes[d];
  std::vector<std::int64_t> counter(rank, 0);
  for (std::int64_t o = 0; o < outer; ++o) {
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

}  // namespace headgrad::cpu
