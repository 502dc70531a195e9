// The attention op: softmax(q k^T * scale + masks) v, in two forms.
//
// scaled_dot_product_attention(q, k, v) is composed from primitives (matmul, mul,
// masked_fill / add, softmax, dropout), so its gradient is theirs; its `edit` callback lets a
// caller replace the scores and the pattern mid-way (the attention layers' hook points).
//
// multihead_attention(args) takes every head's q, k and v as column blocks of token-major
// (N, len, features) tensors, as the input projections write them, and returns the merged
// heads (N, L, H * dv). It picks the fused kernel (forward and backward written by hand,
// src/ops/attention_fused.hpp) where it applies: a CPU tensor, no dropout, masks that need
// no gradient; otherwise it splits the heads, calls scaled_dot_product_attention and merges
// them. Both paths give the same values and gradients (tests/ops/test_attention_fused.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "headgrad/core/generator.hpp"
#include "headgrad/core/tensor.hpp"
#include "headgrad/ops/attention_mask.hpp"

namespace headgrad {

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
  // Return the intermediate scores and pattern too (the attention layers' hook points,
  // nn/hooks.hpp); they are the tensors of the graph, so their gradients can be retained.
  bool keep_internals = false;
  // Called on the masked scores (..., L, S), before the softmax, and on the softmax
  // (..., L, S), before dropout; the attention goes on with what they return. Unset (the
  // default): nothing is called.
  std::function<Tensor(const Tensor&)> edit_scores;
  std::function<Tensor(const Tensor&)> edit_pattern;
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

// A (N, len, features) tensor whose head h occupies columns
// [offset + h * width, offset + (h + 1) * width), width being the head dim.
struct HeadColumns {
  Tensor tensor;
  std::int64_t offset = 0;
};

// q (N, L, Fq), k (N, S, Fk), v (N, S, Fv) hold the heads as column blocks; q, k and v may be
// one tensor (self-attention on a packed in-projection (N, L, 3I): offsets 0, I, 2I).
struct HeadAttentionArgs {
  HeadColumns q, k, v;
  std::int64_t heads = 1;
  std::int64_t head_dim = 0;        // d: per-head width of q and k
  std::int64_t value_head_dim = 0;  // dv: per-head width of v
  double scale = 1.0;
  // Each broadcasts to (N, H, L, S) and has at most 4 dims.
  std::vector<AttentionMask> masks;
  double dropout_p = 0.0;  // on the weights, as scaled_dot_product_attention
  Generator* generator = nullptr;
  // Return the weights (N, H, L, S) (after dropout) as a differentiable output too.
  bool need_weights = false;
};

struct HeadAttentionResult {
  Tensor output;   // (N, L, H * dv), heads merged: head h in columns [h*dv, (h+1)*dv)
  Tensor weights;  // (N, H, L, S) when need_weights, undefined otherwise
};

// Every head's attention, fused or composed (see above). Errors name the op and the shapes.
HeadAttentionResult multihead_attention(const HeadAttentionArgs& args);

}  // namespace headgrad
