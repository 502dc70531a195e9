// Hook points: named places in a forward pass where a handler may read the tensor and
// replace it, and the forward continues from the replacement (gradients flow through it).
// nn's side of interventions; inspect::Hooks (inspect/hooks.hpp) is the handler users make,
// with names "<module path>.<point>" as TransformerLens's "blocks.0.attn.hook_z".
//
// The points, and their shapes (N batch, L queries, S' keys after add_bias_kv /
// add_zero_attn, H heads, d head_dim, E embed_dim / d_model, F dim_feedforward, V vocab):
//
//   every attention layer (MultiheadAttention, HeadwiseMultiheadAttention,
//   KerasMultiHeadAttention), always batch first and per head:
//     q        (N, H, L, d)    each head's projected query (before the 1/sqrt(d) scale)
//     k, v     (N, H, S', d)
//     scores   (N, H, L, S')   scaled q k^T after masking (-inf where blocked)
//     pattern  (N, H, L, S')   softmax of the scores, before dropout
//     z        (N, H, L, d)    each head's output after its gate (what W_o reads)
//     result   (N, H, L, E)    z_h W_o[:, h*d:(h+1)*d]^T, the head's contribution: the
//                              layer's output is the sum over heads plus out_proj.bias
//   TransformerEncoderLayer / TransformerDecoderLayer, in the layer's own layout ((N, L, E)
//   when batch_first, else (L, N, E)):
//     resid_pre   the layer's input
//     attn_out    the self-attention block's output (after its dropout)
//     resid_mid   the residual stream after the self-attention block (post-norm: after norm1)
//     cross_attn_out, resid_mid_cross   (decoder only) the same for the cross-attention block
//     mlp_pre     linear1's output (..., F), before the activation
//     mlp_post    after the activation (..., F)
//     mlp_out     the feed-forward block's output (after its dropout)
//     resid_post  the layer's output
//   GPT (and the toy models built on it), batch first:
//     embed       token (or input) embedding plus positions (N, L, E), before dropout
//     ln_final    the input of lm_head (N, L, E): norm's output (norm_first) or the last
//                 layer's output (a post-norm stack ends in a norm)
//     logits      (N, L, V)
//
// Cost. With no handler active on the thread (the default) a hook point is one
// thread-local load and a branch; an attention layer keeps its fused path. A handler that
// wants any point of an attention layer sends it down the composed path (the rounding of
// its output may change; its value does not).
#pragma once

#include <string>
#include <vector>

#include "headgrad/core/tensor.hpp"
#include "headgrad/nn/handler_scope.hpp"
#include "headgrad/nn/module.hpp"

namespace headgrad::nn {

enum class HookPoint {
  q,
  k,
  v,
  scores,
  pattern,
  z,
  result,  // attention layers, per head
  resid_pre,
  attn_out,
  resid_mid,
  cross_attn_out,
  resid_mid_cross,  // transformer layers
  mlp_pre,
  mlp_post,
  mlp_out,
  resid_post,
  embed,
  ln_final,
  logits  // models
};

// Every point, in the order above.
const std::vector<HookPoint>& all_hook_points();
std::string to_string(HookPoint point);               // "q", ..., "logits"
HookPoint parse_hook_point(const std::string& name);  // ValueError listing the names
// q, k, v, scores, pattern, z, result: tensors with a head axis (dim 1).
bool is_head_point(HookPoint point);

// The points each module type fires (empty for a module without hook points).
std::vector<HookPoint> hook_points_of(const Module& module);

// A handler is active on a thread while a HandlerScope(HandlerKind::hooks, ...) of it is
// (nn/handler_scope.hpp: a checked stack per thread; inspect::Hooks::activate() makes one).
class HookHandler : public ScopedHandler {
 public:
  using ScopedHandler::ScopedHandler;
  // Whether the handler has anything to do at `point` of `module` this forward.
  virtual bool wants(const Module* module, HookPoint point) const = 0;
  // The tensor the forward continues with: `value` itself, or a replacement of the same
  // shape, dtype and device. Called only where wants() is true.
  virtual Tensor apply(const Module* module, HookPoint point, const Tensor& value) = 0;
};

// The handler active on this thread (its innermost scope's), or null (the default).
HookHandler* hook_handler();

// What a module calls at each of its points: `value`, or the active handler's replacement.
Tensor hook(const Module* module, HookPoint point, const Tensor& value);
// Whether the active handler wants any point of `module` (an attention layer then takes
// its composed path, where every point exists).
bool hooks_want(const Module* module);

}  // namespace headgrad::nn
