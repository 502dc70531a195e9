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
// In the common case (no handler at its hook points, head gates, add_bias_kv or
// add_zero_attn) the forward is projections -> the attention op (ops/attention.hpp,
// multihead_attention: the fused kernel on the CPU without dropout, split / attention /
// merge otherwise) -> output projection. Otherwise, from the heads' projections on, it is
// the layer's composed core (src/nn/attention_core.hpp), which runs the hook points
// (nn/hooks.hpp), gates heads and appends keys.
#include "headgrad/nn/multihead_attention.hpp"

#include <cmath>

#include "headgrad/nn/init.hpp"
#include "headgrad/ops/attention.hpp"
#include "headgrad/ops/elementwise.hpp"
#include "headgrad/ops/matmul.hpp"
#include "headgrad/ops/reduce.hpp"
#include "headgrad/ops/shape_ops.hpp"
#include "nn/attention_core.hpp"
#include "nn/attention_inputs.hpp"

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

namespace {

struct Projected {
  HeadColumns q, k, v;  // (N, len, I) column blocks
};

// The input projections. Self-attention on packed weights is one GEMM, as in PyTorch, whose
// (N, L, 3I) output holds q, k and v as column blocks.
Projected project_inputs(const MultiheadAttention& m, const detail::PreparedAttention& p,
                         bool self_attention) {
  const std::int64_t inner = m.inner_dim();
  if (m.options().packed_in_proj() && self_attention) {
    const Tensor qkv = linear(p.query, m.in_proj_weight, m.in_proj_bias);
    return {{qkv, 0}, {qkv, inner}, {qkv, 2 * inner}};
  }
  return {{linear(p.query, m.w_q(), m.b_q()), 0},
          {linear(p.key, m.w_k(), m.b_k()), 0},
          {linear(p.value, m.w_v(), m.b_v()), 0}};
}

// Whether the forward needs the layer's own composed core rather than the attention op:
// a handler watches one of its hook points, head gates are set, or keys are appended.
bool needs_layer_core(const MultiheadAttention& m) {
  return m.attention_points().watched() || m.head_gates().defined() || m.options().add_bias_kv ||
         m.options().add_zero_attn;
}

// projections -> the attention op -> output projection.
AttentionOutput op_forward(const MultiheadAttention& m, const Projected& cols,
                           const detail::PreparedAttention& p, const MultiheadAttentionArgs& args,
                           double dropout_p) {
  HeadAttentionArgs a;
  a.q = cols.q;
  a.k = cols.k;
  a.v = cols.v;
  a.heads = m.num_heads();
  a.head_dim = m.head_dim();
  a.value_head_dim = m.head_dim();
  a.scale = 1.0 / std::sqrt(static_cast<double>(m.head_dim()));
  a.masks = p.masks;
  a.dropout_p = dropout_p;
  a.generator = args.dropout_generator;
  a.need_weights = args.need_weights;
  const HeadAttentionResult r = headgrad::multihead_attention(a);
  return {detail::restore_layout(m.out_proj->forward(r.output), p, m.options().batch_first),
          args.need_weights ? detail::finish_weights(r.weights, args.average_attn_weights, p)
                            : Tensor()};
}

// The composed path's heads: q, k, v as (N, H, len, d), with add_bias_kv's learnt key and
// value and add_zero_attn's zero key and value appended (the masks padded to match).
struct SplitHeads {
  Tensor q, k, v;
  std::vector<AttentionMask> masks;
};
SplitHeads split_heads(const MultiheadAttention& m, const Projected& cols,
                       const detail::PreparedAttention& p) {
  const std::int64_t n = p.batch, l = p.target_len, inner = m.inner_dim(), h = m.num_heads(),
                     d = m.head_dim();
  auto columns = [inner](const HeadColumns& c) {  // each block as (N, len, I)
    return c.offset == 0 && c.tensor.size(2) == inner ? c.tensor
                                                      : narrow(c.tensor, 2, c.offset, inner);
  };
  SplitHeads out{columns(cols.q), columns(cols.k), columns(cols.v), p.masks};
  if (m.options().add_bias_kv) {
    detail::append_bias_kv(out.k, out.v, m.bias_k, m.bias_v);
    out.masks = detail::pad_masks(out.masks, 1);
  }
  const std::int64_t s = out.k.size(1);
  // (N, len, I) -> (N, H, len, d).
  out.q = permute(reshape(out.q, {n, l, h, d}), {0, 2, 1, 3});
  out.k = permute(reshape(out.k, {n, s, h, d}), {0, 2, 1, 3});
  out.v = permute(reshape(out.v, {n, s, h, d}), {0, 2, 1, 3});
  if (m.options().add_zero_attn) {
    detail::append_zero_attn(out.k, out.v, 2);
    out.masks = detail::pad_masks(out.masks, 1);
  }
  return out;
}

AttentionOutput composed_forward(const MultiheadAttention& m, const Projected& cols,
                                 const detail::PreparedAttention& p,
                                 const MultiheadAttentionArgs& args, double dropout_p) {
  const std::int64_t n = p.batch, l = p.target_len, inner = m.inner_dim(), h = m.num_heads(),
                     d = m.head_dim();
  SplitHeads heads = split_heads(m, cols, p);
  detail::AttentionCoreArgs core;
  core.points = &m.attention_points();
  core.q = heads.q;
  core.k = heads.k;
  core.v = heads.v;
  core.masks = std::move(heads.masks);
  core.scale = 1.0 / std::sqrt(static_cast<double>(d));
  core.dropout_p = dropout_p;
  core.generator = args.dropout_generator;
  core.need_weights = args.need_weights;
  if (m.head_gates().defined())
    core.gates = detail::gate_view("MultiheadAttention", m.head_gates(), n, h);
  const Tensor& w_o = m.out_proj->weight;
  // W_o^T (I, E) -> (H, d, E): block h holds columns [h*d, (h+1)*d) of W_o.
  core.w_o_heads = [&] { return reshape(transpose(w_o, 0, 1), {h, d, w_o.size(0)}); };
  core.b_o = m.out_proj->bias;
  // Merge heads (N, H, L, d) -> (N, L, I), then the output projection to (N, L, E).
  core.project = [&](const Tensor& z) {
    return m.out_proj->forward(reshape(permute(z, {0, 2, 1, 3}), {n, l, inner}));
  };
  const detail::AttentionCoreResult r = detail::attention_core(core);
  return {detail::restore_layout(r.output, p, m.options().batch_first),
          args.need_weights ? detail::finish_weights(r.weights, args.average_attn_weights, p)
                            : Tensor()};
}

}  // namespace

AttentionOutput MultiheadAttention::forward(const Tensor& query, const Tensor& key,
                                            const Tensor& value,
                                            const MultiheadAttentionArgs& args) const {
  const char* op = "MultiheadAttention";
  const detail::PreparedAttention p =
      detail::prepare_attention(op, query, key, value, options_, args);
  const DType param_dtype = out_proj->weight.dtype();
  if (p.query.dtype() != param_dtype)
    throw DTypeError(std::string(op) + ": inputs are " + headgrad::to_string(p.query.dtype()) +
                     " but the parameters are " + headgrad::to_string(param_dtype) +
                     " (convert the module with to(dtype))");
  const double dropout_p = is_training() ? options_.dropout : 0.0;
  const bool self_attention = query.impl() == key.impl() && key.impl() == value.impl();
  const Projected cols = project_inputs(*this, p, self_attention);
  if (needs_layer_core(*this)) return composed_forward(*this, cols, p, args, dropout_p);
  return op_forward(*this, cols, p, args, dropout_p);
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
