// Broadcast iteration on raw pointers. The output is contiguous; each input is read
// through strides that are 0 along broadcast dims. Adjacent dims that stay contiguous for
// every operand are merged first, so the common cases (same shape, bias over rows, scalar)
// become one long inner run that the compiler vectorizes.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "headgrad/core/shape.hpp"

namespace headgrad::cpu {

// Strides (in elements) for reading `in` as if broadcast to `out` (right-aligned).
inline Shape broadcast_strides(const Shape& in, const Shape& out) {
  Shape strides(out.size(), 0);
  const Shape in_strides = contiguous_strides(in);
  const std::size_t lead = out.size() - in.size();
  for (std::size_t i = 0; i < in.size(); ++i) {
    strides[lead + i] = in[i] == 1 ? 0 : in_strides[i];
  }
  return strides;
}

// Calls inner(out_offset, in_offsets, n, inner_strides) for runs of n contiguous output
// elements; input k's elements are at in_offsets[k] + i * inner_strides[k], i < n.
template <std::size_t N, typename F>
void broadcast_loop(const Shape& out_shape, const std::array<Shape, N>& in_shapes, F&& inner) {
  // Strides of every operand in the output's index space; drop size-1 dims.
  Shape sizes;
  std::array<Shape, N> strides;
  {
    std::array<Shape, N> full;
    for (std::size_t k = 0; k < N; ++k) full[k] = broadcast_strides(in_shapes[k], out_shape);
    for (std::size_t d = 0; d < out_shape.size(); ++d) {
      if (out_shape[d] == 1) continue;
      sizes.push_back(out_shape[d]);
      for (std::size_t k = 0; k < N; ++k) strides[k].push_back(full[k][d]);
    }
  }
  // Merge dim d into d+1 when every operand is contiguous across them.
  for (std::size_t d = sizes.size(); d-- > 1;) {
    bool mergeable = true;
    for (std::size_t k = 0; k < N; ++k)
      mergeable = mergeable && strides[k][d - 1] == strides[k][d] * sizes[d];
    if (!mergeable) continue;
    sizes[d - 1] *= sizes[d];
    sizes.erase(sizes.begin() + static_cast<std::ptrdiff_t>(d));
    for (std::size_t k = 0; k < N; ++k) {
      strides[k][d - 1] = strides[k][d];
      strides[k].erase(strides[k].begin() + static_cast<std::ptrdiff_t>(d));
    }
  }
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
