// nn::EncoderDecoder: a toy encoder-decoder transformer (B batch, S source length <=
// max_src_len, T target length <= max_tgt_len, D d_model, V tgt_vocab_size):
//
//   memory = encoder(src_token_embedding(src) + src_position_embedding(0 .. S-1),
//                    src_key_padding_mask)                                 (B, S, D)
//   y = decoder(tgt_token_embedding(tgt) + tgt_position_embedding(0 .. T-1), memory,
//               causal self-attention, tgt_key_padding_mask,
//               memory_key_padding_mask = src_key_padding_mask)           (B, T, D)
//   logits = lm_head(y)                                                    (B, T, V)
//
// Parameters (torch.nn.Transformer's names inside encoder/decoder):
//   src_token_embedding.weight (V_src, D), src_position_embedding.weight (max_src_len, D),
//   tgt_token_embedding.weight (V, D), tgt_position_embedding.weight (max_tgt_len, D),
//   encoder.layers.<i>.*, encoder.norm.* (norm_first only),
//   decoder.layers.<i>.* (self_attn, multihead_attn, linear1/2, norm1..3),
//   decoder.norm.* (norm_first only), lm_head.weight (V, D) (no bias).
// PyTorch's default init for each part, in registration order.
#pragma once

#include <cstdint>
#include <memory>

#include "headgrad/core/generator.hpp"
#include "headgrad/nn/layers.hpp"
#include "headgrad/nn/linear.hpp"
#include "headgrad/nn/module.hpp"
#include "headgrad/nn/transformer.hpp"

namespace headgrad::nn {

// An aggregate (see GPTOptions for how to fill it).
struct EncoderDecoderOptions {
  std::int64_t src_vocab_size = 0;
  std::int64_t tgt_vocab_size = 0;  // 0 = src_vocab_size
  std::int64_t max_src_len = 0;
  std::int64_t max_tgt_len = 0;  // 0 = max_src_len
  std::int64_t d_model = 64;
  std::int64_t nhead = 4;
  std::int64_t num_encoder_layers = 2;
  std::int64_t num_decoder_layers = 2;
  std::int64_t dim_feedforward = 0;  // 0 = 4 * d_model
  double dropout = 0.0;
  Activation activation = Activation::gelu;
  double layer_norm_eps = 1e-5;
  bool norm_first = true;
  bool bias = true;
  bool per_head = false;

  std::int64_t target_vocab_size() const {
    return tgt_vocab_size == 0 ? src_vocab_size : tgt_vocab_size;
  }
  std::int64_t max_target_len() const { return max_tgt_len == 0 ? max_src_len : max_tgt_len; }
};

class EncoderDecoder : public Module {
 public:
  explicit EncoderDecoder(const EncoderDecoderOptions& options, Generator* generator = nullptr);

  // src (B, S) int64, tgt (B, T) int64, key padding masks (B, S) / (B, T) bool (true =
  // padding) or undefined -> logits (B, T, V). Target position t never depends on target
  // tokens after t.
  Tensor forward(const Tensor& src, const Tensor& tgt, const Tensor& src_key_padding_mask = {},
                 const Tensor& tgt_key_padding_mask = {}) const;
  Tensor operator()(const Tensor& src, const Tensor& tgt, const Tensor& src_key_padding_mask = {},
                    const Tensor& tgt_key_padding_mask = {}) const {
    return forward(src, tgt, src_key_padding_mask, tgt_key_padding_mask);
  }
  // The two halves, for decoding step by step: encode once, decode each prefix.
  Tensor encode(const Tensor& src, const Tensor& src_key_padding_mask = {}) const;  // (B, S, D)
  Tensor decode(const Tensor& tgt, const Tensor& memory, const Tensor& src_key_padding_mask = {},
                const Tensor& tgt_key_padding_mask = {}) const;  // (B, T, V)

  void set_dropout_generator(Generator* generator);
  const EncoderDecoderOptions& options() const { return options_; }
  std::shared_ptr<Module> clone() const override {
    return cloned(std::make_shared<EncoderDecoder>(options_));
  }

  std::shared_ptr<Embedding> src_token_embedding, src_position_embedding;
  std::shared_ptr<Embedding> tgt_token_embedding, tgt_position_embedding;
  std::shared_ptr<Dropout> dropout;  // on both embedded sequences
  std::shared_ptr<TransformerEncoder> encoder;
  std::shared_ptr<TransformerDecoder> decoder;
  std::shared_ptr<Linear> lm_head;  // (V, D), no bias

 protected:
  std::string extra_repr() const override;

 private:
  EncoderDecoderOptions options_;
};

}  // namespace headgrad::nn
