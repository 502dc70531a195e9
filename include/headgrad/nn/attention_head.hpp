// Multi-head attention as a composition of single heads, each a module of its own, so a
// head's parameters, gradients and outputs can be read, trained or replaced one by one.
//
// nn::AttentionHead: one head (E = query dim, d = head_dim; batch first):
//   q (N, L, E), k (N, S, kdim), v (N, S, vdim) -> output (N, L, d), weights (N, L, S')
//   q_proj Linear(E -> d), k_proj Linear(kdim -> d), v_proj Linear(vdim -> d)
//   bias_k, bias_v (1, 1, d) when add_bias_kv: appended as one more key/value position at
//   the end of S; add_zero_attn appends a zero key/value after it. S' = S + add_bias_kv +
//   add_zero_attn. Scores are scaled by 1/sqrt(d). Masks broadcast to (N, L, S) and are
//   padded with allowed columns for the appended positions.
//   A standalone head is initialized as nn.Linear (q/k/v_proj) and xavier_normal_ on
//   bias_k/bias_v; inside a HeadwiseMultiheadAttention it gets the fused layer's init.
//
// nn::HeadwiseMultiheadAttention: MultiheadAttention's options, forward arguments and
// results (see multihead_attention.hpp), computed as
//   output = out_proj(concat over h of heads[h](query, key, value) along the feature dim)
// Parameters: heads.<h>.{q,k,v}_proj.{weight,bias}, heads.<h>.bias_k / bias_v,
// out_proj.{weight,bias}. With H heads of d = options.head_dim() (E / H unless head_size
// is set) and I = H * d, head h holds rows [h*d, (h+1)*d) of the fused W_q, W_k, W_v
// (I rows each) and of their biases, and bias_k / bias_v[..., h*d:(h+1)*d]; out_proj
// (I -> E, weight (E, I)) is the fused out_proj (its columns [h*d, (h+1)*d) read head h's
// output).
// from_fused / to_fused copy values along this map.
//
// Initialization: the constructor consumes the default generator exactly as the fused
// constructor does and gives the same values: it builds a fused MultiheadAttention from
// the generator and copies it (the heads' own Linear inits draw from a scratch generator). So each
// head slice of W_q, W_k, W_v is uniform with PyTorch's packed bound sqrt(6 / (E + 3I)) (sqrt(6 /
// (I + in)) per projection when kdim or vdim differ from E), not a per-slice xavier bound.
// reset_parameters(generator) draws what the fused reset_parameters(generator) draws, in the same
// order.
//
// Equality with the fused layer: outputs, weights and gradients agree (to rounding) in
// eval mode or with dropout 0. With dropout > 0 in training mode each head draws its own
// dropout mask, in a different order from the fused layer's single (N, H, L, S') draw, so
// the two layers agree in distribution only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "headgrad/core/generator.hpp"
#include "headgrad/core/options.hpp"
#include "headgrad/nn/attention_mask.hpp"
#include "headgrad/nn/functional.hpp"
#include "headgrad/nn/linear.hpp"
#include "headgrad/nn/module.hpp"
#include "headgrad/nn/multihead_attention.hpp"

namespace headgrad::nn {

struct AttentionHeadOptions {
  std::int64_t embed_dim = 0;  // E, the query's feature dim
  std::int64_t head_dim = 0;   // d
  std::int64_t kdim = 0;       // 0 = embed_dim
  std::int64_t vdim = 0;       // 0 = embed_dim
  bool bias = true;            // biases of q_proj, k_proj, v_proj
  bool add_bias_kv = false;

  AttentionHeadOptions(std::int64_t embed_dim_, std::int64_t head_dim_)
      : embed_dim(embed_dim_), head_dim(head_dim_) {}
  HEADGRAD_WITH(kdim)
  HEADGRAD_WITH(vdim)
  HEADGRAD_WITH(bias)
  HEADGRAD_WITH(add_bias_kv)
  std::int64_t key_dim() const { return kdim == 0 ? embed_dim : kdim; }
  std::int64_t value_dim() const { return vdim == 0 ? embed_dim : vdim; }
};

// AttentionHead::forward's arguments.
struct AttentionHeadArgs {
  // Each broadcasts to (N, L, S), S before the appended bias/zero positions.
  std::vector<AttentionMask> masks;
  bool add_zero_attn = false;
  double dropout_p = 0.0;          // dropout on the weights (applied when > 0)
  Generator* generator = nullptr;  // for dropout; default generator when null
  bool need_weights = true;
  // Also return q, k, v, scores and pattern (functional::AttentionResult's internals).
  bool keep_internals = false;

