// nn::EncoderClassifier: a toy sequence classifier (B batch, T length <= max_len,
// D d_model, C num_classes):
//
//   tokens (B, T) int64 -> x = token_embedding(tokens) + position_embedding(0 .. T-1)
//   x = dropout(x); x = layers[i](x, key padding)   (bidirectional self-attention)
//   x = norm(x)                                      (norm_first only)
//   logits = classifier(masked_mean(x, key_padding_mask))             -> (B, C)
//
// The pooling averages the non-padded positions only, so a padded position changes no
// logit. Parameters: token_embedding.weight (V, D), position_embedding.weight (max_len, D),
// layers.<i>.* (TransformerEncoderLayer names), norm.* (D) when norm_first,
// classifier.{weight,bias} (C, D). PyTorch's default init for each part, in registration
// order; per_head true and false give the same values for the same generator.
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
struct EncoderClassifierOptions {
  std::int64_t vocab_size = 0;
  std::int64_t max_len = 0;
  std::int64_t num_classes = 0;
  std::int64_t d_model = 64;
  std::int64_t nhead = 4;
  std::int64_t num_layers = 2;
  std::int64_t dim_feedforward = 0;  // 0 = 4 * d_model
  double dropout = 0.0;
  Activation activation = Activation::gelu;
  double layer_norm_eps = 1e-5;
  bool norm_first = true;
  bool bias = true;
  bool per_head = false;
};

class EncoderClassifier : public Module {
 public:
  explicit EncoderClassifier(const EncoderClassifierOptions& options,
                             Generator* generator = nullptr);

  // tokens (B, T) int64, key_padding_mask (B, T) bool (true = padding) or undefined ->
  // logits (B, C).
  Tensor forward(const Tensor& tokens, const Tensor& key_padding_mask = {}) const;
  Tensor operator()(const Tensor& tokens, const Tensor& key_padding_mask = {}) const {
    return forward(tokens, key_padding_mask);
  }
  // The encoded sequence before pooling: (B, T, D).
  Tensor encode(const Tensor& tokens, const Tensor& key_padding_mask = {}) const;

  void set_dropout_generator(Generator* generator);
  const EncoderClassifierOptions& options() const { return options_; }
  std::shared_ptr<Module> clone() const override {
    return cloned(std::make_shared<EncoderClassifier>(options_));
  }

  std::shared_ptr<Embedding> token_embedding;
  std::shared_ptr<Embedding> position_embedding;
  std::shared_ptr<Dropout> dropout;
  std::shared_ptr<ModuleList<TransformerEncoderLayer>> layers;
  std::shared_ptr<LayerNorm> norm;     // null when !norm_first
  std::shared_ptr<Linear> classifier;  // (C, D)

 protected:
  std::string extra_repr() const override;

 private:
  EncoderClassifierOptions options_;
};

}  // namespace headgrad::nn
