// nn::MultiheadAttention (see nn/multihead_attention.hpp). Composed from primitives; the
// forward follows torch.nn.functional.multi_head_attention_forward step by step:
//
//   q = query W_q^T + b_q   (N, L, I)       one GEMM on in_proj_weight for self-attention
//   k = key   W_k^T + b_k   (N, S, I)       (I = H * d = inner_dim(), E unless head_size)
//   v = value W_v^T + b_v   (N, S, I)
//   add_bias_kv:   k, v get bias_k, bias_v appended as key position S   (masks padded)
//   split heads:   (N, L, I) -> (N, H, L, d)
//   add_zero_attn: k, v get a zero key/value appended                  (masks padded)
//   o = scaled_dot_product_attention(q, k, v, masks)   (N, H, L, d), weights (N, H, L, S')
//   head gates:    o *= gates (N|1, H, 1, 1)                          when set
//   merge heads:   (N, H, L, d) -> (N, L, I);  output = o W_o^T + b_o   (N, L, E)
// From the heads' projections on, the composed path is the shared attention core
// (src/nn/attention_core.hpp): it runs the hook points (nn/hooks.hpp) and reports to an
// attention observer (nn/attention_observer.hpp).
//
// Without dropout, taps, head gates, add_bias_kv or add_zero_attn (the common case), the
// split / attention / merge steps run as one fused op (nn/fused_attention.hpp) that reads
// q, k and v in place from the projections and writes the merged heads directly.
#include "headgrad/nn/multihead_attention.hpp"

#include <cmath>

#include "headgrad/nn/functional.hpp"
#include "headgrad/nn/init.hpp"
#include "headgrad/ops/elementwise.hpp"
#include "headgrad/ops/matmul.hpp"
#include "headgrad/ops/reduce.hpp"
#include "headgrad/ops/shape_ops.hpp"
#include "nn/attention_core.hpp"
#include "nn/attention_inputs.hpp"
#include "nn/fused_attention.hpp"

