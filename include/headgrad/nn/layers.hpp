// Small building blocks with PyTorch's names, shapes and default initialization:
//
//   Embedding(V, D)   ids int64 (*) -> (*, D); weight (V, D) ~ N(0, 1), the padding row zero
//   LayerNorm(D)      x (*, D) -> (*, D); weight (D) = 1, bias (D) = 0 (when affine)
//   Dropout(p)        x -> x, elements zeroed with probability p in training mode only
//   ReLU, GELU        elementwise activations (no parameters)
//   Sequential        modules applied in turn, registered as "0", "1", ...
//   MLP               fc1 (in -> hidden), activation, dropout, fc2 (hidden -> out)
//
// and two functions the toy models share: token + learned position embedding, and the mean
// over the non-padded positions of a sequence.
//
// UnaryModule is the interface of a module with one tensor in and one tensor out; the
// modules above implement it. Sequential takes any module with a
// `Tensor forward(const Tensor&) const`, including nn::Linear.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "headgrad/core/generator.hpp"
#include "headgrad/core/options.hpp"
#include "headgrad/nn/linear.hpp"
#include "headgrad/nn/module.hpp"
#include "headgrad/ops/elementwise.hpp"

namespace headgrad::nn {

// A module with one tensor in and one tensor out.
class UnaryModule : public Module {
 public:
  using Module::Module;
  virtual Tensor forward(const Tensor& x) const = 0;
  Tensor operator()(const Tensor& x) const { return forward(x); }
};

// The feed-forward activations of the transformer layers.
enum class Activation { relu, gelu };
// Applies `activation` (GELU is the exact, erf form, as torch's "gelu").
Tensor activate(const Tensor& x, Activation activation);
// "relu" / "gelu".
std::string activation_name(Activation activation);

// torch.nn.Embedding: a lookup table of V rows of size D.
class Embedding : public UnaryModule {
 public:
  // weight ~ N(0, 1) from `generator` (the default generator when null); row padding_idx
  // (negative counts from the end, as torch) is zero and gets no gradient.
  Embedding(std::int64_t num_embeddings, std::int64_t embedding_dim,
            std::optional<std::int64_t> padding_idx = std::nullopt, Generator* generator = nullptr);

  void reset_parameters(Generator* generator = nullptr);
  // ids int64 of any shape (values in [0, V)) -> (*ids.shape, D).
  Tensor forward(const Tensor& ids) const override;
  using UnaryModule::operator();

  std::int64_t num_embeddings() const { return num_embeddings_; }
  std::int64_t embedding_dim() const { return embedding_dim_; }
  std::optional<std::int64_t> padding_idx() const { return padding_idx_; }
  std::shared_ptr<Module> clone() const override {
    return cloned(std::make_shared<Embedding>(num_embeddings_, embedding_dim_, padding_idx_));
  }

  Tensor weight;  // (V, D)

 protected:
  std::string extra_repr() const override;

 private:
  std::int64_t num_embeddings_, embedding_dim_;
  std::optional<std::int64_t> padding_idx_;  // normalized to [0, V)
};

// torch.nn.LayerNorm over the last dim: (x - mean) / sqrt(var + eps) * weight + bias.
class LayerNorm : public UnaryModule {
 public:
  // `bias` false registers no bias (torch >= 2.1's LayerNorm(bias=False)).
  explicit LayerNorm(std::int64_t normalized_dim, double eps = 1e-5, bool elementwise_affine = true,
                     bool bias = true);

  void reset_parameters();                         // weight = 1, bias = 0
  Tensor forward(const Tensor& x) const override;  // (*, D) -> (*, D)
  using UnaryModule::operator();

  std::int64_t normalized_dim() const { return dim_; }
  double eps() const { return eps_; }
  std::shared_ptr<Module> clone() const override {
    return cloned(std::make_shared<LayerNorm>(dim_, eps_, affine_, bias.defined()));
  }

  Tensor weight;  // (D), undefined without elementwise_affine
  Tensor bias;    // (D), undefined without elementwise_affine or bias

 protected:
  std::string extra_repr() const override;

 private:
  std::int64_t dim_;
  double eps_;
  bool affine_;
};

// torch.nn.Dropout: active in training mode (the module's flag), identity in eval mode.
class Dropout : public UnaryModule {
 public:
  // Masks are drawn from `generator` (the default generator when null).
  explicit Dropout(double p = 0.5, Generator* generator = nullptr);
  Tensor forward(const Tensor& x) const override;
  using UnaryModule::operator();

