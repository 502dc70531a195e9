// nn::KerasMultiHeadAttention: keras.layers.MultiHeadAttention's options, call arguments,
// sublayer names, weight layouts, default initialization and results, composed from core
// primitives (no hand-written gradient), with weight conversion to and from
// nn::MultiheadAttention (PyTorch's layout).
//
// Shapes (B batch, T target length, S source length, H = num_heads, kd = key_dim,
// vd = value_dim, Fq/Fk/Fv the query/key/value feature sizes, O = output_shape):
//   query (B, T, Fq)  value (B, S, Fv)  key (B, S, Fk), key = value when undefined
//   attention_mask (B, T, S), or (T, S) / any shape broadcasting to (B, T, S):
//     bool or numeric, true / nonzero = MAY attend (Keras' convention, the opposite of
//     PyTorch's attn_mask; see keras_mask_from_torch)
//   output (B, T, O); weights (B, H, T, S) per head, BEFORE dropout (as Keras returns them)
// Parameters (Keras' sublayer and weight names, EinsumDense layouts):
//   query.kernel (Fq, H, kd)   query.bias (H, kd)
//   key.kernel   (Fk, H, kd)   key.bias   (H, kd)
//   value.kernel (Fv, H, vd)   value.bias (H, vd)
//   attention_output.kernel (H, vd, O)   attention_output.bias (O)
//   (biases only with use_bias)
// Computation, per head h:
//   q_h = query . query.kernel[:, h, :] + query.bias[h]   (B, T, kd), likewise k_h, v_h
//   w_h = softmax(q_h k_h^T / sqrt(kd) restricted to the allowed keys)   (B, T, S)
//   output = sum_h (dropout(w_h) v_h) . attention_output.kernel[h] + attention_output.bias
// use_causal_mask allows key j for query i only when j <= i (top-left aligned, Keras'
// band_part); it combines with attention_mask by logical AND of the allowed sets.
//
// Initialization (Keras defaults): every kernel glorot_uniform with Keras' fans (the
// last two dims are fan_in/fan_out, the leading dims multiply both: keras'
// compute_fans), biases zeros. So query.kernel (Fq, H, kd) has fan_in = Fq*H,
// fan_out = Fq*kd and bound sqrt(6 / (Fq * (H + kd))); attention_output.kernel (H, vd, O)
// has bound sqrt(6 / (H * (vd + O))).
//
// Difference from Keras: a query row whose keys are all blocked gets zero weights, a zero
// attended value (so its output is attention_output.bias) and zero gradients. Keras adds
// -1e9 to blocked scores instead, so such a row still gets nonzero weights (in float32 the
// -1e9 swamps the scores and the weights are uniform over the keys).
//
// Conversion with nn::MultiheadAttention (E = embed_dim, d = head_dim() = key_dim,
// I = H * d; Keras's key_dim is MultiheadAttention's head_size, left 0 when d = E / H),
// both scaling by 1/sqrt(d):
//   query.kernel[:, h, j] = W_q[h*d + j, :]   (query.kernel = W_q^T reshaped (E, H, d)),
//   likewise key (kdim, H, d) and value (vdim, H, d);
//   query.bias = b_q reshaped (H, d), likewise key and value;
//   attention_output.kernel[h, j, e] = W_o[e, h*d + j]   (W_o (E, I), W_o^T reshaped (H, d, E));
//   attention_output.bias = out_proj.bias.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "headgrad/core/generator.hpp"
#include "headgrad/core/options.hpp"
#include "headgrad/core/tensor.hpp"
#include "headgrad/nn/attention_heads.hpp"
#include "headgrad/nn/hooks.hpp"
#include "headgrad/nn/module.hpp"
#include "headgrad/nn/multihead_attention.hpp"

namespace headgrad::nn {

struct KerasMultiHeadAttentionOptions {
  std::int64_t num_heads = 1;
  std::int64_t key_dim = 0;         // per-head size of query and key (need not be Fq / H)
  std::int64_t value_dim = 0;       // per-head size of value; 0 = key_dim
  std::int64_t query_features = 0;  // last dim of the query input (required)
  std::int64_t value_features = 0;  // last dim of the value input; 0 = query_features
  std::int64_t key_features = 0;    // last dim of the key input; 0 = value_features
  std::int64_t output_shape = 0;    // last dim of the output; 0 = query_features
  bool use_bias = true;
  double dropout = 0.0;  // on the attention weights, in training

  KerasMultiHeadAttentionOptions(std::int64_t num_heads_, std::int64_t key_dim_,
                                 std::int64_t query_features_)
      : num_heads(num_heads_), key_dim(key_dim_), query_features(query_features_) {}
  HEADGRAD_WITH(value_dim)
  HEADGRAD_WITH(value_features)
  HEADGRAD_WITH(key_features)
  HEADGRAD_WITH(output_shape)
  HEADGRAD_WITH(use_bias)
  HEADGRAD_WITH(dropout)

