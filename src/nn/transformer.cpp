// Transformer encoder/decoder layers and stacks (see nn/transformer.hpp). Composition of
// attention layers, Linear, LayerNorm and dropout: no hand-written gradient.
#include "headgrad/nn/transformer.hpp"

#include <sstream>

#include "headgrad/nn/attention_head.hpp"
#include "headgrad/nn/hooks.hpp"

namespace headgrad::nn {

MultiheadAttentionOptions TransformerLayerOptions::attention_options() const {
  return MultiheadAttentionOptions(d_model, nhead)
      .with_head_size(head_dim)
      .with_dropout(dropout)
      .with_bias(bias)
      .with_batch_first(batch_first);
}

void TransformerLayerOptions::validate(const char* op) const {
  auto fail = [&](const std::string& what) { throw ValueError(std::string(op) + ": " + what); };
  if (d_model <= 0 || nhead <= 0)
    fail("d_model and nhead must be positive, got " + std::to_string(d_model) + " and " +
         std::to_string(nhead));
  if (head_dim < 0)
    fail("head_dim must be positive (or 0 for d_model / nhead), got " + std::to_string(head_dim) +
         " with d_model " + std::to_string(d_model) + " and nhead " + std::to_string(nhead));
  if (head_dim == 0 && d_model % nhead != 0)
    fail("d_model " + std::to_string(d_model) + " is not divisible by nhead " +
         std::to_string(nhead) + " (or set head_dim for heads of another width)");
  if (dim_feedforward <= 0)
    fail("dim_feedforward must be positive, got " + std::to_string(dim_feedforward));
  if (!(dropout >= 0.0 && dropout <= 1.0))
    fail("dropout must be in [0, 1], got " + std::to_string(dropout));
  if (!(layer_norm_eps > 0.0))
    fail("layer_norm_eps must be positive, got " + std::to_string(layer_norm_eps));
}

std::shared_ptr<AttentionLayer> make_attention(const MultiheadAttentionOptions& options,
                                               bool per_head, Generator* generator) {
  if (per_head) return std::make_shared<HeadwiseMultiheadAttention>(options, generator);
  return std::make_shared<MultiheadAttention>(options, generator);
}

namespace {

std::string describe_options(const TransformerLayerOptions& o) {
  std::ostringstream os;
  os << "d_model=" << o.d_model << ", nhead=" << o.nhead
     << ", dim_feedforward=" << o.dim_feedforward << ", dropout=" << o.dropout
     << ", activation=" << activation_name(o.activation)
     << ", norm_first=" << (o.norm_first ? "True" : "False")
     << ", batch_first=" << (o.batch_first ? "True" : "False");
  if (!o.bias) os << ", bias=False";
  if (o.per_head) os << ", per_head=True";
  if (o.head_dim != 0) os << ", head_dim=" << o.head_dim;
  return os.str();
}

// Attention arguments for a block inside a layer: no weights (as torch's layers ask).
MultiheadAttentionArgs block_args(const Tensor& mask, const Tensor& key_padding_mask,
                                  bool is_causal, Generator* generator) {
  MultiheadAttentionArgs args;
  args.attn_mask = mask;
  args.key_padding_mask = key_padding_mask;
  args.is_causal = is_causal;
  args.need_weights = false;
  args.dropout_generator = generator;
  return args;
}

// linear2(dropout(activation(linear1(x)))), with the hook points mlp_pre (linear1's output)
// and mlp_post (the activation's).
struct FeedForward {
  const Linear& linear1;
  const Dropout& dropout;
  const Linear& linear2;
  Activation activation;
  const HookPoint& mlp_pre;
  const HookPoint& mlp_post;
};
Tensor feed_forward(const FeedForward& f, const Tensor& x) {
  const Tensor pre = f.mlp_pre(f.linear1.forward(x));
  const Tensor post = f.mlp_post(activate(pre, f.activation));
  return f.linear2.forward(f.dropout.forward(post));
}

}  // namespace

// --- TransformerEncoderLayer ----------------------------------------------------------

TransformerEncoderLayer::TransformerEncoderLayer(const TransformerLayerOptions& options,
                                                 Generator* generator)
    : Module("TransformerEncoderLayer"), options_(options) {
  options.validate("TransformerEncoderLayer");
  const auto& o = options_;
  self_attn =
      register_module("self_attn", make_attention(o.attention_options(), o.per_head, generator));
  linear1 = register_module(
      "linear1", std::make_shared<Linear>(o.d_model, o.dim_feedforward, o.bias, generator));
  dropout = register_module("dropout", std::make_shared<Dropout>(o.dropout));
  linear2 = register_module(
      "linear2", std::make_shared<Linear>(o.dim_feedforward, o.d_model, o.bias, generator));
  norm1 = register_module("norm1",
                          std::make_shared<LayerNorm>(o.d_model, o.layer_norm_eps, true, o.bias));
  norm2 = register_module("norm2",
                          std::make_shared<LayerNorm>(o.d_model, o.layer_norm_eps, true, o.bias));
  dropout1 = register_module("dropout1", std::make_shared<Dropout>(o.dropout));
  dropout2 = register_module("dropout2", std::make_shared<Dropout>(o.dropout));
}

void TransformerEncoderLayer::set_dropout_generator(Generator* generator) {
  dropout_generator_ = generator;
  for (Dropout* d : {dropout.get(), dropout1.get(), dropout2.get()}) d->set_generator(generator);
}

Tensor TransformerEncoderLayer::self_attention_block(const Tensor& x, const Tensor& mask,
                                                     const Tensor& key_padding_mask,
                                                     bool is_causal) const {
  const MultiheadAttentionArgs args =
      block_args(mask, key_padding_mask, is_causal, dropout_generator_);
  return dropout1->forward(self_attn->forward(x, x, x, args).output);
}

Tensor TransformerEncoderLayer::feed_forward_block(const Tensor& x) const {
  return dropout2->forward(feed_forward(
      {*linear1, *dropout, *linear2, options_.activation, hook_mlp_pre_, hook_mlp_post_}, x));
}

Tensor TransformerEncoderLayer::forward(const Tensor& src, const Tensor& src_mask,
                                        const Tensor& src_key_padding_mask, bool is_causal) const {
  src.check_defined("TransformerEncoderLayer");
  // Hook points (nn/hooks.hpp): one thread-local load each when no handler is active.
  Tensor x = hook_resid_pre_(src);
  if (options_.norm_first) {
    const Tensor attn = hook_attn_out_(
        self_attention_block(norm1->forward(x), src_mask, src_key_padding_mask, is_causal));
    x = hook_resid_mid_(x + attn);
    x = x + hook_mlp_out_(feed_forward_block(norm2->forward(x)));
  } else {
    const Tensor attn =
        hook_attn_out_(self_attention_block(x, src_mask, src_key_padding_mask, is_causal));
    x = hook_resid_mid_(norm1->forward(x + attn));
    x = norm2->forward(x + hook_mlp_out_(feed_forward_block(x)));
  }
  return hook_resid_post_(x);
}

std::string TransformerEncoderLayer::extra_repr() const { return describe_options(options_); }

// --- TransformerDecoderLayer ----------------------------------------------------------

TransformerDecoderLayer::TransformerDecoderLayer(const TransformerLayerOptions& options,
                                                 Generator* generator)
    : Module("TransformerDecoderLayer"), options_(options) {
  options.validate("TransformerDecoderLayer");
  const auto& o = options_;
  self_attn =
      register_module("self_attn", make_attention(o.attention_options(), o.per_head, generator));
  multihead_attn = register_module("multihead_attn",
                                   make_attention(o.attention_options(), o.per_head, generator));
  linear1 = register_module(
      "linear1", std::make_shared<Linear>(o.d_model, o.dim_feedforward, o.bias, generator));
  dropout = register_module("dropout", std::make_shared<Dropout>(o.dropout));
  linear2 = register_module(
      "linear2", std::make_shared<Linear>(o.dim_feedforward, o.d_model, o.bias, generator));
  auto make_norm = [&] {
    return std::make_shared<LayerNorm>(o.d_model, o.layer_norm_eps, true, o.bias);
  };
  norm1 = register_module("norm1", make_norm());
  norm2 = register_module("norm2", make_norm());
  norm3 = register_module("norm3", make_norm());
  dropout1 = register_module("dropout1", std::make_shared<Dropout>(o.dropout));
  dropout2 = register_module("dropout2", std::make_shared<Dropout>(o.dropout));
  dropout3 = register_module("dropout3", std::make_shared<Dropout>(o.dropout));
}

void TransformerDecoderLayer::set_dropout_generator(Generator* generator) {
  dropout_generator_ = generator;
  for (Dropout* d : {dropout.get(), dropout1.get(), dropout2.get(), dropout3.get()})
    d->set_generator(generator);
}

Tensor TransformerDecoderLayer::forward(const Tensor& tgt, const Tensor& memory,
                                        const Tensor& tgt_mask, const Tensor& memory_mask,
                                        const Tensor& tgt_key_padding_mask,
                                        const Tensor& memory_key_padding_mask, bool tgt_is_causal,
                                        bool memory_is_causal) const {
  tgt.check_defined("TransformerDecoderLayer");
  memory.check_defined("TransformerDecoderLayer");
  const MultiheadAttentionArgs self_args =
      block_args(tgt_mask, tgt_key_padding_mask, tgt_is_causal, dropout_generator_);
  const MultiheadAttentionArgs cross_args =
      block_args(memory_mask, memory_key_padding_mask, memory_is_causal, dropout_generator_);
  // Hook points (nn/hooks.hpp).
  auto sa = [&](const Tensor& x) {
    return hook_attn_out_(dropout1->forward(self_attn->forward(x, x, x, self_args).output));
  };
  auto mha = [&](const Tensor& x) {
    return hook_cross_attn_out_(
        dropout2->forward(multihead_attn->forward(x, memory, memory, cross_args).output));
  };
  const FeedForward f{*linear1,      *dropout,      *linear2, options_.activation,
                      hook_mlp_pre_, hook_mlp_post_};
  auto ff = [&](const Tensor& x) { return hook_mlp_out_(dropout3->forward(feed_forward(f, x))); };
  Tensor x = hook_resid_pre_(tgt);
  if (options_.norm_first) {
    x = hook_resid_mid_(x + sa(norm1->forward(x)));
    x = hook_resid_mid_cross_(x + mha(norm2->forward(x)));
    x = x + ff(norm3->forward(x));
  } else {
    x = hook_resid_mid_(norm1->forward(x + sa(x)));
    x = hook_resid_mid_cross_(norm2->forward(x + mha(x)));
    x = norm3->forward(x + ff(x));
  }
  return hook_resid_post_(x);
}

std::string TransformerDecoderLayer::extra_repr() const { return describe_options(options_); }

// --- stacks ---------------------------------------------------------------------------

TransformerEncoder::TransformerEncoder(const TransformerLayerOptions& layer_options,
                                       std::int64_t num_layers, bool final_norm,
                                       Generator* generator)
    : Module("TransformerEncoder"), layer_options_(layer_options) {
  if (num_layers < 0)
    throw ValueError("TransformerEncoder: num_layers must be >= 0, got " +
                     std::to_string(num_layers));
  layers = register_module("layers", std::make_shared<ModuleList<TransformerEncoderLayer>>());
  for (std::int64_t i = 0; i < num_layers; ++i)
    layers->push_back(std::make_shared<TransformerEncoderLayer>(layer_options, generator));
  if (final_norm)
    norm = register_module(
        "norm", std::make_shared<LayerNorm>(layer_options.d_model, layer_options.layer_norm_eps,
                                            true, layer_options.bias));
}

Tensor TransformerEncoder::forward(const Tensor& src, const Tensor& mask,
                                   const Tensor& src_key_padding_mask, bool is_causal) const {
  Tensor x = src;
  for (const auto& layer : *layers) x = layer->forward(x, mask, src_key_padding_mask, is_causal);
  return norm ? norm->forward(x) : x;
}

std::shared_ptr<Module> TransformerEncoder::clone() const {
  return cloned(
      std::make_shared<TransformerEncoder>(layer_options_, num_layers(), norm != nullptr));
}

void TransformerEncoder::set_dropout_generator(Generator* generator) {
  for (const auto& layer : *layers) layer->set_dropout_generator(generator);
}

TransformerDecoder::TransformerDecoder(const TransformerLayerOptions& layer_options,
                                       std::int64_t num_layers, bool final_norm,
                                       Generator* generator)
    : Module("TransformerDecoder"), layer_options_(layer_options) {
  if (num_layers < 0)
    throw ValueError("TransformerDecoder: num_layers must be >= 0, got " +
                     std::to_string(num_layers));
  layers = register_module("layers", std::make_shared<ModuleList<TransformerDecoderLayer>>());
  for (std::int64_t i = 0; i < num_layers; ++i)
    layers->push_back(std::make_shared<TransformerDecoderLayer>(layer_options, generator));
  if (final_norm)
    norm = register_module(
        "norm", std::make_shared<LayerNorm>(layer_options.d_model, layer_options.layer_norm_eps,
                                            true, layer_options.bias));
}

Tensor TransformerDecoder::forward(const Tensor& tgt, const Tensor& memory, const Tensor& tgt_mask,
                                   const Tensor& memory_mask, const Tensor& tgt_key_padding_mask,
                                   const Tensor& memory_key_padding_mask, bool tgt_is_causal,
                                   bool memory_is_causal) const {
  Tensor x = tgt;
  for (const auto& layer : *layers)
    x = layer->forward(x, memory, tgt_mask, memory_mask, tgt_key_padding_mask,
                       memory_key_padding_mask, tgt_is_causal, memory_is_causal);
  return norm ? norm->forward(x) : x;
}

std::shared_ptr<Module> TransformerDecoder::clone() const {
  return cloned(
      std::make_shared<TransformerDecoder>(layer_options_, num_layers(), norm != nullptr));
}

void TransformerDecoder::set_dropout_generator(Generator* generator) {
  for (const auto& layer : *layers) layer->set_dropout_generator(generator);
}

}  // namespace headgrad::nn
