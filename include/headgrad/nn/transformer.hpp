// Transformer encoder and decoder layers and stacks with torch.nn's options, forward
// arguments, parameter names and results (checked against PyTorch 1.13 in
// tests/nn/test_transformer.cpp).
//
// Shapes (E = d_model, N batch, S source length, T target length):
//   src (S, N, E), tgt (T, N, E), memory (S, N, E); N first when batch_first;
//   unbatched: (S, E), (T, E).
//   src_mask / tgt_mask (S, S) / (T, T) or (N*H, ., .); memory_mask (T, S) or (N*H, T, S):
//   bool true = blocked, or float added to the scores (torch.nn.MultiheadAttention's rule).
//   *_key_padding_mask (N, S) / (N, T): bool true = padding, or float added.
//   is_causal / tgt_is_causal: blocks key j for query i when j > i (combined with the mask).
//   The output has the shape of src / tgt.
//
// TransformerEncoderLayer (torch's parameter names):
//   self_attn.*  (MultiheadAttention: in_proj_weight (3I, E), in_proj_bias (3I),
//                 out_proj.weight (E, I), out_proj.bias (E), I = nhead * head_dim = E
//                 unless head_dim is set; with per_head the HeadwiseMultiheadAttention
//                 names heads.<h>.{q,k,v}_proj.*, out_proj.*)
//   linear1.weight (F, E), linear1.bias (F), linear2.weight (E, F), linear2.bias (E)
//   norm1.{weight,bias} (E), norm2.{weight,bias} (E)
//   post-norm (norm_first false, torch's default):
//     x = norm1(x + dropout1(self_attn(x)));  x = norm2(x + dropout2(ff(x)))
//   pre-norm (norm_first true):
//     x = x + dropout1(self_attn(norm1(x)));  x = x + dropout2(ff(norm2(x)))
//   ff(x) = linear2(dropout(activation(linear1(x))))
// TransformerDecoderLayer adds multihead_attn.* (queries from the target, keys and values
// from memory) and norm3.*, applied between the self-attention and the feed-forward block.
// TransformerEncoder / TransformerDecoder: layers.<i>.* and an optional final norm.*.
//
// bias false drops every bias (attention, linear1/2, the norms), as torch >= 2.1's option.
// The attention layers (self_attn, multihead_attn) are public AttentionLayer handles, so
// per-head inspection reaches every head; dropout on the attention weights uses the
// default generator (dropout_generator on the layer changes that for every dropout).
//
// Differences from torch: a stack's layers are initialized one after the other from the
// generator (torch deep-copies one layer, so its layers start equal); a fully masked
// query row gives a zero attended value instead of NaN (see multihead_attention.hpp).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "headgrad/core/generator.hpp"
#include "headgrad/core/options.hpp"
#include "headgrad/nn/hooks.hpp"
#include "headgrad/nn/layers.hpp"
#include "headgrad/nn/linear.hpp"
#include "headgrad/nn/module.hpp"
#include "headgrad/nn/multihead_attention.hpp"

namespace headgrad::nn {

// The options of TransformerEncoderLayer and TransformerDecoderLayer (torch's defaults).
struct TransformerLayerOptions {
  std::int64_t d_model = 0;
  std::int64_t nhead = 1;
  std::int64_t dim_feedforward = 2048;
  double dropout = 0.1;
  Activation activation = Activation::relu;
  double layer_norm_eps = 1e-5;
  bool batch_first = false;
  bool norm_first = false;
  bool bias = true;
  // The attention layers are HeadwiseMultiheadAttention (one module per head) instead of
  // MultiheadAttention; results and initial values are the same.
  bool per_head = false;
  // The attention's head size (MultiheadAttentionOptions::head_size); 0 = d_model / nhead.
  // With it set, d_model need not be divisible by nhead.
  std::int64_t head_dim = 0;

