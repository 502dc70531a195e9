// nn::GPT (see nn/gpt.hpp).
#include "headgrad/nn/gpt.hpp"

#include "headgrad/nn/hooks.hpp"
#include "headgrad/ops/elementwise.hpp"

namespace headgrad::nn {

namespace {

constexpr const char* kOp = "GPT";

void check_model_size(const GPTOptions& o) {
  if (o.vocab_size <= 0 || (o.positions && o.max_len <= 0))
    throw ValueError(std::string(kOp) + ": vocab_size and max_len must be positive, got " +
                     std::to_string(o.vocab_size) + " and " + std::to_string(o.max_len) +
                     (o.positions ? "" : " (max_len may be 0 without positions)"));
  if (o.max_len < 0)
    throw ValueError(std::string(kOp) + ": max_len must be >= 0, got " + std::to_string(o.max_len));
  if (o.num_layers < 0)
    throw ValueError(std::string(kOp) + ": num_layers must be >= 0, got " +
                     std::to_string(o.num_layers));
  if (o.input_dim < 0)
    throw ValueError(std::string(kOp) + ": input_dim must be >= 0 (0 = token ids), got " +
                     std::to_string(o.input_dim));
}

}  // namespace

GPT::GPT(const GPTOptions& options, Generator* generator) : Module(kOp), options_(options) {
  const auto& o = options_;
  check_model_size(o);
  const TransformerLayerOptions layer = layer_options_of(o);
  layer.validate(kOp);
  if (o.input_dim == 0)
    token_embedding = register_module(
        "token_embedding",
        std::make_shared<Embedding>(o.vocab_size, o.d_model, std::nullopt, generator));
  else
    input_projection = register_module(
        "input_projection", std::make_shared<Linear>(o.input_dim, o.d_model, true, generator));
  if (o.positions)
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

Tensor GPT::embed(const Tensor& input) const {
  const auto& o = options_;
  input.check_defined(kOp);
  if (o.input_dim == 0) {
    if (input.dtype() != kInt64 || input.dim() != 2)
      throw ShapeError(std::string(kOp) + ": tokens " + input.describe() +
                       " must be int64 of shape (batch, length) (input_dim is 0: token ids; " +
                       "set input_dim for float inputs (batch, length, features))");
    // Token ids: the embedding, plus positions 0 .. T-1 when positions.
    if (o.positions) return embed_with_positions(*token_embedding, *position_embedding, input, kOp);
    return token_embedding->forward(input);
  }
  // Continuous inputs (B, T, F) -> (B, T, D), plus positions 0 .. T-1 when positions.
  const std::string expected =
      "(batch, length, input_dim) = (B, T, " + std::to_string(o.input_dim) + ")";
  if (!is_floating(input.dtype()))
    throw ValueError(std::string(kOp) + ": input " + input.describe() + " must be floating " +
                     expected + " because input_dim is " + std::to_string(o.input_dim) +
                     " (token ids need input_dim 0)");
  if (input.dim() != 3 || input.size(2) != o.input_dim)
    throw ShapeError(std::string(kOp) + ": input " + input.describe() + " must be " + expected);
  const DType param_dtype = input_projection->weight.dtype();
  if (input.dtype() != param_dtype)
    throw DTypeError(std::string(kOp) + ": input " + input.describe() + " but the parameters are " +
                     headgrad::to_string(param_dtype) + " (convert the module with to(dtype))");
  Tensor x = input_projection->forward(input);
  if (!o.positions) return x;
  const std::int64_t length = input.size(1);
  if (length > o.max_len)
    throw ShapeError(std::string(kOp) + ": input " + input.describe() + " is longer than max_len " +
                     std::to_string(o.max_len));
  const Tensor positions =
      arange(static_cast<double>(length), TensorOptions(kInt64).device(input.device()));
  return add(x, position_embedding->forward(positions));
}

Tensor GPT::forward(const Tensor& input, const Tensor& key_padding_mask) const {
  Tensor x = dropout->forward(hook_embed_(embed(input)));
  for (const auto& layer : *layers)
    x = layer->forward(x, Tensor(), key_padding_mask, /*is_causal=*/options_.causal);
  if (norm) x = norm->forward(x);
  x = hook_ln_final_(x);
  return hook_logits_(lm_head->forward(x));
}

Tensor GPT::forward_from(std::int64_t first, const Tensor& residual,
                         const Tensor& key_padding_mask) const {
  const std::int64_t layer_count = static_cast<std::int64_t>(layers->size());
  if (first < 0 || first > layer_count)
    throw ValueError("GPT::forward_from: layer " + std::to_string(first) + " is not in [0, " +
                     std::to_string(layer_count) + "]");
  residual.check_defined("GPT::forward_from");
  if (residual.dim() != 3 || residual.size(2) != options_.d_model)
    throw ShapeError("GPT::forward_from: the residual " + residual.describe() +
                     " must be (batch, length, d_model = " + std::to_string(options_.d_model) +
                     ")");
  Tensor x = residual;
  for (std::int64_t l = first; l < layer_count; ++l)
    x = (*layers)[static_cast<std::size_t>(l)]->forward(x, Tensor(), key_padding_mask,
                                                        /*is_causal=*/options_.causal);
  if (norm) x = norm->forward(x);
  x = hook_ln_final_(x);
  return hook_logits_(lm_head->forward(x));
}

void GPT::set_dropout_generator(Generator* generator) {
  dropout->set_generator(generator);
  for (const auto& layer : *layers) layer->set_dropout_generator(generator);
}

std::string GPT::extra_repr() const {
  const auto& o = options_;
  std::string s = "vocab_size=" + std::to_string(o.vocab_size);
  if (o.input_dim != 0) s += ", input_dim=" + std::to_string(o.input_dim);
  s += ", max_len=" + std::to_string(o.max_len) + ", d_model=" + std::to_string(o.d_model) +
       ", nhead=" + std::to_string(o.nhead) + ", num_layers=" + std::to_string(o.num_layers);
  if (o.head_dim != 0) s += ", head_dim=" + std::to_string(o.head_dim);
  if (!o.causal) s += ", causal=False";
  if (!o.positions) s += ", positions=False";
  if (o.per_head) s += ", per_head=True";
  return s;
}

}  // namespace headgrad::nn
