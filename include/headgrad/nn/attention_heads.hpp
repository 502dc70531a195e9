// Per-head access to an attention layer's weights, whatever its layout: the interface
// inspection reads heads through (inspect/heads.hpp, inspect/patching.hpp), implemented by
// MultiheadAttention (row blocks of the packed projections), HeadwiseMultiheadAttention
// (each head's own Linears) and KerasMultiHeadAttention (slices of the einsum kernels).
//
// Head h of a layer with H heads of width d (value width dv, model width E):
//   w_q (d, E), w_k (d, kdim), w_v (dv, vdim)   the rows of the projections that make its
//   b_q, b_k (d), b_v (dv)                      q, k and v (as y = x W^T + b); undefined
//                                               without biases
//   bias_k (d), bias_v (dv)                     its appended key/value (add_bias_kv), or
//                                               undefined
//   w_o (E, dv)                                 its column block of the output projection
// The tensors are views of the parameters (sharing storage and gradient flow); head_grads
// gives the same blocks of the parameters' gradients (undefined where a parameter has none).
#pragma once

#include <cstdint>

#include "headgrad/core/tensor.hpp"

namespace headgrad::nn {

struct HeadWeights {
  Tensor w_q, w_k, w_v;
  Tensor b_q, b_k, b_v;
  Tensor bias_k, bias_v;
  Tensor w_o;
  // Elements in the defined tensors: the parameters that belong to this head alone.
  std::int64_t numel() const;
};

class AttentionHeads {
 public:
  virtual ~AttentionHeads() = default;
  virtual std::int64_t head_count() const = 0;
  virtual std::int64_t head_width() const = 0;  // d, the query/key width of a head
  // IndexError naming the layer for h outside [0, head_count()).
  virtual HeadWeights head_weights(std::int64_t h) const = 0;
  virtual HeadWeights head_grads(std::int64_t h) const = 0;
};

}  // namespace headgrad::nn