  TransformerLayerOptions(std::int64_t d_model_, std::int64_t nhead_)
      : d_model(d_model_), nhead(nhead_) {}
  HEADGRAD_WITH(dim_feedforward)
  HEADGRAD_WITH(dropout)
  HEADGRAD_WITH(activation)
  HEADGRAD_WITH(layer_norm_eps)
  HEADGRAD_WITH(batch_first)
  HEADGRAD_WITH(norm_first)
  HEADGRAD_WITH(bias)
  HEADGRAD_WITH(per_head)
  HEADGRAD_WITH(head_dim)
  // The options of the attention layers this layer builds.
  MultiheadAttentionOptions attention_options() const;
  // Throws ValueError naming `op` when the options are inconsistent.
  void validate(const char* op) const;
};
using TransformerEncoderLayerOptions = TransformerLayerOptions;
using TransformerDecoderLayerOptions = TransformerLayerOptions;

// The batch-first layer options of a toy model's options struct (GPTOptions and friends:
// d_model, nhead, dim_feedforward (0 = 4 * d_model), dropout, activation, layer_norm_eps,
// norm_first, bias, per_head, and head_dim where the struct has one).
template <typename ModelOptions>
TransformerLayerOptions layer_options_of(const ModelOptions& o) {
  TransformerLayerOptions layer =
      TransformerLayerOptions(o.d_model, o.nhead)
          .with_dim_feedforward(o.dim_feedforward == 0 ? 4 * o.d_model : o.dim_feedforward)
          .with_dropout(o.dropout)
          .with_activation(o.activation)
          .with_layer_norm_eps(o.layer_norm_eps)
          .with_batch_first(true)
          .with_norm_first(o.norm_first)
          .with_bias(o.bias)
          .with_per_head(o.per_head);
  if constexpr (requires { o.head_dim; }) layer.with_head_dim(o.head_dim);
  return layer;
}

// A fused MultiheadAttention or a HeadwiseMultiheadAttention, as options.per_head says.
std::shared_ptr<AttentionLayer> make_attention(const MultiheadAttentionOptions& options,
                                               bool per_head, Generator* generator = nullptr);

class TransformerEncoderLayer : public Module {
 public:
  // Initializes from `generator` (the default generator when null) in torch's order:
  // self_attn, linear1, linear2 (the norms are ones and zeros).
  explicit TransformerEncoderLayer(const TransformerLayerOptions& options,
                                   Generator* generator = nullptr);

  Tensor forward(const Tensor& src, const Tensor& src_mask = {},
                 const Tensor& src_key_padding_mask = {}, bool is_causal = false) const;
  Tensor operator()(const Tensor& src, const Tensor& src_mask = {},
                    const Tensor& src_key_padding_mask = {}, bool is_causal = false) const {
    return forward(src, src_mask, src_key_padding_mask, is_causal);
  }

  // Generator for every dropout of this layer (attention weights included); null = default.
  void set_dropout_generator(Generator* generator);
  const TransformerLayerOptions& options() const { return options_; }
  std::shared_ptr<Module> clone() const override {
    return cloned(std::make_shared<TransformerEncoderLayer>(options_));
  }

  std::shared_ptr<AttentionLayer> self_attn;
  std::shared_ptr<Linear> linear1;  // (F, E)
  std::shared_ptr<Dropout> dropout;
  std::shared_ptr<Linear> linear2;  // (E, F)
  std::shared_ptr<LayerNorm> norm1, norm2;
  std::shared_ptr<Dropout> dropout1, dropout2;

 protected:
  std::string extra_repr() const override;

 private:
  Tensor self_attention_block(const Tensor& x, const Tensor& mask, const Tensor& key_padding_mask,
                              bool is_causal) const;
  Tensor feed_forward_block(const Tensor& x) const;

  TransformerLayerOptions options_;
  Generator* dropout_generator_ = nullptr;
  // Hook points (nn/hooks.hpp), in the order named_hook_points() lists them.
  const HookPoint& hook_resid_pre_ = register_hook_point("resid_pre");
  const HookPoint& hook_attn_out_ = register_hook_point("attn_out");
  const HookPoint& hook_resid_mid_ = register_hook_point("resid_mid");
  const HookPoint& hook_mlp_pre_ = register_hook_point("mlp_pre");
  const HookPoint& hook_mlp_post_ = register_hook_point("mlp_post");
  const HookPoint& hook_mlp_out_ = register_hook_point("mlp_out");
  const HookPoint& hook_resid_post_ = register_hook_point("resid_post");
};

class TransformerDecoderLayer : public Module {
 public:
  // Initializes in torch's order: self_attn, multihead_attn, linear1, linear2.
  explicit TransformerDecoderLayer(const TransformerLayerOptions& options,
                                   Generator* generator = nullptr);

  // tgt (T, N, E), memory (S, N, E) (N first when batch_first) -> like tgt.
  Tensor forward(const Tensor& tgt, const Tensor& memory, const Tensor& tgt_mask = {},
                 const Tensor& memory_mask = {}, const Tensor& tgt_key_padding_mask = {},
                 const Tensor& memory_key_padding_mask = {}, bool tgt_is_causal = false,
                 bool memory_is_causal = false) const;
  Tensor operator()(const Tensor& tgt, const Tensor& memory, const Tensor& tgt_mask = {},
                    const Tensor& memory_mask = {}, const Tensor& tgt_key_padding_mask = {},
                    const Tensor& memory_key_padding_mask = {}, bool tgt_is_causal = false,
                    bool memory_is_causal = false) const {
    return forward(tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask,
                   memory_key_padding_mask, tgt_is_causal, memory_is_causal);
  }

