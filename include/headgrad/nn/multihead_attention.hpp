// nn::MultiheadAttention: torch.nn.MultiheadAttention's options, forward arguments,
// parameter names and shapes, default initialization and results, composed from core
// primitives (no hand-written gradient).
//
// Shapes (E = embed_dim, H = num_heads, d = head_dim() = head_size, or E / H when
// head_size is 0 (PyTorch's rule), I = inner_dim() = H * d, N batch, L target, S source
// length):
//   query (L, N, E)  key (S, N, kdim)  value (S, N, vdim)   (N first when batch_first;
//   unbatched: (L, E), (S, kdim), (S, vdim))
//   attn_mask (L, S) or (N*H, L, S): bool true = blocked, or float added to the scores
//   key_padding_mask (N, S) (unbatched: (S)): bool true = padding (blocked), or float added
//   output like query; weights (N, L, S') averaged over heads, or (N, H, L, S') per head,
//   where S' = S + add_bias_kv + add_zero_attn.
// Parameters (PyTorch's state_dict names):
//   in_proj_weight (3I, E)                                 when kdim == vdim == E
//   q_proj_weight (I, E), k_proj_weight (I, kdim), v_proj_weight (I, vdim)  otherwise
//   in_proj_bias (3I), out_proj.bias (E)                   when bias
//   bias_k, bias_v (1, 1, I)                               when add_bias_kv
//   out_proj.weight (E, I)
// Head h of the query projection is rows [h*d, (h+1)*d) of W_q (the first I rows of
// in_proj_weight), likewise W_k, W_v and their biases; head h of the output projection
// is columns [h*d, (h+1)*d) of out_proj.weight. Scores are scaled by 1/sqrt(d).
//
// head_size decouples the head size from the head count at a fixed E, as Keras's key_dim
// does: with it set, E need not be divisible by H. With head_size 0, I = E and every
// shape, initial value and result is PyTorch's.
//
// Difference from PyTorch 1.13: a query row whose keys are all masked gets zero weights
// and a zero attended value (so its output is out_proj.bias) and zero gradients; PyTorch
// 1.13 returns NaN there.
#pragma once

#include <cstdint>
#include <memory>

#include "headgrad/core/generator.hpp"
#include "headgrad/nn/attention_heads.hpp"
#include "headgrad/nn/attention_options.hpp"
#include "headgrad/nn/hooks.hpp"
#include "headgrad/nn/linear.hpp"
#include "headgrad/nn/module.hpp"

namespace headgrad::nn {

struct AttentionOutput {
  Tensor output;
  Tensor weights;  // undefined unless need_weights
};

// What the fused and the per-head layer share: PyTorch's options, forward arguments and
// results. Models hold an AttentionLayer so either layout can be plugged in (the per-head
// one for per-head research, see nn/attention_head.hpp).
// Every attention layer with PyTorch's forward signature. Its heads are reached through
// AttentionHeads (nn/attention_heads.hpp); its hook points are in nn/hooks.hpp.
class AttentionLayer : public Module, public AttentionHeads {
 public:
  // Declares the layer's hook points q, k, v, scores, pattern, z and result (nn/hooks.hpp).
  explicit AttentionLayer(std::string type_name)
      : Module(std::move(type_name)), points_(AttentionHookPoints::declare(*this)) {}
  virtual AttentionOutput forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                  const MultiheadAttentionArgs& args = {}) const = 0;
  AttentionOutput operator()(const Tensor& query, const Tensor& key, const Tensor& value,
                             const MultiheadAttentionArgs& args = {}) const {
    return forward(query, key, value, args);
  }
  virtual const MultiheadAttentionOptions& options() const = 0;
  std::int64_t head_count() const override { return options().num_heads; }
  std::int64_t head_width() const override { return options().head_dim(); }

  // Head gates (Michel, Levy and Neubig 2019): head h's output z_h is multiplied by
  // gates[h] (shape (H)) or, per example, gates[n, h] (shape (N, H), N the forward's
  // batch) before the output projection. Undefined, the default, means every gate is 1
  // and costs nothing. A gate of 0 ablates its head; gates that require grad give
  // dL/dgate after backward (head importance, inspect/heads.hpp). Gates are not
  // parameters: they are not in the state_dict, and they must have the parameters' dtype.
  // Throws ShapeError / DTypeError naming the layer and the shape.
  void set_head_gates(Tensor gates);
  void clear_head_gates() { head_gates_ = Tensor(); }
  const Tensor& head_gates() const { return head_gates_; }

  // The layer's per-head hook points, which its composed path passes its tensors through.
  const AttentionHookPoints& attention_points() const { return points_; }

 private:
  Tensor head_gates_;
  AttentionHookPoints points_;
};

class MultiheadAttention : public AttentionLayer {
 public:
  // Initializes from `generator` (the default generator when null), drawing in
  // PyTorch's order: out_proj (nn.Linear's init), then the projections and bias_k/bias_v.
  explicit MultiheadAttention(const MultiheadAttentionOptions& options,
                              Generator* generator = nullptr);
  MultiheadAttention(std::int64_t embed_dim, std::int64_t num_heads)
      : MultiheadAttention(MultiheadAttentionOptions(embed_dim, num_heads)) {}

  // Draws every parameter anew as the constructor does: out_proj.weight with nn.Linear's
  // default (kaiming_uniform_, a = sqrt(5)), then PyTorch's _reset_parameters:
  // xavier_uniform_ on in_proj_weight (or on each of q/k/v_proj_weight), zero in_proj_bias
  // and out_proj.bias, xavier_normal_ on bias_k and bias_v.
  void reset_parameters(Generator* generator = nullptr);

  AttentionOutput forward(const Tensor& query, const Tensor& key, const Tensor& value,
                          const MultiheadAttentionArgs& args = {}) const override;
  using AttentionLayer::operator();

  const MultiheadAttentionOptions& options() const override { return options_; }
  std::shared_ptr<Module> clone() const override {
    return cloned(std::make_shared<MultiheadAttention>(options_));
  }
  HeadWeights head_weights(std::int64_t h) const override;
  HeadWeights head_grads(std::int64_t h) const override;
  std::int64_t embed_dim() const { return options_.embed_dim; }
  std::int64_t num_heads() const { return options_.num_heads; }
  std::int64_t head_dim() const { return options_.head_dim(); }
  std::int64_t inner_dim() const { return options_.inner_dim(); }

  // The query, key and value projection weights (I, E), (I, kdim), (I, vdim) whatever
  // the layout: slices of in_proj_weight (differentiable, sharing its gradient) or the
  // separate parameters.
  Tensor w_q() const;
  Tensor w_k() const;
  Tensor w_v() const;
  // Slices of in_proj_bias (I each), undefined without bias.
  Tensor b_q() const;
  Tensor b_k() const;
  Tensor b_v() const;

  Tensor in_proj_weight;             // (3I, E) or undefined
  Tensor q_proj_weight;              // (I, E) or undefined
  Tensor k_proj_weight;              // (I, kdim) or undefined
  Tensor v_proj_weight;              // (I, vdim) or undefined
  Tensor in_proj_bias;               // (3I) or undefined
  Tensor bias_k;                     // (1, 1, I) or undefined
  Tensor bias_v;                     // (1, 1, I) or undefined
  std::shared_ptr<Linear> out_proj;  // I -> E: weight (E, I), bias (E)

 protected:
  std::string extra_repr() const override;

 private:
  void reset_projections(Generator* generator);  // PyTorch's _reset_parameters
  MultiheadAttentionOptions options_;
};

}  // namespace headgrad::nn
