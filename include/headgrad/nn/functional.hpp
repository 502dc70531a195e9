// Functional attention, composed from core primitives (matmul, mul, masked_fill / add,
// softmax, dropout) so that its gradient is theirs: nothing here has a hand-written
// backward.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "headgrad/core/generator.hpp"
#include "headgrad/core/tensor.hpp"
#include "headgrad/nn/attention_mask.hpp"
#include "headgrad/nn/hooks.hpp"

namespace headgrad::nn::functional {

struct AttentionOptions {
  // Every mask is applied (they combine: a key blocked by any is blocked). Each must
  // broadcast to the scores (..., L, S).
  std::vector<AttentionMask> masks;
  // Blocks key j for query i when j > i (top-left aligned when L != S, as PyTorch SDPA).
  bool is_causal = false;
  // Multiplies the scores; default 1/sqrt(E) with E = q.size(-1).
  std::optional<double> scale;
  // Dropout on the attention weights (applied when > 0, as torch SDPA's dropout_p).
  double dropout_p = 0.0;
  Generator* generator = nullptr;
  // Return the attention weights (after dropout, as PyTorch MHA returns them).
  bool need_weights = false;
  // Return the intermediate scores and pattern too (for per-head taps, see
  // inspect/capture.hpp); they are the tensors of the graph, so their gradients can be
  // retained.
  bool keep_internals = false;
  // Called with HookPoint::scores on the masked scores and HookPoint::pattern on the
  // softmax (before dropout); the attention continues from what it returns (hook points,
  // nn/hooks.hpp). Unset (the default): nothing is called.
  std::function<Tensor(HookPoint, const Tensor&)> edit;
};

struct AttentionResult {
  Tensor output;   // (..., L, Ev)
  Tensor weights;  // (..., L, S), undefined unless need_weights
  // With keep_internals (undefined otherwise):
  Tensor query, key, value;  // the inputs q, k, v as given
  Tensor scores;             // (..., L, S) scaled and masked (-inf where blocked), before softmax
  Tensor pattern;            // (..., L, S) softmax of the scores, before dropout
};

// softmax(q k^T * scale + masks) v for q (..., L, E), k (..., S, E), v (..., S, Ev); the
// leading dims broadcast. Fully blocked query rows give zeros (see attention_mask.hpp).
AttentionResult scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                             const AttentionOptions& options = {});

}  // namespace headgrad::nn::functional
