// nn::GPT: a decoder-only toy transformer (B batch, T length <= max_len, D d_model,
// V vocab_size, F input_dim):
//
//   tokens (B, T) int64 -> x = token_embedding(tokens) + position_embedding(0 .. T-1)
//   x = dropout(x); x = layers[i](x) with causal self-attention (query t sees keys <= t)
//   logits = lm_head(norm(x))                                       -> (B, T, V)
//
// On continuous inputs (input_dim F > 0, for set and regression tasks) a Linear
// input_projection (F -> D, with bias) replaces the token embedding, which is then not
// created:
//   input (B, T, F) float -> x = input_projection(input) + position_embedding(0 .. T-1)
// and V (vocab_size) is simply the output width of lm_head: the number of classes, or the
// output dimension of a regression. causal false makes the self-attention bidirectional
// (no mask: every position sees every other); positions false drops position_embedding
// altogether, so with causal false the model is permutation-equivariant over positions
// (permuting the inputs permutes the outputs the same way).
//
// Parameters: token_embedding.weight (V, D) when input_dim is 0, else
// input_projection.{weight (D, F), bias (D)}; position_embedding.weight (max_len, D) when
// positions; layers.<i>.* (TransformerEncoderLayer names, see nn/transformer.hpp:
// self_attn.*, linear1.*, linear2.*, norm1.*, norm2.*), norm.{weight,bias} (D) (final
// LayerNorm, only when norm_first; a post-norm stack already ends in a norm),
// lm_head.weight (V, D) (untied from the token embedding, no bias).
// Initialization is PyTorch's module default for each part (embeddings N(0, 1), Linear
// kaiming-uniform, attention as nn.MultiheadAttention), drawn in registration order from
// the generator; per_head true and false give the same values for the same generator.
#pragma once

#include <cstdint>
#include <memory>

#include "headgrad/core/generator.hpp"
#include "headgrad/nn/hooks.hpp"
#include "headgrad/nn/layers.hpp"
#include "headgrad/nn/linear.hpp"
#include "headgrad/nn/module.hpp"
#include "headgrad/nn/transformer.hpp"

namespace headgrad::nn {

// An aggregate: `nn::GPTOptions o; o.vocab_size = 16; o.max_len = 24;` or designated
// initializers `nn::GPTOptions{.vocab_size = 16, .max_len = 24, .per_head = true}`.
struct GPTOptions {
  // Output width of lm_head: the vocabulary for token prediction, the number of classes,
  // or the output dimension of a regression.
  std::int64_t vocab_size = 0;
  // Rows of the position table: the longest sequence. Unused (may be 0) without positions.
  std::int64_t max_len = 0;
  std::int64_t d_model = 64;
  std::int64_t nhead = 4;
  std::int64_t num_layers = 2;
  std::int64_t dim_feedforward = 0;  // 0 = 4 * d_model
  double dropout = 0.0;              // embeddings, attention weights, residual branches
  Activation activation = Activation::gelu;
  double layer_norm_eps = 1e-5;
  bool norm_first = true;
  bool bias = true;
  bool per_head = false;  // HeadwiseMultiheadAttention in every layer
  // Attention head size; 0 = d_model / nhead. Set, d_model need not be divisible by nhead
  // and each attention projects to nhead * head_dim features (see multihead_attention.hpp).
  std::int64_t head_dim = 0;
  // 0: the input is token ids (B, T) int64 and token_embedding embeds them. > 0: the input
  // is float (B, T, input_dim) and input_projection (input_dim -> d_model) replaces
  // token_embedding.
  std::int64_t input_dim = 0;
  bool causal = true;     // false: bidirectional self-attention, no mask
  bool positions = true;  // false: no position_embedding (order-free over positions)
};

class GPT : public Module {
 public:
  explicit GPT(const GPTOptions& options, Generator* generator = nullptr);

  // input: tokens (B, T) int64 when input_dim is 0, else float (B, T, input_dim) of the
  // parameters' dtype; key_padding_mask (B, T) bool (true = padding) or undefined ->
  // logits (B, T, V). When causal, position t never depends on inputs after t. Errors
  // (ShapeError, ValueError, DTypeError) name GPT, the input and what was expected.
  Tensor forward(const Tensor& input, const Tensor& key_padding_mask = {}) const;
  Tensor operator()(const Tensor& input, const Tensor& key_padding_mask = {}) const {
    return forward(input, key_padding_mask);
  }
  // The rest of a forward from the residual stream entering layer `first` (its resid_pre,
  // (B, T, d_model)): layers first .. num_layers - 1, the final norm and lm_head, with their
  // hook points. In eval mode, with the same hook points active, forward(input) equals
  // forward_from(l, the resid_pre of layer l in that run) bit for bit (a hooked attention
  // layer computes per head, rounding otherwise than the fused kernel). Activation
  // patching resumes its runs here.
  Tensor forward_from(std::int64_t first, const Tensor& residual,
                      const Tensor& key_padding_mask = {}) const;

  // Generator for every dropout (null = the default generator).
  void set_dropout_generator(Generator* generator);
  const GPTOptions& options() const { return options_; }
  std::shared_ptr<Module> clone() const override { return cloned(std::make_shared<GPT>(options_)); }

  std::shared_ptr<Embedding> token_embedding;     // (V, D); null when input_dim > 0
  std::shared_ptr<Linear> input_projection;       // F -> D; null when input_dim is 0
  std::shared_ptr<Embedding> position_embedding;  // (max_len, D); null without positions
  std::shared_ptr<Dropout> dropout;
  std::shared_ptr<ModuleList<TransformerEncoderLayer>> layers;
  std::shared_ptr<LayerNorm> norm;  // null when !norm_first
  std::shared_ptr<Linear> lm_head;  // (V, D), no bias

 protected:
  std::string extra_repr() const override;

 private:
  // The input embedded as (B, T, D), before dropout.
  Tensor embed(const Tensor& input) const;

  GPTOptions options_;
  // Hook points (nn/hooks.hpp); the layers have their own.
  const HookPoint& hook_embed_ = register_hook_point("embed");
  const HookPoint& hook_ln_final_ = register_hook_point("ln_final");
  const HookPoint& hook_logits_ = register_hook_point("logits");
};

}  // namespace headgrad::nn
