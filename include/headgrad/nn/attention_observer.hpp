// What an attention layer reports about each forward, per head, and to whom: nn's side of
// inspection. nn::MultiheadAttention and nn::HeadwiseMultiheadAttention call the observer
// active on the thread (none by default: one thread-local load per forward); inspect's
// Capture (inspect/capture.hpp) is the observer users make. nn knows nothing of inspect.
//
// Taps, whatever the layer's batch_first or batching (N = 1 for unbatched input), with
// H heads, d = head_dim, E = embed_dim, S' = keys after add_bias_kv / add_zero_attn:
//   q             (N, H, L, d)   the projected query of each head, as the scores read it
//   k, v          (N, H, S', d)
//   scores        (N, H, L, S')  scaled q k^T after masking (-inf where blocked), before softmax
//   pattern       (N, H, L, S')  softmax of the scores, before dropout
//   z             (N, H, L, d)   each head's output after its gate: what the output
//                                projection reads
//   contribution  (N, H, L, E)   z_h W_o[:, h*d:(h+1)*d]^T: the layer's output (batch first)
//                                is the sum over h of contribution plus out_proj.bias
// The tensors reported are the graph's own, so an observer that retains their gradients
// (Tensor::retain_grad) reads the backward pass through them too.
#pragma once

#include <vector>

#include "headgrad/core/tensor.hpp"
#include "headgrad/nn/handler_scope.hpp"
#include "headgrad/nn/module.hpp"

namespace headgrad::nn {

enum class AttentionTap { q, k, v, scores, pattern, z, contribution };

// Every tap, in the order above.
const std::vector<AttentionTap>& all_attention_taps();

// An observer is active on a thread while a HandlerScope(HandlerKind::observer, ...) of it
// is (nn/handler_scope.hpp; inspect::Capture::activate() makes one).
class AttentionObserver : public ScopedHandler {
 public:
  using ScopedHandler::ScopedHandler;
  // Whether the observer wants `tap` of `layer` (false for layers it does not watch).
  virtual bool wants(const Module* layer, AttentionTap tap) const = 0;
  // One tap of one forward: `parts` is one (N, H, ...) tensor (per_head false), or H
  // tensors (N, ...) of the heads in order (per_head true). Called only for wanted taps.
  virtual void report(const Module* layer, AttentionTap tap, std::vector<Tensor> parts,
                      bool per_head) = 0;
};

// The observer active on this thread (its innermost scope's), or null (the default:
// attention layers report nothing).
AttentionObserver* attention_observer();

}  // namespace headgrad::nn
