// FeatureEmbedding, CrossAttentionFusion and FusionClassifier (see nn/fusion.hpp).
#include "headgrad/nn/fusion.hpp"

#include "headgrad/nn/init.hpp"
#include "headgrad/ops/reduce.hpp"
#include "headgrad/ops/shape_ops.hpp"

namespace headgrad::nn {

// --- FeatureEmbedding -----------------------------------------------------------------

FeatureEmbedding::FeatureEmbedding(std::int64_t num_features, std::int64_t dim,
                                   Generator* generator)
    : UnaryModule("FeatureEmbedding"), num_features_(num_features), dim_(dim) {
  if (num_features <= 0 || dim <= 0)
    throw ValueError("FeatureEmbedding: num_features and dim must be positive, got " +
                     std::to_string(num_features) + " and " + std::to_string(dim));
  weight = register_parameter("weight", empty({num_features, dim}));
  bias = register_parameter("bias", empty({num_features, dim}));
  reset_parameters(generator);
}

void FeatureEmbedding::reset_parameters(Generator* generator) {
  init::normal_(weight, 0.0, 1.0, generator);
  init::normal_(bias, 0.0, 1.0, generator);
}

// tokens[b, f, :] = features[b, f] * weight[f, :] + bias[f, :]: (B, F, 1) * (F, D) + (F, D).
Tensor FeatureEmbedding::forward(const Tensor& features) const {
  features.check_defined("FeatureEmbedding");
  if (features.dim() != 2 || features.size(1) != num_features_)
    throw ShapeError("FeatureEmbedding: features " + features.describe() + " must be (batch, " +
                     std::to_string(num_features_) + ")");
  return unsqueeze(features, 2) * weight + bias;
}

std::string FeatureEmbedding::extra_repr() const {
  return "num_features=" + std::to_string(num_features_) + ", dim=" + std::to_string(dim_);
}

// --- CrossAttentionFusion -------------------------------------------------------------

CrossAttentionFusion::CrossAttentionFusion(const CrossAttentionFusionOptions& options,
                                           Generator* generator)
    : Module("CrossAttentionFusion"), options_(options) {
  const auto& o = options_;
  // Validates d_model, nhead, dropout and eps the way the transformer layers do.
  TransformerLayerOptions(o.d_model, o.nhead)
      .with_dim_feedforward(1)
      .with_dropout(o.dropout)
      .with_layer_norm_eps(o.layer_norm_eps)
      .validate("CrossAttentionFusion");
  const MultiheadAttentionOptions attention = MultiheadAttentionOptions(o.d_model, o.nhead)
                                                  .with_dropout(o.dropout)
                                                  .with_bias(o.bias)
                                                  .with_batch_first(true);
  text_to_tabular =
      register_module("text_to_tabular", make_attention(attention, o.per_head, generator));
  tabular_to_text =
      register_module("tabular_to_text", make_attention(attention, o.per_head, generator));
  text_norm = register_module(
      "text_norm", std::make_shared<LayerNorm>(o.d_model, o.layer_norm_eps, true, o.bias));
  tabular_norm = register_module(
      "tabular_norm", std::make_shared<LayerNorm>(o.d_model, o.layer_norm_eps, true, o.bias));
  fuse = register_module("fuse",
                         std::make_shared<Linear>(2 * o.d_model, o.d_model, o.bias, generator));
}

FusionOutput CrossAttentionFusion::forward(const Tensor& text, const Tensor& text_key_padding_mask,
                                           const Tensor& tabular) const {
  text.check_defined("CrossAttentionFusion");
  tabular.check_defined("CrossAttentionFusion");
  if (text.dim() != 3 || tabular.dim() != 3 || text.size(0) != tabular.size(0) ||
      text.size(2) != options_.d_model || tabular.size(2) != options_.d_model)
    throw ShapeError("CrossAttentionFusion: text " + text.describe() + " and tabular " +
                     tabular.describe() + " must be (batch, length, " +
                     std::to_string(options_.d_model) + ") with the same batch");
  MultiheadAttentionArgs to_tabular;
  to_tabular.need_weights = false;
  to_tabular.dropout_generator = dropout_generator_;
  MultiheadAttentionArgs to_text = to_tabular;
  to_text.key_padding_mask = text_key_padding_mask;

  FusionOutput out;
  out.text = text_norm->forward(
      text + text_to_tabular->forward(text, tabular, tabular, to_tabular).output);
  out.tabular = tabular_norm->forward(
      tabular + tabular_to_text->forward(tabular, text, text, to_text).output);
  const Tensor pooled =
      concat({masked_mean(out.text, text_key_padding_mask), mean(out.tabular, {1})}, 1);
  out.fused = activate(fuse->forward(pooled), options_.activation);
  return out;
}

// --- FusionClassifier -----------------------------------------------------------------

std::string fusion_mode_name(FusionClassifierOptions::Mode mode) {
  switch (mode) {
    case FusionClassifierOptions::Mode::fusion:
      return "fusion";
    case FusionClassifierOptions::Mode::text_only:
      return "text_only";
    case FusionClassifierOptions::Mode::tabular_only:
      return "tabular_only";
  }
  return "unknown";
}

FusionClassifierOptions::Mode fusion_mode_from_string(const std::string& name) {
  using Mode = FusionClassifierOptions::Mode;
  for (Mode m : {Mode::fusion, Mode::text_only, Mode::tabular_only})
    if (fusion_mode_name(m) == name) return m;
  throw ValueError("FusionClassifier: unknown mode '" + name +
                   "' (expected fusion, text_only or tabular_only)");
}

FusionClassifier::FusionClassifier(const FusionClassifierOptions& options, Generator* generator)
    : Module("FusionClassifier"), options_(options) {
  const auto& o = options_;
  if (o.num_classes <= 0 || o.num_layers < 0 || o.num_tabular_layers < 0)
    throw ValueError(
        "FusionClassifier: num_classes must be positive and layer counts >= 0, "
        "got " +
        std::to_string(o.num_classes) + ", " + std::to_string(o.num_layers) + " and " +
        std::to_string(o.num_tabular_layers));
  if (o.uses_text() && (o.vocab_size <= 0 || o.max_len <= 0))
    throw ValueError("FusionClassifier (" + fusion_mode_name(o.mode) +
                     "): vocab_size and max_len must be positive, got " +
                     std::to_string(o.vocab_size) + " and " + std::to_string(o.max_len));
  if (o.uses_tabular() && o.num_features <= 0)
    throw ValueError("FusionClassifier (" + fusion_mode_name(o.mode) +
                     "): num_features must be positive, got " + std::to_string(o.num_features));
  const TransformerLayerOptions layer = layer_options_of(o);
  layer.validate("FusionClassifier");
  const std::int64_t d = o.d_model;
  if (o.uses_text()) {
    token_embedding = register_module(
        "token_embedding", std::make_shared<Embedding>(o.vocab_size, d, std::nullopt, generator));
    position_embedding = register_module(
        "position_embedding", std::make_shared<Embedding>(o.max_len, d, std::nullopt, generator));
    text_encoder = register_module(
        "text_encoder",
        std::make_shared<TransformerEncoder>(layer, o.num_layers, o.norm_first, generator));
  }
  if (o.uses_tabular()) {
    feature_embedding = register_module(
        "feature_embedding", std::make_shared<FeatureEmbedding>(o.num_features, d, generator));
    tabular_encoder = register_module(
        "tabular_encoder",
        std::make_shared<TransformerEncoder>(layer, o.num_tabular_layers,
                                             o.norm_first && o.num_tabular_layers > 0, generator));
  }
  if (o.mode == Mode::fusion) {
    CrossAttentionFusionOptions f;
    f.d_model = d;
    f.nhead = o.nhead;
    f.dropout = o.dropout;
    f.activation = o.activation;
    f.layer_norm_eps = o.layer_norm_eps;
    f.bias = o.bias;
    f.per_head = o.per_head;
    fusion = register_module("fusion", std::make_shared<CrossAttentionFusion>(f, generator));
  }
  dropout = register_module("dropout", std::make_shared<Dropout>(o.dropout));
  classifier =
      register_module("classifier", std::make_shared<Linear>(d, o.num_classes, o.bias, generator));
}

Tensor FusionClassifier::forward(const Tensor& tokens, const Tensor& key_padding_mask,
                                 const Tensor& features) const {
  Tensor text, tabular;
  if (options_.uses_text()) {
    text = dropout->forward(
        embed_with_positions(*token_embedding, *position_embedding, tokens, "FusionClassifier"));
    text = text_encoder->forward(text, Tensor(), key_padding_mask);
  }
  if (options_.uses_tabular()) {
    tabular = tabular_encoder->forward(dropout->forward(feature_embedding->forward(features)));
    if (text.defined() && tabular.size(0) != text.size(0))
      throw ShapeError("FusionClassifier: tokens " + tokens.describe() + " and features " +
                       features.describe() + " have different batch sizes");
  }
  Tensor pooled;
  switch (options_.mode) {
    case Mode::fusion:
      pooled = fusion->forward(text, key_padding_mask, tabular).fused;
      break;
    case Mode::text_only:
      pooled = masked_mean(text, key_padding_mask);
      break;
    case Mode::tabular_only:
      pooled = mean(tabular, {1});
      break;
  }
  return classifier->forward(pooled);
}

void FusionClassifier::set_dropout_generator(Generator* generator) {
  dropout->set_generator(generator);
  if (text_encoder) text_encoder->set_dropout_generator(generator);
  if (tabular_encoder) tabular_encoder->set_dropout_generator(generator);
  if (fusion) fusion->set_dropout_generator(generator);
}

std::string FusionClassifier::extra_repr() const {
  const auto& o = options_;
  return "mode=" + fusion_mode_name(o.mode) + ", d_model=" + std::to_string(o.d_model) +
         ", nhead=" + std::to_string(o.nhead) + ", num_layers=" + std::to_string(o.num_layers) +
         ", num_tabular_layers=" + std::to_string(o.num_tabular_layers) +
         (o.per_head ? ", per_head=True" : "");
}

}  // namespace headgrad::nn
