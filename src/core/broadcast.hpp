// Broadcast layout shared by both devices' elementwise loops (src/ops/cpu/broadcast.hpp,
// src/cuda/kernels/elementwise.cuh) and reductions: a shape around one dim, the strides that read
// an input as if broadcast to the output's shape, and the dim merging that turns the common cases
// (same shape, a bias over rows, a scalar) into one long contiguous run. Plain C++, so nvcc
// compiles it too.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "headgrad/core/shape.hpp"

namespace headgrad::detail {

// A shape viewed as (outer, n, inner) around `dim`: the sizes before, at and after it (a 0-d
// shape: 1, 1, 1). How both devices walk a reduction over one dim (max and its backward).
struct AroundDim {
  std::int64_t outer = 1, n = 1, inner = 1;
};
inline AroundDim around_dim(const Shape& shape, std::int64_t dim) {
  AroundDim a;
  if (shape.empty()) return a;
  const auto d = static_cast<std::size_t>(dim);
  for (std::size_t i = 0; i < d; ++i) a.outer *= shape[i];
  a.n = shape[d];
  for (std::size_t i = d + 1; i < shape.size(); ++i) a.inner *= shape[i];
  return a;
}

// Strides (elements) for reading a contiguous tensor of shape `in` as if broadcast to
// `out` (right-aligned; 0 along broadcast dims). The caller has checked that `in`
// broadcasts to `out`.
inline Shape broadcast_strides(const Shape& in, const Shape& out) {
  Shape strides(out.size(), 0);
  const Shape in_strides = contiguous_strides(in);
  const std::size_t lead = out.size() - in.size();
  for (std::size_t i = 0; i < in.size(); ++i) strides[lead + i] = in[i] == 1 ? 0 : in_strides[i];
  return strides;
}

// Given `sizes` (the output's shape) and strides[k] (operand k's strides in that index
// space): drops size-1 dims, then merges dim d into d+1 wherever every operand is
// contiguous across them (strides[k][d] == strides[k][d+1] * sizes[d+1]). The result
// visits the same elements in the same order with fewer, longer dims; a single element
// leaves `sizes` empty.
template <std::size_t K>
void merge_dims(Shape& sizes, std::array<Shape, K>& strides) {
  Shape s;
  std::array<Shape, K> st;
  for (std::size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 1) continue;
    s.push_back(sizes[d]);
    for (std::size_t k = 0; k < K; ++k) st[k].push_back(strides[k][d]);
  }
  for (std::size_t d = s.size(); d-- > 1;) {
    bool mergeable = true;
    for (std::size_t k = 0; k < K; ++k) mergeable = mergeable && st[k][d - 1] == st[k][d] * s[d];
    if (!mergeable) continue;
    s[d - 1] *= s[d];
    s.erase(s.begin() + static_cast<std::ptrdiff_t>(d));
    for (std::size_t k = 0; k < K; ++k) {
      st[k][d - 1] = st[k][d];
      st[k].erase(st[k].begin() + static_cast<std::ptrdiff_t>(d));
    }
  }
  sizes = std::move(s);
  strides = std::move(st);
}

}  // namespace headgrad::detail
