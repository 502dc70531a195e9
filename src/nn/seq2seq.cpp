// nn::EncoderDecoder (see nn/seq2seq.hpp).
#include "headgrad/nn/seq2seq.hpp"

namespace headgrad::nn {

EncoderDecoder::EncoderDecoder(const EncoderDecoderOptions& options, Generator* generator)
    : Module("EncoderDecoder"), options_(options) {
  const auto& o = options_;
  if (o.src_vocab_size <= 0 || o.tgt_vocab_size < 0 || o.max_src_len <= 0 || o.max_tgt_len < 0)
    throw ValueError("EncoderDecoder: src_vocab_size and max_src_len must be positive (got " +
                     std::to_string(o.src_vocab_size) + " and " + std::to_string(o.max_src_len) +
                     "), tgt_vocab_size and max_tgt_len >= 0 (got " +
                     std::to_string(o.tgt_vocab_size) + " and " + std::to_string(o.max_tgt_len) +
                     ")");
  if (o.num_encoder_layers < 0 || o.num_decoder_layers < 0)
    throw ValueError("EncoderDecoder: layer counts must be >= 0, got " +
                     std::to_string(o.num_encoder_layers) + " and " +
                     std::to_string(o.num_decoder_layers));
  const TransformerLayerOptions layer = layer_options_of(o);
  layer.validate("EncoderDecoder");
  const std::int64_t d = o.d_model;
  src_token_embedding =
      register_module("src_token_embedding",
                      std::make_shared<Embedding>(o.src_vocab_size, d, std::nullopt, generator));
  src_position_embedding =
      register_module("src_position_embedding",
                      std::make_shared<Embedding>(o.max_src_len, d, std::nullopt, generator));
  tgt_token_embedding = register_module(
      "tgt_token_embedding",
      std::make_shared<Embedding>(o.target_vocab_size(), d, std::nullopt, generator));
  tgt_position_embedding =
      register_module("tgt_position_embedding",
                      std::make_shared<Embedding>(o.max_target_len(), d, std::nullopt, generator));
  dropout = register_module("dropout", std::make_shared<Dropout>(o.dropout));
  encoder = register_module("encoder", std::make_shared<TransformerEncoder>(
                                           layer, o.num_encoder_layers, o.norm_first, generator));
  decoder = register_module("decoder", std::make_shared<TransformerDecoder>(
                                           layer, o.num_decoder_layers, o.norm_first, generator));
  lm_head = register_module("lm_head",
                            std::make_shared<Linear>(d, o.target_vocab_size(), false, generator));
}

Tensor EncoderDecoder::encode(const Tensor& src, const Tensor& src_key_padding_mask) const {
  const Tensor x = dropout->forward(embed_with_positions(
      *src_token_embedding, *src_position_embedding, src, "EncoderDecoder (src)"));
  return encoder->forward(x, Tensor(), src_key_padding_mask);
}

Tensor EncoderDecoder::decode(const Tensor& tgt, const Tensor& memory,
                              const Tensor& src_key_padding_mask,
                              const Tensor& tgt_key_padding_mask) const {
  const Tensor y = dropout->forward(embed_with_positions(
      *tgt_token_embedding, *tgt_position_embedding, tgt, "EncoderDecoder (tgt)"));
  return lm_head->forward(decoder->forward(y, memory, Tensor(), Tensor(), tgt_key_padding_mask,
                                           src_key_padding_mask, /*tgt_is_causal=*/true));
}

Tensor EncoderDecoder::forward(const Tensor& src, const Tensor& tgt,
                               const Tensor& src_key_padding_mask,
                               const Tensor& tgt_key_padding_mask) const {
  return decode(tgt, encode(src, src_key_padding_mask), src_key_padding_mask, tgt_key_padding_mask);
}

void EncoderDecoder::set_dropout_generator(Generator* generator) {
  dropout->set_generator(generator);
  encoder->set_dropout_generator(generator);
  decoder->set_dropout_generator(generator);
}

std::string EncoderDecoder::extra_repr() const {
  const auto& o = options_;
  return "src_vocab_size=" + std::to_string(o.src_vocab_size) +
         ", tgt_vocab_size=" + std::to_string(o.target_vocab_size()) +
         ", d_model=" + std::to_string(o.d_model) + ", nhead=" + std::to_string(o.nhead) +
         ", num_encoder_layers=" + std::to_string(o.num_encoder_layers) +
         ", num_decoder_layers=" + std::to_string(o.num_decoder_layers) +
         (o.per_head ? ", per_head=True" : "");
}

}  // namespace headgrad::nn
