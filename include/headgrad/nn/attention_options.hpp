// The options and forward arguments of torch.nn.MultiheadAttention, shared by every
// attention layer with its signature (nn::MultiheadAttention, the per-head
// HeadwiseMultiheadAttention, nn/multihead_attention.hpp and nn/attention_head.hpp) and by
// the code that validates and lays out their inputs. Shapes and names are explained in
// nn/multihead_attention.hpp.
#pragma once

#include <cstdint>

#include "headgrad/core/generator.hpp"
#include "headgrad/core/options.hpp"
#include "headgrad/core/tensor.hpp"

namespace headgrad::nn {

struct MultiheadAttentionOptions {
  std::int64_t embed_dim = 0;
  std::int64_t num_heads = 1;
  double dropout = 0.0;  // on the attention weights, in training mode
  bool bias = true;
  bool add_bias_kv = false;
  bool add_zero_attn = false;
  std::int64_t kdim = 0;  // 0 = embed_dim
  std::int64_t vdim = 0;  // 0 = embed_dim
  bool batch_first = false;
  std::int64_t head_size = 0;  // d, the width of one head; 0 = embed_dim / num_heads

  MultiheadAttentionOptions(std::int64_t embed_dim_, std::int64_t num_heads_)
      : embed_dim(embed_dim_), num_heads(num_heads_) {}
  HEADGRAD_WITH(dropout)
  HEADGRAD_WITH(bias)
  HEADGRAD_WITH(add_bias_kv)
  HEADGRAD_WITH(add_zero_attn)
  HEADGRAD_WITH(kdim)
  HEADGRAD_WITH(vdim)
  HEADGRAD_WITH(batch_first)
  HEADGRAD_WITH(head_size)

  std::int64_t key_dim() const { return kdim == 0 ? embed_dim : kdim; }
  std::int64_t value_dim() const { return vdim == 0 ? embed_dim : vdim; }
  // d: head_size when set, else embed_dim / num_heads.
  std::int64_t head_dim() const { return head_size != 0 ? head_size : embed_dim / num_heads; }
  // I = num_heads * head_dim(): the width of the q, k, v projections and of out_proj's
  // input (embed_dim when head_size is 0).
  std::int64_t inner_dim() const { return num_heads * head_dim(); }
  // PyTorch packs the three projections into in_proj_weight when kdim == vdim == E.
  bool packed_in_proj() const { return key_dim() == embed_dim && value_dim() == embed_dim; }
  // Throws ValueError naming `op` when the options are inconsistent.
  void validate(const char* op) const;
};

// forward()'s keyword arguments, with PyTorch's defaults.
struct MultiheadAttentionArgs {
  Tensor key_padding_mask;  // undefined = none
  bool need_weights = true;
  Tensor attn_mask;  // undefined = none
  bool average_attn_weights = true;
  // Blocks key j for query i when j > i; combined with attn_mask when both are given.
  bool is_causal = false;
  Generator* dropout_generator = nullptr;  // default generator when null

  HEADGRAD_WITH(key_padding_mask)
  HEADGRAD_WITH(need_weights)
  HEADGRAD_WITH(attn_mask)
  HEADGRAD_WITH(average_attn_weights)
  HEADGRAD_WITH(is_causal)
};

}  // namespace headgrad::nn
