// nn::GPT (see nn/gpt.hpp).
#include "headgrad/nn/gpt.hpp"

namespace headgrad::nn {

namespace {

void check_model_size(const char* op, std::int64_t vocab_size, std::int64_t max_len,
                      std::int64_t num_layers) {
  if (vocab_size <= 0 || max_len <= 0)
    throw ValueError(std::string(op) + ": vocab_size and max_len must be positive, got " +
                     std::to_string(vocab_size) + " and " + std::to_string(max_len));
  if (num_layers < 0)
    throw ValueError(std::string(op) + ": num_layers must be >= 0, got " +
                     std::to_string(num_layers));
}

}  // namespace

GPT::GPT(const GPTOptions& options, Generator* generator) : Module("GPT"), options_(options) {
  const auto& o = options_;
  check_model_size("GPT", o.vocab_size, o.max_len, o.num_layers);
  const TransformerLayerOptions layer = layer_options_of(o);
  layer.validate("GPT");
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
  lm_head = register_module("lm_head",
                            std::make_shared<Linear>(o.d_model, o.vocab_size, false, generator));
}

Tensor GPT::forward(const Tensor& tokens, const Tensor& key_padding_mask) const {
  Tensor x =
      dropout->forward(embed_with_positions(*token_embedding, *position_embedding, tokens, "GPT"));
  for (const auto& layer : *layers)
    x = layer->forward(x, Tensor(), key_padding_mask, /*is_causal=*/true);
  if (norm) x = norm->forward(x);
  return lm_head->forward(x);
}

void GPT::set_dropout_generator(Generator* generator) {
  dropout->set_generator(generator);
  for (const auto& layer : *layers) layer->set_dropout_generator(generator);
}

std::string GPT::extra_repr() const {
  const auto& o = options_;
  return "vocab_size=" + std::to_string(o.vocab_size) + ", max_len=" + std::to_string(o.max_len) +
         ", d_model=" + std::to_string(o.d_model) + ", nhead=" + std::to_string(o.nhead) +
         ", num_layers=" + std::to_string(o.num_layers) +
         (o.head_dim != 0 ? ", head_dim=" + std::to_string(o.head_dim) : "") +
         (o.per_head ? ", per_head=True" : "");
}

}  // namespace headgrad::nn