  AttentionHeadArgs& with_mask(AttentionMask m) {
    masks.push_back(std::move(m));
    return *this;
  }
  HEADGRAD_WITH(add_zero_attn)
  AttentionHeadArgs& with_dropout(double p, Generator* g = nullptr) {
    dropout_p = p;
    generator = g;
    return *this;
  }
  HEADGRAD_WITH(need_weights)
};

class AttentionHead : public Module {
 public:
  // Initializes from `generator` (the default generator when null).
  explicit AttentionHead(const AttentionHeadOptions& options, Generator* generator = nullptr);

  // q (N, L, E), k (N, S, kdim), v (N, S, vdim) -> output (N, L, d), weights (N, L, S')
  // (undefined unless need_weights).
  functional::AttentionResult forward(const Tensor& q, const Tensor& k, const Tensor& v,
                                      const AttentionHeadArgs& args = {}) const;
  // The simple form: one mask (any meaning) broadcasting to (N, L, S).
  functional::AttentionResult forward(const Tensor& q, const Tensor& k, const Tensor& v,
                                      const AttentionMask& mask) const;
  functional::AttentionResult operator()(const Tensor& q, const Tensor& k, const Tensor& v,
                                         const AttentionHeadArgs& args = {}) const {
    return forward(q, k, v, args);
  }

  // The head's projections, with bias_k/bias_v and then (add_zero_attn) a zero appended
  // as key/value positions: q (N, L, d), k and v (N, S + appended, d).
  struct Projections {
    Tensor q, k, v;
    std::int64_t appended = 0;
  };
  Projections project(const Tensor& q, const Tensor& k, const Tensor& v, bool add_zero_attn) const;

  const AttentionHeadOptions& options() const { return options_; }
  std::shared_ptr<Module> clone() const override {
    return cloned(std::make_shared<AttentionHead>(options_));
  }
  std::int64_t head_dim() const { return options_.head_dim; }

  std::shared_ptr<Linear> q_proj;  // (d, E)
  std::shared_ptr<Linear> k_proj;  // (d, kdim)
  std::shared_ptr<Linear> v_proj;  // (d, vdim)
  Tensor bias_k;                   // (1, 1, d) or undefined
  Tensor bias_v;                   // (1, 1, d) or undefined

 protected:
  std::string extra_repr() const override;

 private:
  AttentionHeadOptions options_;
};

class HeadwiseMultiheadAttention : public AttentionLayer {
 public:
  // Initializes from `generator` (the default generator when null) with exactly the values
  // MultiheadAttention(options, generator) would get.
  explicit HeadwiseMultiheadAttention(const MultiheadAttentionOptions& options,
                                      Generator* generator = nullptr);
  HeadwiseMultiheadAttention(std::int64_t embed_dim, std::int64_t num_heads)
      : HeadwiseMultiheadAttention(MultiheadAttentionOptions(embed_dim, num_heads)) {}

  // What MultiheadAttention::reset_parameters(generator) draws, mapped to the heads.
  void reset_parameters(Generator* generator = nullptr);

  // MultiheadAttention::forward's shapes, arguments and results (see
  // multihead_attention.hpp); errors name HeadwiseMultiheadAttention.
  AttentionOutput forward(const Tensor& query, const Tensor& key, const Tensor& value,
                          const MultiheadAttentionArgs& args = {}) const override;
  using AttentionLayer::operator();

  // Value copies (no graph), keeping dtype and training mode; neither touches the default
  // generator.
  static std::shared_ptr<HeadwiseMultiheadAttention> from_fused(const MultiheadAttention& fused);
  std::shared_ptr<MultiheadAttention> to_fused() const;

  const MultiheadAttentionOptions& options() const override { return options_; }
  std::shared_ptr<Module> clone() const override {
    return cloned(std::make_shared<HeadwiseMultiheadAttention>(options_));
  }
  HeadWeights head_weights(std::int64_t h) const override;
  HeadWeights head_grads(std::int64_t h) const override;
  std::int64_t embed_dim() const { return options_.embed_dim; }
  std::int64_t num_heads() const { return options_.num_heads; }
  std::int64_t head_dim() const { return options_.head_dim(); }

  std::shared_ptr<ModuleList<AttentionHead>> heads;
  std::shared_ptr<Linear> out_proj;  // I -> E: weight (E, I)

 protected:
  std::string extra_repr() const override;

 private:
  struct Uninitialized {};
  // Builds the submodules without changing the default generator (values unspecified).
  HeadwiseMultiheadAttention(const MultiheadAttentionOptions& options, Uninitialized);
  // Copies every value of `fused` (same options) into this layer, converting dtype.
  void copy_from(const MultiheadAttention& fused);

  MultiheadAttentionOptions options_;
};

}  // namespace headgrad::nn
