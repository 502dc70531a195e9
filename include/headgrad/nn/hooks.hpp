// Hook points: named places in a forward pass where the active handlers (nn/handler_scope.hpp)
// may read the tensor and replace it; the forward continues from the replacement
// (gradients flow through it). There is one mechanism for watching and editing a model:
// inspect::Hooks edits, inspect::Capture and run_with_cache record, all at hook points.
//
// A module owns its points, as in TransformerLens: it registers each under a name
// (Module::register_hook_point) and passes its tensor through it in forward,
//     x = hook_resid_pre_(x);
// and a module written in Python does the same with `self.hook_x = headgrad.nn.HookPoint()`
// and `x = self.hook_x(x)`. A point's full name is "<module path>.<name>", as
// TransformerLens's "blocks.0.attn.hook_z" (Module::named_hook_points).
//
// The built-in modules' points and their shapes (N batch, L queries, S' keys after
// add_bias_kv / add_zero_attn, H heads, d head_dim, E embed_dim / d_model, F
// dim_feedforward, V vocab):
//
//   every attention layer (MultiheadAttention, HeadwiseMultiheadAttention,
//   KerasMultiHeadAttention), always batch first and per head (AttentionHookPoints):
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

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "headgrad/core/tensor.hpp"
#include "headgrad/nn/handler_scope.hpp"

namespace headgrad::nn {

class Module;

class HookPoint {
 public:
  // `per_head`: the tensor has a head axis at dim 1, (N, H, ...), so a hook may take one
  // head's slice of it (inspect::Hooks::add with a head).
  explicit HookPoint(bool per_head = false);
  HookPoint(const HookPoint&) = delete;
  HookPoint& operator=(const HookPoint&) = delete;

  // The tensor the forward continues with: `value` itself when no active handler wants
  // this point, else what the handlers make of it, in turn (ShapeError/DTypeError/
  // DeviceError naming the point when a replacement does not fit where the value stood).
  Tensor operator()(const Tensor& value) const;
  // Whether an active handler wants this point in this forward.
  bool watched() const;

  // A number no other point of this process has had: handlers know points by it.
  std::uint64_t id() const { return id_; }
  bool per_head() const { return per_head_; }
  // The name and the owner's type it was registered under ("z", "MultiheadAttention"), for
  // messages; empty before registration.
  const std::string& name() const { return name_; }
  const std::string& owner_type() const { return owner_type_; }
  void set_registration(std::string name, std::string owner_type);

 private:
  std::uint64_t id_;
  bool per_head_;
  std::string name_, owner_type_;
};

// A handler is active on a thread while a HandlerScope of it is (nn/handler_scope.hpp:
// inspect::Hooks::activate() and inspect::Capture::activate() make one).
class HookHandler : public ScopedHandler {
 public:
  using ScopedHandler::ScopedHandler;
  // Whether the handler has anything to do at `point` in this forward.
  virtual bool wants(const HookPoint& point) const = 0;
  // The tensor the forward continues with: `value` itself, or (unless read_only()) a
  // replacement of the same shape, dtype and device. Called only where wants() is true.
  virtual Tensor apply(const HookPoint& point, const Tensor& value) = 0;
};

// The handlers active on this thread, in the order they run at a point (empty when none).
std::vector<HookHandler*> active_hook_handlers();

// The seven per-head points of an attention layer, registered on it under their names by
// declare(); the layer passes its tensors through them on its composed path.
struct AttentionHookPoints {
  const HookPoint* q = nullptr;
  const HookPoint* k = nullptr;
  const HookPoint* v = nullptr;
  const HookPoint* scores = nullptr;
  const HookPoint* pattern = nullptr;
  const HookPoint* z = nullptr;
  const HookPoint* result = nullptr;
  static AttentionHookPoints declare(Module& layer);
  // Whether an active handler wants any of them (the layer then takes its composed path).
  bool watched() const;
};

}  // namespace headgrad::nn