  double p() const { return p_; }
  void set_generator(Generator* generator) { generator_ = generator; }
  std::shared_ptr<Module> clone() const override {
    return cloned(std::make_shared<Dropout>(p_, generator_));
  }

 protected:
  std::string extra_repr() const override;

 private:
  double p_;
  Generator* generator_;
};

class ReLU : public UnaryModule {
 public:
  ReLU() : UnaryModule("ReLU") {}
  Tensor forward(const Tensor& x) const override { return relu(x); }
  std::shared_ptr<Module> clone() const override { return std::make_shared<ReLU>(); }
  using UnaryModule::operator();
};

class GELU : public UnaryModule {
 public:
  explicit GELU(GeluApproximation approximate = GeluApproximation::none)
      : UnaryModule("GELU"), approximate_(approximate) {}
  Tensor forward(const Tensor& x) const override { return gelu(x, approximate_); }
  std::shared_ptr<Module> clone() const override { return std::make_shared<GELU>(approximate_); }
  using UnaryModule::operator();

 private:
  GeluApproximation approximate_;
};

// torch.nn.Sequential: forward applies the modules in order; they are registered as
// "0", "1", ... so parameters read "0.weight", "2.bias".
class Sequential : public UnaryModule {
 public:
  Sequential() : UnaryModule("Sequential") {}

  // Any module with `Tensor forward(const Tensor&) const` (UnaryModule, Linear, ...).
  template <typename M>
  Sequential& push_back(std::shared_ptr<M> module) {
    M* raw = module.get();
    register_module(std::to_string(modules_.size()), module);
    modules_.push_back(module);
    steps_.push_back([raw](const Tensor& x) { return raw->forward(x); });
    return *this;
  }

  Tensor forward(const Tensor& x) const override;
  using UnaryModule::operator();

  std::size_t size() const { return modules_.size(); }
  const std::shared_ptr<Module>& operator[](std::size_t i) const { return modules_.at(i); }

 private:
  std::vector<std::shared_ptr<Module>> modules_;
  std::vector<std::function<Tensor(const Tensor&)>> steps_;
};

struct MLPOptions {
  std::int64_t in_features = 0;
  std::int64_t hidden_features = 0;
  std::int64_t out_features = 0;  // 0 = in_features
  Activation activation = Activation::gelu;
  double dropout = 0.0;  // after the activation
  bool bias = true;

  MLPOptions(std::int64_t in, std::int64_t hidden, std::int64_t out = 0)
      : in_features(in), hidden_features(hidden), out_features(out) {}
  HEADGRAD_WITH(activation)
  HEADGRAD_WITH(dropout)
  HEADGRAD_WITH(bias)
  std::int64_t output_features() const { return out_features == 0 ? in_features : out_features; }
};

// Two-layer perceptron: fc2(dropout(activation(fc1(x)))), x (*, in) -> (*, out).
// Parameters: fc1.{weight,bias} (hidden, in), fc2.{weight,bias} (out, hidden).
class MLP : public UnaryModule {
 public:
  explicit MLP(const MLPOptions& options, Generator* generator = nullptr);
  Tensor forward(const Tensor& x) const override;
  using UnaryModule::operator();

  const MLPOptions& options() const { return options_; }
  std::shared_ptr<Module> clone() const override { return cloned(std::make_shared<MLP>(options_)); }

  std::shared_ptr<Linear> fc1;
  std::shared_ptr<Dropout> dropout;
  std::shared_ptr<Linear> fc2;

 protected:
  std::string extra_repr() const override;

 private:
  MLPOptions options_;
};

// tokens (B, T) int64 -> token_embedding(tokens) + position_embedding(0 .. T-1): (B, T, D).
// Errors name `op`: tokens not int64 of 2 dims, T longer than the position table.
Tensor embed_with_positions(const Embedding& token_embedding, const Embedding& position_embedding,
                            const Tensor& tokens, const char* op);

// x (B, T, D), key_padding_mask (B, T) bool (true = padding) or undefined -> (B, D): the mean
// over the positions that are not padding (zeros for a row that is all padding).
Tensor masked_mean(const Tensor& x, const Tensor& key_padding_mask);

}  // namespace headgrad::nn
