// layer_norm over the trailing dims given by normalized_shape, like
// torch.nn.functional.layer_norm: y = (x - mean) / sqrt(var_biased + eps) * weight + bias.
#pragma once

#include "headgrad/core/tensor.hpp"

namespace headgrad {

Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight = Tensor(),
                  const Tensor& bias = Tensor(), double eps = 1e-5);

}  // namespace headgrad
