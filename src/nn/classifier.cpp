// nn::EncoderClassifier (see nn/classifier.hpp).
#include "headgrad/nn/classifier.hpp"

namespace headgrad::nn {

EncoderClassifier::EncoderClassifier(const EncoderClassifierOptions& options, Generator* generator)
    : Module("EncoderClassifier"), options_(options) {
  const auto& o = options_;
  if (o.vocab_size <= 0 || o.max_len <= 0 || o.num_classes <= 0 || o.num_layers < 0)
    throw ValueError(
        "EncoderClassifier: vocab_size, max_len and num_classes must be positive "
        "and num_layers >= 0, got " +
        std::to_string(o.vocab_size) + ", " + std::to_string(o.max_len) + ", " +
        std::to_string(o.num_classes) + " and " + std::to_string(o.num_layers));
  const TransformerLayerOptions layer = layer_options_of(o);
  layer.validate("EncoderClassifier");
  token_embedding = register_module(
      "token_embedding",
      std::make_shared<Embedding>(o.vocab_size, o.d_model, std::nullopt, generator));
  position_embedding =
      register_module("position_embedding",
                      std::make_shared<Embedding>(o.max_len, o.d_model, std::nullopt, generator));
  dropout = register_module("dropout", std::make_shared<Dropout>(o.dropout));
  layers = register_module("layers", std::make_shared<ModuleList<TransformerEncoderLayer>>());
  for (std::int64_t i = 0; i < o.num_layers; ++i)
    layers->push_back(std::make_shared<TransformerEncoderLayer>(layer, generator));
  if (o.norm_first)
    norm = register_module("norm",
                           std::make_shared<LayerNorm>(o.d_model, o.layer_norm_eps, true, o.bias));
  classifier = register_module(
      "classifier", std::make_shared<Linear>(o.d_model, o.num_classes, o.bias, generator));
}

Tensor EncoderClassifier::encode(const Tensor& tokens, const Tensor& key_padding_mask) const {
  Tensor x = dropout->forward(
      embed_with_positions(*token_embedding, *position_embedding, tokens, "EncoderClassifier"));
  for (const auto& layer : *layers) x = layer->forward(x, Tensor(), key_padding_mask);
  return norm ? norm->forward(x) : x;
}

Tensor EncoderClassifier::forward(const Tensor& tokens, const Tensor& key_padding_mask) const {
  return classifier->forward(masked_mean(encode(tokens, key_padding_mask), key_padding_mask));
}

void EncoderClassifier::set_dropout_generator(Generator* generator) {
  dropout->set_generator(generator);
  for (const auto& layer : *layers) layer->set_dropout_generator(generator);
}

std::string EncoderClassifier::extra_repr() const {
  const auto& o = options_;
  return "vocab_size=" + std::to_string(o.vocab_size) + ", max_len=" + std::to_string(o.max_len) +
         ", num_classes=" + std::to_string(o.num_classes) +
         ", d_model=" + std::to_string(o.d_model) + ", nhead=" + std::to_string(o.nhead) +
         ", num_layers=" + std::to_string(o.num_layers) + (o.per_head ? ", per_head=True" : "");
}

}  // namespace headgrad::nn