  void set_dropout_generator(Generator* generator);
  const TransformerLayerOptions& options() const { return options_; }
  std::shared_ptr<Module> clone() const override {
    return cloned(std::make_shared<TransformerDecoderLayer>(options_));
  }

  std::shared_ptr<AttentionLayer> self_attn;
  std::shared_ptr<AttentionLayer> multihead_attn;
  std::shared_ptr<Linear> linear1;
  std::shared_ptr<Dropout> dropout;
  std::shared_ptr<Linear> linear2;
  std::shared_ptr<LayerNorm> norm1, norm2, norm3;
  std::shared_ptr<Dropout> dropout1, dropout2, dropout3;

 protected:
  std::string extra_repr() const override;

 private:
  TransformerLayerOptions options_;
  Generator* dropout_generator_ = nullptr;
  // Hook points (nn/hooks.hpp), in the order named_hook_points() lists them.
  const HookPoint& hook_resid_pre_ = register_hook_point("resid_pre");
  const HookPoint& hook_attn_out_ = register_hook_point("attn_out");
  const HookPoint& hook_resid_mid_ = register_hook_point("resid_mid");
  const HookPoint& hook_cross_attn_out_ = register_hook_point("cross_attn_out");
  const HookPoint& hook_resid_mid_cross_ = register_hook_point("resid_mid_cross");
  const HookPoint& hook_mlp_pre_ = register_hook_point("mlp_pre");
  const HookPoint& hook_mlp_post_ = register_hook_point("mlp_post");
  const HookPoint& hook_mlp_out_ = register_hook_point("mlp_out");
  const HookPoint& hook_resid_post_ = register_hook_point("resid_post");
};

// A stack of encoder layers (layers.<i>) and, when final_norm, a LayerNorm (norm) on the
// output (what a pre-norm stack needs).
class TransformerEncoder : public Module {
 public:
  TransformerEncoder(const TransformerLayerOptions& layer_options, std::int64_t num_layers,
                     bool final_norm = false, Generator* generator = nullptr);

  Tensor forward(const Tensor& src, const Tensor& mask = {},
                 const Tensor& src_key_padding_mask = {}, bool is_causal = false) const;
  Tensor operator()(const Tensor& src, const Tensor& mask = {},
                    const Tensor& src_key_padding_mask = {}, bool is_causal = false) const {
    return forward(src, mask, src_key_padding_mask, is_causal);
  }
  void set_dropout_generator(Generator* generator);
  std::int64_t num_layers() const { return static_cast<std::int64_t>(layers->size()); }
  std::shared_ptr<Module> clone() const override;

  std::shared_ptr<ModuleList<TransformerEncoderLayer>> layers;
  std::shared_ptr<LayerNorm> norm;  // null without final_norm

 private:
  TransformerLayerOptions layer_options_;  // what clone() rebuilds the layers from
};

class TransformerDecoder : public Module {
 public:
  TransformerDecoder(const TransformerLayerOptions& layer_options, std::int64_t num_layers,
                     bool final_norm = false, Generator* generator = nullptr);

  Tensor forward(const Tensor& tgt, const Tensor& memory, const Tensor& tgt_mask = {},
                 const Tensor& memory_mask = {}, const Tensor& tgt_key_padding_mask = {},
                 const Tensor& memory_key_padding_mask = {}, bool tgt_is_causal = false,
                 bool memory_is_causal = false) const;
  Tensor operator()(const Tensor& tgt, const Tensor& memory, const Tensor& tgt_mask = {},
                    const Tensor& memory_mask = {}, const Tensor& tgt_key_padding_mask = {},
                    const Tensor& memory_key_padding_mask = {}, bool tgt_is_causal = false,
                    bool memory_is_causal = false) const {
    return forward(tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask,
                   memory_key_padding_mask, tgt_is_causal, memory_is_causal);
  }
  void set_dropout_generator(Generator* generator);
  std::int64_t num_layers() const { return static_cast<std::int64_t>(layers->size()); }
  std::shared_ptr<Module> clone() const override;

  std::shared_ptr<ModuleList<TransformerDecoderLayer>> layers;
  std::shared_ptr<LayerNorm> norm;  // null without final_norm

 private:
  TransformerLayerOptions layer_options_;  // what clone() rebuilds the layers from
};

}  // namespace headgrad::nn
