// Shared by the fused and the per-head multi-head attention: validating the inputs,
// moving them to one internal layout and turning PyTorch's mask arguments into
// AttentionMasks, so that both layouts read their arguments identically.
#pragma once

#include <cstdint>
#include <vector>

#include "headgrad/core/tensor.hpp"
#include "headgrad/nn/attention_mask.hpp"
#include "headgrad/nn/attention_options.hpp"

namespace headgrad::nn::detail {

struct PreparedAttention {
  // Batch first, batched: query (N, L, E), key (N, S, kdim), value (N, S, vdim).
  Tensor query, key, value;
  // Each broadcasts to the per-head scores (N, H, L, S) (S before add_bias_kv and
  // add_zero_attn: pad them with AttentionMask::pad_keys).
  std::vector<AttentionMask> masks;
  bool unbatched = false;
  std::int64_t batch = 0, target_len = 0, source_len = 0;
};

// Checks shapes and dtypes against `options` (errors name `op` and the shapes) and
// normalizes layout and masks: attn_mask (L, S) or (N*H, L, S), key_padding_mask (N, S)
// (unbatched (S)), is_causal.
PreparedAttention prepare_attention(const char* op, const Tensor& query, const Tensor& key,
                                    const Tensor& value, const MultiheadAttentionOptions& options,
                                    const MultiheadAttentionArgs& args);

// add_bias_kv's step, the one place both layouts take it: the learnt bias_k and bias_v
// (1, 1, F) appended to k and v (N, S, F) as one more key position (N, S+1, F). The
// caller pads the masks (pad_masks).
void append_bias_kv(Tensor& k, Tensor& v, const Tensor& bias_k, const Tensor& bias_v);

// add_zero_attn's step: a zero key and value appended to k and v along `key_dim`, their
// key dim (1 for (N, S, d), 2 for (N, H, S, d)). The caller pads the masks.
void append_zero_attn(Tensor& k, Tensor& v, std::int64_t key_dim);

// Appends `count` allowed key columns to every mask.
std::vector<AttentionMask> pad_masks(const std::vector<AttentionMask>& masks, std::int64_t count);

// The masks of head h: a mask whose head dim (dim 1 of 4) has size H is narrowed to head
// h; the head dim is then dropped, so the result broadcasts to (N, L, S).
std::vector<AttentionMask> head_masks(const std::vector<AttentionMask>& masks, std::int64_t h);

// (N, L, E) -> the caller's layout: (L, N, E) unless batch_first; (L, E) when unbatched.
Tensor restore_layout(const Tensor& output, const PreparedAttention& prepared, bool batch_first);

// Per-head weights (N, H, L, S') -> (N, L, S') averaged over heads, or (N, H, L, S');
// the batch dim is dropped when unbatched.
Tensor finish_weights(const Tensor& weights, bool average, const PreparedAttention& prepared);

// The layer's head gates (H) or (N, H) as (N or 1, H, 1, 1), to multiply the per-head
// outputs (N, H, L, d); undefined when the layer has none. Errors name `op`, the gates'
// shape and the batch.
Tensor gate_view(const char* op, const Tensor& gates, std::int64_t batch, std::int64_t heads);

}  // namespace headgrad::nn::detail
