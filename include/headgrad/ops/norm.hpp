// layer_norm over the trailing dims given by normalized_shape, like
// torch.nn.functional.layer_norm: y = (x - mean) / sqrt(var_biased + eps) * weight + bias.
#pragma once

#include "headgrad/core/tensor.hpp"

namespace headgrad {

Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight = Tensor(),
                  const Tensor& bias = Tensor(), double eps = 1e-5);

// G layer norms over the last dim, one per slice of the leading dim (the layer norm of a
// model ensemble, nn/gpt_ensemble.hpp): x (G, *, D), weight (G, D), bias (G, D) or
// undefined -> (G, *, D),
// y[g] = layer_norm(x[g], {D}, weight[g], bias[g]). On the CPU bitwise that, group by group.
Tensor grouped_layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(),
                          double eps = 1e-5);

}  // namespace headgrad