  // The sizes with the defaults resolved.
  std::int64_t resolved_value_dim() const { return value_dim == 0 ? key_dim : value_dim; }
  std::int64_t resolved_value_features() const {
    return value_features == 0 ? query_features : value_features;
  }
  std::int64_t resolved_key_features() const {
    return key_features == 0 ? resolved_value_features() : key_features;
  }
  std::int64_t resolved_output_shape() const {
    return output_shape == 0 ? query_features : output_shape;
  }
  // Throws ValueError naming KerasMultiHeadAttention when the options are inconsistent.
  void validate() const;
};

// call()'s keyword arguments, with Keras' defaults.
struct KerasAttentionArgs {
  Tensor attention_mask;  // undefined = none; true / nonzero = may attend
  bool use_causal_mask = false;
  bool return_attention_scores = false;
  // Dropout on; unset = the module's training mode (is_training()).
  std::optional<bool> training;
  Generator* dropout_generator = nullptr;  // default generator when null

  HEADGRAD_WITH(attention_mask)
  HEADGRAD_WITH(use_causal_mask)
  HEADGRAD_WITH(return_attention_scores)
  KerasAttentionArgs& with_training(bool b) {
    training = b;
    return *this;
  }
  HEADGRAD_WITH(dropout_generator)
};

// Keras' EinsumDense as MultiHeadAttention uses it: the last `contracted_dims` dims of
// the input are contracted with the leading dims of `kernel`, the kernel's remaining dims
// are appended, and `bias` (shaped like those remaining dims) is added:
//   x (*, in_dims...) -> (*, out_dims...), kernel (in_dims..., out_dims...).
class KerasEinsumDense : public Module {
 public:
  KerasEinsumDense(Shape kernel_shape, std::int64_t contracted_dims, bool use_bias);

  // glorot_uniform (Keras' fans) on the kernel, zeros on the bias.
  void reset_parameters(Generator* generator = nullptr);
  Tensor forward(const Tensor& x) const;
  Tensor operator()(const Tensor& x) const { return forward(x); }

  Tensor kernel;  // (in_dims..., out_dims...)
  Tensor bias;    // (out_dims...), undefined without use_bias

 protected:
  std::string extra_repr() const override;

 private:
  std::int64_t contracted_dims_;
};

class KerasMultiHeadAttention : public Module, public AttentionHeads {
 public:
  // Initializes from `generator` (the default generator when null).
  explicit KerasMultiHeadAttention(const KerasMultiHeadAttentionOptions& options,
                                   Generator* generator = nullptr);

  // glorot_uniform (Keras' fans) on every kernel, zeros on every bias.
  void reset_parameters(Generator* generator = nullptr);

  // Keras' argument order: query, value, then key (key = value when undefined).
  AttentionOutput forward(const Tensor& query, const Tensor& value, const Tensor& key = Tensor(),
                          const KerasAttentionArgs& args = {}) const;
  AttentionOutput operator()(const Tensor& query, const Tensor& value, const Tensor& key = Tensor(),
                             const KerasAttentionArgs& args = {}) const {
    return forward(query, value, key, args);
  }

  // A KerasMultiHeadAttention computing the same function as `mha` (values copied, dtype
  // and training mode kept). Throws ValueError when `mha` uses add_bias_kv or
  // add_zero_attn, which Keras has no counterpart for.
  static std::shared_ptr<KerasMultiHeadAttention> from_torch(const MultiheadAttention& mha);
  // The MultiheadAttention computing the same function (values copied, dtype, dropout and
  // training mode kept), with head_size = key_dim unless num_heads * key_dim ==
  // query_features. Requires key_dim == value_dim and output_shape == query_features;
  // throws ValueError naming the condition that fails otherwise.
  std::shared_ptr<MultiheadAttention> to_torch(bool batch_first = true) const;

  const KerasMultiHeadAttentionOptions& options() const { return options_; }
  std::shared_ptr<Module> clone() const override {
    return cloned(std::make_shared<KerasMultiHeadAttention>(options_));
  }
  // Head h: slices [:, h, :] of the query/key/value kernels (transposed to (d, features)),
  // row h of their biases, and [h] of the output kernel (transposed to (O, vd)).
  std::int64_t head_count() const override { return options_.num_heads; }
  std::int64_t head_width() const override { return options_.key_dim; }
  HeadWeights head_weights(std::int64_t h) const override;
  HeadWeights head_grads(std::int64_t h) const override;
  std::int64_t num_heads() const { return options_.num_heads; }
  std::int64_t key_dim() const { return options_.key_dim; }
  std::int64_t value_dim() const { return options_.resolved_value_dim(); }
  std::int64_t output_shape() const { return options_.resolved_output_shape(); }

  std::shared_ptr<KerasEinsumDense> query_dense;             // "query"
  std::shared_ptr<KerasEinsumDense> key_dense;               // "key"
  std::shared_ptr<KerasEinsumDense> value_dense;             // "value"
  std::shared_ptr<KerasEinsumDense> attention_output_dense;  // "attention_output"

  // The layer's per-head hook points (nn/hooks.hpp), as an AttentionLayer's.
  const AttentionHookPoints& attention_points() const { return points_; }

 protected:
  std::string extra_repr() const override;

 private:
  KerasMultiHeadAttentionOptions options_;
  AttentionHookPoints points_;
};

// Mask conversion: PyTorch's blocked_where_true bool mask -> Keras' attend mask, and back
// (logical_not; the shapes are kept, so a (T, S) attn_mask gives a (T, S) Keras mask).
// A numeric Keras mask is read as nonzero = attend.
Tensor keras_mask_from_torch(const Tensor& blocked);
Tensor torch_mask_from_keras(const Tensor& attend);

}  // namespace headgrad::nn
