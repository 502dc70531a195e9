// The composed attention core shared by every attention layer type when a handler watches
// or edits its intermediate tensors at its hook points (nn/hooks.hpp): from the heads'
// projections to the layer's output.
//
//   q (N, H, L, d), k (N, H, S', d), v (N, H, S', dv)      hook points q, k, v
//   scores = q k^T * scale, masked                          hook point scores
//   pattern = softmax(scores)                               hook point pattern
//   z = dropout(pattern) v, times the head gates            hook point z   (N, H, L, dv)
//   result = z_h W_o,h^T  (N, H, L, E)                      hook point result, when wanted
//   output = sum_h result + b_o, or project(z) otherwise    (N, L, E)
#pragma once

#include <functional>
#include <vector>

#include "headgrad/core/generator.hpp"
#include "headgrad/core/tensor.hpp"
#include "headgrad/nn/attention_mask.hpp"
#include "headgrad/nn/hooks.hpp"

namespace headgrad::nn::detail {

struct AttentionCoreArgs {
  const AttentionHookPoints* points = nullptr;  // the layer's
  Tensor q, k, v;                               // (N, H, L, d), (N, H, S', d), (N, H, S', dv)
  std::vector<AttentionMask> masks;             // each broadcasts to (N, H, L, S')
  bool is_causal = false;
  double scale = 1.0;
  double dropout_p = 0.0;
  Generator* generator = nullptr;
  bool need_weights = false;  // return the weights (after dropout)
  Tensor gates;               // (N|1, H, 1, 1), or undefined
  // () -> (H, dv, E): block h is W_o[:, h*dv:(h+1)*dv]^T; called only when `result` is wanted.
  std::function<Tensor()> w_o_heads;
  Tensor b_o;  // (E), or undefined
  // z (N, H, L, dv) -> (N, L, E) as the layer projects when no one wants `result`.
  std::function<Tensor(const Tensor&)> project;
};

struct AttentionCoreResult {
  Tensor output;   // (N, L, E), batch first
  Tensor weights;  // (N, H, L, S') after dropout, when need_weights
  Tensor pattern;  // (N, H, L, S') before dropout
};

AttentionCoreResult attention_core(const AttentionCoreArgs& args);

}  // namespace headgrad::nn::detail
