// The check every in-place write of the ops layer makes first (internal).
#pragma once

#include "headgrad/core/tensor.hpp"

namespace headgrad::detail {

// Throws an Error when `t` is undefined, and an AutogradError naming `op` when it requires
// grad while grad mode is on: an in-place write is not recorded in the graph.
void check_inplace(const Tensor& t, const char* op);

}  // namespace headgrad::detail
