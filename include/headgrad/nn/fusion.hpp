// Text + tabular fusion by bidirectional cross-attention (B batch, T text length, F
// number of tabular features, D d_model, C num_classes).
//
// nn::FeatureEmbedding: each feature value becomes a token,
//   features (B, F) -> tokens (B, F, D),  token[b, f] = features[b, f] * weight[f] + bias[f]
//   weight (F, D), bias (F, D), both N(0, 1) as nn.Embedding rows.
//
// nn::CrossAttentionFusion: text (B, T, D) with its key padding mask, tabular (B, F, D):
//   text'    = text_norm(text + text_to_tabular(q = text, k = v = tabular))
//   tabular' = tabular_norm(tabular + tabular_to_text(q = tabular, k = v = text,
//                                                     key padding = the text's))
//   fused    = activation(fuse(concat(masked_mean(text', padding), mean(tabular', F))))
// Both directions read the original inputs (they run side by side, not one after the
// other). Parameters: text_to_tabular.*, tabular_to_text.* (MultiheadAttention names, or
// HeadwiseMultiheadAttention's heads.<h>.* with per_head), text_norm.*, tabular_norm.*,
// fuse.{weight,bias} (D, 2D).
//
// nn::FusionClassifier: the whole model, with the mode's parts only:
//   fusion:        text_encoder(tokens) and tabular_encoder(feature_embedding(features)),
//                  then fusion, then classifier                      -> (B, C)
//   text_only:     classifier(masked_mean(text_encoder(tokens)))     (no tabular parts)
//   tabular_only:  classifier(mean(tabular_encoder(features tokens))) (no text parts)
// Parameters: token_embedding.weight (V, D), position_embedding.weight (max_len, D),
// text_encoder.layers.<i>.*, text_encoder.norm.* (norm_first) [fusion, text_only];
// feature_embedding.{weight,bias} (F, D), tabular_encoder.layers.<i>.*,
// tabular_encoder.norm.* (norm_first) [fusion, tabular_only]; fusion.* [fusion];
// classifier.{weight,bias} (C, D). The tabular encoder has no position embedding: the
// feature tokens are told apart by their own weight and bias rows.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "headgrad/core/generator.hpp"
#include "headgrad/nn/layers.hpp"
#include "headgrad/nn/linear.hpp"
#include "headgrad/nn/module.hpp"
#include "headgrad/nn/multihead_attention.hpp"
#include "headgrad/nn/transformer.hpp"

namespace headgrad::nn {

class FeatureEmbedding : public UnaryModule {
 public:
  FeatureEmbedding(std::int64_t num_features, std::int64_t dim, Generator* generator = nullptr);
  void reset_parameters(Generator* generator = nullptr);
  // features (B, F) floating, in the parameters' dtype -> (B, F, D).
  Tensor forward(const Tensor& features) const override;
  using UnaryModule::operator();

  std::int64_t num_features() const { return num_features_; }
  std::int64_t dim() const { return dim_; }

  Tensor weight;  // (F, D)
  Tensor bias;    // (F, D)

 protected:
  std::string extra_repr() const override;

 private:
  std::int64_t num_features_, dim_;
};

struct CrossAttentionFusionOptions {
  std::int64_t d_model = 64;
  std::int64_t nhead = 4;
  double dropout = 0.0;  // on the attention weights
  Activation activation = Activation::gelu;
  double layer_norm_eps = 1e-5;
  bool bias = true;
  bool per_head = false;
};

struct FusionOutput {
  Tensor fused;    // (B, D)
  Tensor text;     // text' (B, T, D)
  Tensor tabular;  // tabular' (B, F, D)
};

class CrossAttentionFusion : public Module {
 public:
  explicit CrossAttentionFusion(const CrossAttentionFusionOptions& options,
                                Generator* generator = nullptr);

