// Member k's slice of a tensor stacked over `members` models (leading dim), as a view
// sharing its storage: what the ensemble's optimizer and clipping update in place.
#pragma once

#include <cstdint>

#include "headgrad/core/tensor.hpp"

namespace headgrad::optim::detail {

inline Tensor member_slice(const Tensor& t, std::int64_t k, std::int64_t members) {
  Tensor v = t.detach();
  v.impl()->offset += k * (t.numel() / members);
  v.impl()->shape = Shape(t.shape().begin() + 1, t.shape().end());
  return v;
}

}  // namespace headgrad::optim::detail
