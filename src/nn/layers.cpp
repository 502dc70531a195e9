// Embedding, LayerNorm, Dropout, Sequential and MLP (see nn/layers.hpp).
#include "headgrad/nn/layers.hpp"

#include <cmath>
#include <sstream>

#include "headgrad/autograd/grad_mode.hpp"
#include "headgrad/nn/init.hpp"
#include "headgrad/ops/dropout.hpp"
#include "headgrad/ops/index.hpp"
#include "headgrad/ops/norm.hpp"
#include "headgrad/ops/reduce.hpp"
#include "headgrad/ops/shape_ops.hpp"

namespace headgrad::nn {

Tensor activate(const Tensor& x, Activation activation) {
  return activation == Activation::gelu ? gelu(x) : relu(x);
}

std::string activation_name(Activation activation) {
  return activation == Activation::gelu ? "gelu" : "relu";
}

// --- Embedding ------------------------------------------------------------------------

Embedding::Embedding(std::int64_t num_embeddings, std::int64_t embedding_dim,
                     std::optional<std::int64_t> padding_idx, Generator* generator)
    : UnaryModule("Embedding"), num_embeddings_(num_embeddings), embedding_dim_(embedding_dim) {
  if (num_embeddings <= 0 || embedding_dim <= 0)
    throw ValueError("Embedding: num_embeddings and embedding_dim must be positive, got " +
                     std::to_string(num_embeddings) + " and " + std::to_string(embedding_dim));
  if (padding_idx) {
    if (*padding_idx < -num_embeddings || *padding_idx >= num_embeddings)
      throw ValueError("Embedding: padding_idx " + std::to_string(*padding_idx) +
                       " is out of range for " + std::to_string(num_embeddings) + " embeddings");
    padding_idx_ = *padding_idx < 0 ? *padding_idx + num_embeddings : *padding_idx;
  }
  weight = register_parameter("weight", empty({num_embeddings, embedding_dim}));
  reset_parameters(generator);
}

// torch.nn.Embedding.reset_parameters: normal_(weight), then the padding row zero.
void Embedding::reset_parameters(Generator* generator) {
  init::normal_(weight, 0.0, 1.0, generator);
  if (padding_idx_) {
    NoGradGuard no_grad;
    Tensor keep = ones({num_embeddings_, 1}, weight.options());
    keep.set_at({*padding_idx_, 0}, 0.0);
    weight.copy_(mul(weight.detach(), keep));  // (narrow copies, so no write through a slice)
  }
}

Tensor Embedding::forward(const Tensor& ids) const { return embedding(weight, ids, padding_idx_); }

std::string Embedding::extra_repr() const {
  std::string s = std::to_string(num_embeddings_) + ", " + std::to_string(embedding_dim_);
  if (padding_idx_) s += ", padding_idx=" + std::to_string(*padding_idx_);
  return s;
}

// --- LayerNorm ------------------------------------------------------------------------

LayerNorm::LayerNorm(std::int64_t normalized_dim, double eps, bool elementwise_affine, bool bias)
    : UnaryModule("LayerNorm"), dim_(normalized_dim), eps_(eps), affine_(elementwise_affine) {
  if (normalized_dim <= 0)
    throw ValueError("LayerNorm: normalized_dim must be positive, got " +
                     std::to_string(normalized_dim));
  if (!(eps > 0)) throw ValueError("LayerNorm: eps must be positive, got " + std::to_string(eps));
  weight = register_parameter("weight", affine_ ? empty({dim_}) : Tensor());
  this->bias = register_parameter("bias", affine_ && bias ? empty({dim_}) : Tensor());
  reset_parameters();
}

void LayerNorm::reset_parameters() {
  if (weight.defined()) init::ones_(weight);
  if (bias.defined()) init::zeros_(bias);
}

Tensor LayerNorm::forward(const Tensor& x) const {
  return layer_norm(x, {dim_}, weight, bias, eps_);
}

std::string LayerNorm::extra_repr() const {
  std::ostringstream os;
  os << "(" << dim_ << ",), eps=" << eps_
     << ", elementwise_affine=" << (affine_ ? "True" : "False");
  if (affine_ && !bias.defined()) os << ", bias=False";
  return os.str();
}

// --- Dropout --------------------------------------------------------------------------

Dropout::Dropout(double p, Generator* generator)
    : UnaryModule("Dropout"), p_(p), generator_(generator) {
  if (!(p >= 0.0 && p <= 1.0))
    throw ValueError("Dropout: probability p must be in [0, 1], got " + std::to_string(p));
}

Tensor Dropout::forward(const Tensor& x) const { return dropout(x, p_, is_training(), generator_); }

std::string Dropout::extra_repr() const {
  std::ostringstream os;
  os << "p=" << p_;
  return os.str();
}

// --- Sequential -----------------------------------------------------------------------

Tensor Sequential::forward(const Tensor& x) const {
  Tensor y = x;
  for (const auto& step : steps_) y = step(y);
  return y;
}

// --- MLP ------------------------------------------------------------------------------

MLP::MLP(const MLPOptions& options, Generator* generator) : UnaryModule("MLP"), options_(options) {
  if (options.in_features <= 0 || options.hidden_features <= 0 || options.out_features < 0)
    throw ValueError("MLP: in_features and hidden_features must be positive, got " +
                     std::to_string(options.in_features) + " and " +
                     std::to_string(options.hidden_features));
  fc1 =
      register_module("fc1", std::make_shared<Linear>(options.in_features, options.hidden_features,
                                                      options.bias, generator));
  dropout = register_module("dropout", std::make_shared<Dropout>(options.dropout));
  fc2 = register_module("fc2",
                        std::make_shared<Linear>(options.hidden_features, options.output_features(),
                                                 options.bias, generator));
}

Tensor MLP::forward(const Tensor& x) const {
  return fc2->forward(dropout->forward(activate(fc1->forward(x), options_.activation)));
}

// --- shared by the models -------------------------------------------------------------

Tensor embed_with_positions(const Embedding& token_embedding, const Embedding& position_embedding,
                            const Tensor& tokens, const char* op) {
  tokens.check_defined(op);
  if (tokens.dtype() != kInt64 || tokens.dim() != 2)
    throw ShapeError(std::string(op) + ": tokens " + tokens.describe() +
                     " must be int64 of shape (batch, length)");
  const std::int64_t length = tokens.size(1);
  if (length > position_embedding.num_embeddings())
    throw ShapeError(std::string(op) + ": tokens " + tokens.describe() + " are longer than " +
                     "max_len " + std::to_string(position_embedding.num_embeddings()));
  const Tensor positions =
      arange(static_cast<double>(length), TensorOptions(kInt64).device(tokens.device()));
  return token_embedding.forward(tokens) + position_embedding.forward(positions);
}

Tensor masked_mean(const Tensor& x, const Tensor& key_padding_mask) {
  x.check_defined("masked_mean");
  if (x.dim() != 3)
    throw ShapeError("masked_mean: x " + x.describe() + " must be (batch, length, dim)");
  if (!key_padding_mask.defined()) return mean(x, {1});
  if (key_padding_mask.dtype() != kBool || key_padding_mask.shape() != Shape{x.size(0), x.size(1)})
    throw ShapeError("masked_mean: key_padding_mask " + key_padding_mask.describe() +
                     " must be bool of shape (batch, length) = " +
                     shape_str({x.size(0), x.size(1)}) + " for x " + x.describe());
  const Tensor keep = logical_not(key_padding_mask).to(x.dtype());  // (B, T)
  const Tensor total = sum(x * unsqueeze(keep, 2), {1});            // (B, D)
  const Tensor count = clamp(sum(keep, {1}, true), 1.0, INFINITY);  // (B, 1)
  return total / count;
}

std::string MLP::extra_repr() const { return "activation=" + activation_name(options_.activation); }

}  // namespace headgrad::nn