namespace headgrad::nn {

void MultiheadAttentionOptions::validate(const char* op) const {
  const std::string who = op;
  if (embed_dim <= 0 || num_heads <= 0)
    throw ValueError(who + ": embed_dim and num_heads must be positive, got " +
                     std::to_string(embed_dim) + " and " + std::to_string(num_heads));
  if (head_size < 0)
    throw ValueError(who + ": head_size must be positive (or 0 for embed_dim / num_heads), got " +
                     std::to_string(head_size) + " with embed_dim " + std::to_string(embed_dim) +
                     " and num_heads " + std::to_string(num_heads));
  if (head_size == 0 && embed_dim % num_heads != 0)
    throw ValueError(who + ": embed_dim " + std::to_string(embed_dim) +
                     " must be divisible by num_heads " + std::to_string(num_heads) +
                     " (or set head_size for heads of another width)");
  if (kdim < 0 || vdim < 0)
    throw ValueError(who + ": kdim and vdim must be positive (or 0 for embed_dim), got " +
                     std::to_string(kdim) + " and " + std::to_string(vdim));
  if (!(dropout >= 0.0 && dropout < 1.0))
    throw ValueError(who + ": dropout must be in [0, 1), got " + std::to_string(dropout));
}

void AttentionLayer::set_head_gates(Tensor gates) {
  gates.check_defined("set_head_gates");
  const std::int64_t h = options().num_heads;
  const bool shape_ok = (gates.dim() == 1 && gates.size(0) == h) ||
                        (gates.dim() == 2 && gates.size(1) == h && gates.size(0) > 0);
  if (!shape_ok)
    throw ShapeError(type_name() + "::set_head_gates: expected gates (H) or (N, H) with H = " +
                     std::to_string(h) + ", got " + shape_str(gates.shape()));
  const auto params = parameters();
  if (!params.empty() && gates.dtype() != params.front().dtype())
    throw DTypeError(type_name() + "::set_head_gates: gates are " + gates.describe() +
                     " but the parameters are " + headgrad::to_string(params.front().dtype()));
  head_gates_ = std::move(gates);
}

MultiheadAttention::MultiheadAttention(const MultiheadAttentionOptions& options,
                                       Generator* generator)
    : AttentionLayer("MultiheadAttention"), options_(options) {
  options_.validate("MultiheadAttention");
  const std::int64_t e = options_.embed_dim, i = options_.inner_dim();
  if (options_.packed_in_proj()) {
    in_proj_weight = register_parameter("in_proj_weight", empty({3 * i, e}));
  } else {
    q_proj_weight = register_parameter("q_proj_weight", empty({i, e}));
    k_proj_weight = register_parameter("k_proj_weight", empty({i, options_.key_dim()}));
    v_proj_weight = register_parameter("v_proj_weight", empty({i, options_.value_dim()}));
  }
  if (options_.bias) in_proj_bias = register_parameter("in_proj_bias", empty({3 * i}));
  out_proj = register_module("out_proj", std::make_shared<Linear>(i, e, options_.bias, generator));
  if (options_.add_bias_kv) {
    bias_k = register_parameter("bias_k", empty({1, 1, i}));
    bias_v = register_parameter("bias_v", empty({1, 1, i}));
  }
  reset_projections(generator);
}

void MultiheadAttention::reset_parameters(Generator* generator) {
  out_proj->reset_parameters(generator);
  reset_projections(generator);
}

// PyTorch's _reset_parameters (out_proj.weight keeps nn.Linear's init).
void MultiheadAttention::reset_projections(Generator* generator) {
  if (options_.packed_in_proj()) {
    init::xavier_uniform_(in_proj_weight, 1.0, generator);
  } else {
    init::xavier_uniform_(q_proj_weight, 1.0, generator);
    init::xavier_uniform_(k_proj_weight, 1.0, generator);
    init::xavier_uniform_(v_proj_weight, 1.0, generator);
  }
  if (options_.bias) {
    init::zeros_(in_proj_bias);
    init::zeros_(out_proj->bias);
  }
  if (options_.add_bias_kv) {
    init::xavier_normal_(bias_k, 1.0, generator);
    init::xavier_normal_(bias_v, 1.0, generator);
  }
}

// Row blocks [0, I), [I, 2I), [2I, 3I) of the packed in_proj_weight and in_proj_bias.
Tensor MultiheadAttention::w_q() const {
  return options_.packed_in_proj() ? narrow(in_proj_weight, 0, 0, inner_dim()) : q_proj_weight;
}
Tensor MultiheadAttention::w_k() const {
  return options_.packed_in_proj() ? narrow(in_proj_weight, 0, inner_dim(), inner_dim())
                                   : k_proj_weight;
}
Tensor MultiheadAttention::w_v() const {
  return options_.packed_in_proj() ? narrow(in_proj_weight, 0, 2 * inner_dim(), inner_dim())
                                   : v_proj_weight;
}
Tensor MultiheadAttention::b_q() const {
  return options_.bias ? narrow(in_proj_bias, 0, 0, inner_dim()) : Tensor();
}
Tensor MultiheadAttention::b_k() const {
  return options_.bias ? narrow(in_proj_bias, 0, inner_dim(), inner_dim()) : Tensor();
}
Tensor MultiheadAttention::b_v() const {
  return options_.bias ? narrow(in_proj_bias, 0, 2 * inner_dim(), inner_dim()) : Tensor();
}

AttentionOutput MultiheadAttention::forward(const Tensor& query, const Tensor& key,
                                            const Tensor& value,
                                            const MultiheadAttentionArgs& args) const {
  const char* op = "MultiheadAttention";
  detail::PreparedAttention p = detail::prepare_attention(op, query, key, value, options_, args);
  const DType param_dtype = out_proj->weight.dtype();
  if (p.query.dtype() != param_dtype)
    throw DTypeError(std::string(op) + ": inputs are " + headgrad::to_string(p.query.dtype()) +
                     " but the parameters are " + headgrad::to_string(param_dtype) +
                     " (convert the module with to(dtype))");
  // inner: the width of the projections and of the merged heads, I = H * d (E unless head_size).
  const std::int64_t n = p.batch, l = p.target_len, inner = inner_dim(), h = num_heads(),
                     d = head_dim();

  const double dropout_p = is_training() ? options_.dropout : 0.0;
  const bool self_attention = query.impl() == key.impl() && key.impl() == value.impl();

  // Input projections. Self-attention on packed weights is one GEMM, as in PyTorch, whose
  // (N, L, 3I) output holds q, k and v as column blocks.
  detail::HeadColumns q_cols, k_cols, v_cols;
  if (options_.packed_in_proj() && self_attention) {
    const Tensor qkv = linear(p.query, in_proj_weight, in_proj_bias);
    q_cols = {qkv, 0};
    k_cols = {qkv, inner};
    v_cols = {qkv, 2 * inner};
  } else {
    q_cols = {linear(p.query, w_q(), b_q()), 0};
    k_cols = {linear(p.key, w_k(), b_k()), 0};
    v_cols = {linear(p.value, w_v(), b_v()), 0};
  }

  // The fused core (nn/fused_attention.hpp) reads the column blocks in place and covers
  // every call except those that need the composed path's intermediate tensors or extra
  // steps. It is a CPU kernel: on a GPU the composed path (batched cuBLAS GEMMs and the
  // softmax and mask kernels) runs.
  // Observers and hooks (attention_observer.hpp, hooks.hpp) need the composed path.
  bool fused = p.query.device().is_cpu() && !detail::attention_watched(this) && dropout_p == 0.0 &&
               !head_gates().defined() && !options_.add_bias_kv && !options_.add_zero_attn;
  for (const AttentionMask& m : p.masks) fused = fused && !m.tensor().requires_grad();
  if (fused) {
    detail::FusedAttentionArgs f;
    f.q = q_cols;
    f.k = k_cols;
    f.v = v_cols;
    f.heads = h;
    f.head_dim = d;
    f.value_head_dim = d;
    f.scale = 1.0 / std::sqrt(static_cast<double>(d));
    f.masks = p.masks;
    f.need_weights = args.need_weights;
    const detail::FusedAttentionResult r = detail::fused_multihead_attention(f);
    Tensor output = detail::restore_layout(out_proj->forward(r.output), p, options_.batch_first);
    Tensor weights = args.need_weights
                         ? detail::finish_weights(r.weights, args.average_attn_weights, p)
                         : Tensor();
    return {output, weights};
  }

  // The composed path takes each block as its own (N, len, I) tensor.
  auto columns = [inner](const detail::HeadColumns& c) {
    return c.offset == 0 && c.tensor.size(2) == inner ? c.tensor
                                                      : narrow(c.tensor, 2, c.offset, inner);
  };
  Tensor q = columns(q_cols), k = columns(k_cols), v = columns(v_cols);

  std::vector<AttentionMask> masks = p.masks;
  if (options_.add_bias_kv) {
    k = concat({k, expand(bias_k, {n, 1, inner})}, 1);
    v = concat({v, expand(bias_v, {n, 1, inner})}, 1);
    masks = detail::pad_masks(masks, 1);
  }
  const std::int64_t s = k.size(1);

  // Split heads: (N, len, I) -> (N, H, len, d).
  q = permute(reshape(q, {n, l, h, d}), {0, 2, 1, 3});
  k = permute(reshape(k, {n, s, h, d}), {0, 2, 1, 3});
  v = permute(reshape(v, {n, s, h, d}), {0, 2, 1, 3});
  if (options_.add_zero_attn) {
    k = concat({k, zeros({n, h, 1, d}, k.options())}, 2);
    v = concat({v, zeros({n, h, 1, d}, v.options())}, 2);
    masks = detail::pad_masks(masks, 1);
  }

  detail::AttentionCoreArgs core;
  core.layer = this;
  core.q = q;
  core.k = k;
  core.v = v;
  core.masks = std::move(masks);
  core.scale = 1.0 / std::sqrt(static_cast<double>(d));
  core.dropout_p = dropout_p;
  core.generator = args.dropout_generator;
  core.need_weights = args.need_weights;
  if (head_gates().defined()) core.gates = detail::gate_view(op, head_gates(), n, h);
  // W_o^T (I, E) -> (H, d, E): block h holds columns [h*d, (h+1)*d) of W_o.
  core.w_o_heads = [&] {
    return reshape(transpose(out_proj->weight, 0, 1), {h, d, out_proj->weight.size(0)});
  };
  core.b_o = out_proj->bias;
  // Merge heads (N, H, L, d) -> (N, L, I), then the output projection to (N, L, E).
  core.project = [&](const Tensor& z) {
    return out_proj->forward(reshape(permute(z, {0, 2, 1, 3}), {n, l, inner}));
  };
  const detail::AttentionCoreResult r = detail::attention_core(core);
  Tensor output = detail::restore_layout(r.output, p, options_.batch_first);
  Tensor weights = args.need_weights
                       ? detail::finish_weights(r.weights, args.average_attn_weights, p)
                       : Tensor();
  return {output, weights};
}

std::string MultiheadAttention::extra_repr() const {
  std::string s =
      "embed_dim=" + std::to_string(embed_dim()) + ", num_heads=" + std::to_string(num_heads());
  if (options_.head_size != 0) s += ", head_size=" + std::to_string(options_.head_size);
  if (!options_.packed_in_proj())
    s += ", kdim=" + std::to_string(options_.key_dim()) +
         ", vdim=" + std::to_string(options_.value_dim());
  if (options_.dropout > 0) s += ", dropout=" + std::to_string(options_.dropout);
  if (options_.add_bias_kv) s += ", add_bias_kv=True";
  if (options_.add_zero_attn) s += ", add_zero_attn=True";
  if (options_.batch_first) s += ", batch_first=True";
  return s;
}

}  // namespace headgrad::nn
