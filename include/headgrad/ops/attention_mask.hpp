// AttentionMask: a mask tensor together with what its entries mean, because the
// conventions disagree (see docs/attention.md). An op-level type (the attention op,
// ops/attention.hpp, reads it), re-exported as nn::AttentionMask:
//
//   meaning                 entries                    who uses it
//   blocked_where_true      bool, true = may NOT attend PyTorch MHA attn_mask/key_padding_mask
//   attend_where_true       bool or 0/1, 1 = may attend PyTorch SDPA bool masks, Keras
//   additive                float, added to the scores PyTorch float masks (0 or -inf)
//
// The tensor must broadcast to the scores, (..., L, S). A query row whose keys are all
// blocked gets zero attention weights, a zero output and zero gradients (never NaN).
#pragma once

#include "headgrad/core/tensor.hpp"

namespace headgrad {

enum class MaskMeaning { blocked_where_true, attend_where_true, additive };

class AttentionMask {
 public:
  // bool, true = blocked.
  static AttentionMask blocked_where_true(Tensor mask);
  // bool or numeric, true / nonzero = attend.
  static AttentionMask attend_where_true(Tensor mask);
  // floating, added to the scores.
  static AttentionMask additive(Tensor mask);
  // PyTorch nn.MultiheadAttention's reading: a bool mask is blocked_where_true, a
  // floating mask is additive.
  static AttentionMask torch_mha(Tensor mask);

  const Tensor& tensor() const { return tensor_; }
  MaskMeaning meaning() const { return meaning_; }

  // Applies the mask to attention scores (..., L, S): blocked entries become -inf
  // (masked_fill), additive masks are added (converted to the scores' dtype).
  Tensor apply(const Tensor& scores) const;
  // The same mask with `count` extra key columns appended at the end of the last dim,
  // all allowed: used for add_bias_kv and add_zero_attn. The last dim must be the full key
  // dim S (a mask that broadcasts over the keys must be expanded first).
  AttentionMask pad_keys(std::int64_t count) const;

 private:
  AttentionMask(Tensor tensor, MaskMeaning meaning)
      : tensor_(std::move(tensor)), meaning_(meaning) {}
  Tensor tensor_;
  MaskMeaning meaning_;
};

}  // namespace headgrad