  // text (B, T, D), text_key_padding_mask (B, T) bool (true = padding) or undefined,
  // tabular (B, F, D).
  FusionOutput forward(const Tensor& text, const Tensor& text_key_padding_mask,
                       const Tensor& tabular) const;
  FusionOutput operator()(const Tensor& text, const Tensor& text_key_padding_mask,
                          const Tensor& tabular) const {
    return forward(text, text_key_padding_mask, tabular);
  }

  // Generator for the attention dropout (null = the default generator).
  void set_dropout_generator(Generator* generator) { dropout_generator_ = generator; }
  const CrossAttentionFusionOptions& options() const { return options_; }
  std::shared_ptr<Module> clone() const override {
    return cloned(std::make_shared<CrossAttentionFusion>(options_));
  }

  std::shared_ptr<AttentionLayer> text_to_tabular;  // queries: text; keys, values: tabular
  std::shared_ptr<AttentionLayer> tabular_to_text;  // queries: tabular; keys, values: text
  std::shared_ptr<LayerNorm> text_norm, tabular_norm;
  std::shared_ptr<Linear> fuse;  // (D, 2D)

 private:
  CrossAttentionFusionOptions options_;
  Generator* dropout_generator_ = nullptr;
};

// An aggregate (see GPTOptions for how to fill it).
struct FusionClassifierOptions {
  enum class Mode { fusion, text_only, tabular_only };

  std::int64_t vocab_size = 0;
  std::int64_t max_len = 0;
  std::int64_t num_features = 0;
  std::int64_t num_classes = 0;
  Mode mode = Mode::fusion;
  std::int64_t d_model = 64;
  std::int64_t nhead = 4;
  std::int64_t num_layers = 2;          // text encoder layers
  std::int64_t num_tabular_layers = 1;  // tabular encoder layers (0 = none)
  std::int64_t dim_feedforward = 0;     // 0 = 4 * d_model
  double dropout = 0.0;
  Activation activation = Activation::gelu;
  double layer_norm_eps = 1e-5;
  bool norm_first = true;
  bool bias = true;
  bool per_head = false;  // every attention layer (encoders and fusion) per head

  bool uses_text() const { return mode != Mode::tabular_only; }
  bool uses_tabular() const { return mode != Mode::text_only; }
};

std::string fusion_mode_name(FusionClassifierOptions::Mode mode);  // "fusion", "text_only", ...
// Throws ValueError for an unknown name.
FusionClassifierOptions::Mode fusion_mode_from_string(const std::string& name);

class FusionClassifier : public Module {
 public:
  using Mode = FusionClassifierOptions::Mode;

  explicit FusionClassifier(const FusionClassifierOptions& options, Generator* generator = nullptr);

  // tokens (B, T) int64, key_padding_mask (B, T) bool or undefined, features (B, F) in the
  // parameters' dtype -> logits (B, C). text_only ignores features (may be undefined),
  // tabular_only ignores tokens and key_padding_mask.
  Tensor forward(const Tensor& tokens, const Tensor& key_padding_mask,
                 const Tensor& features) const;
  Tensor operator()(const Tensor& tokens, const Tensor& key_padding_mask,
                    const Tensor& features) const {
    return forward(tokens, key_padding_mask, features);
  }

  void set_dropout_generator(Generator* generator);
  const FusionClassifierOptions& options() const { return options_; }
  std::shared_ptr<Module> clone() const override {
    return cloned(std::make_shared<FusionClassifier>(options_));
  }
  Mode mode() const { return options_.mode; }

  // Null when the mode does not use them.
  std::shared_ptr<Embedding> token_embedding, position_embedding;
  std::shared_ptr<TransformerEncoder> text_encoder;
  std::shared_ptr<FeatureEmbedding> feature_embedding;
  std::shared_ptr<TransformerEncoder> tabular_encoder;
  std::shared_ptr<CrossAttentionFusion> fusion;
  std::shared_ptr<Dropout> dropout;    // on the embedded tokens and feature tokens
  std::shared_ptr<Linear> classifier;  // (C, D)

 protected:
  std::string extra_repr() const override;

 private:
  FusionClassifierOptions options_;
};

}  // namespace headgrad::nn
