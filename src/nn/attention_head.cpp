// nn::AttentionHead and nn::HeadwiseMultiheadAttention (see nn/attention_head.hpp): one
// head is three Linears and scaled_dot_product_attention; the multi-head layer runs its
// heads on the inputs that detail::prepare_attention normalizes (batch first, (N, L, E))
// and projects the concatenated head outputs (N, L, I), I = H*d, with out_proj (I -> E).
#include "headgrad/nn/attention_head.hpp"

#include <cmath>
#include <string>

#include "headgrad/autograd/grad_mode.hpp"
#include "headgrad/core/error.hpp"
#include "headgrad/nn/init.hpp"
#include "headgrad/ops/elementwise.hpp"
#include "headgrad/ops/matmul.hpp"
#include "headgrad/ops/shape_ops.hpp"
#include "nn/attention_core.hpp"
#include "nn/attention_inputs.hpp"

namespace headgrad::nn {

namespace {

constexpr const char* kHeadwise = "HeadwiseMultiheadAttention";

std::string bool_str(bool b) { return b ? "True" : "False"; }

// Head h's block [h*d, (h+1)*d) of `t` along `dim`.
Tensor head_block(const Tensor& t, std::int64_t dim, std::int64_t h, std::int64_t d) {
  return narrow(t, dim, h * d, d);
}

// Watched at a hook point: the heads' projections stacked to (N, H, ., d), then the
// shared composed core (src/nn/attention_core.hpp) as MultiheadAttention runs it.
detail::AttentionCoreResult watched_forward(const HeadwiseMultiheadAttention& layer,
                                            const detail::PreparedAttention& prepared,
                                            const MultiheadAttentionArgs& args,
                                            const Tensor& gates) {
  const MultiheadAttentionOptions& o = layer.options();
  const Linear& out_proj = *layer.out_proj;
  const std::int64_t n = prepared.batch, l = prepared.target_len, h = o.num_heads, d = o.head_dim();
  std::vector<Tensor> q, k, v;
  std::int64_t appended = 0;
  for (const auto& head : *layer.heads) {
    AttentionHead::Projections p =
        head->project(prepared.query, prepared.key, prepared.value, o.add_zero_attn);
    q.push_back(p.q);
    k.push_back(p.k);
    v.push_back(p.v);
    appended = p.appended;
  }
  detail::AttentionCoreArgs core;
  core.points = &layer.attention_points();
  core.q = stack(q, 1);
  core.k = stack(k, 1);
  core.v = stack(v, 1);
  core.masks = appended > 0 ? detail::pad_masks(prepared.masks, appended) : prepared.masks;
  core.scale = 1.0 / std::sqrt(static_cast<double>(d));
  core.dropout_p = layer.is_training() ? o.dropout : 0.0;
  core.generator = args.dropout_generator;
  core.need_weights = args.need_weights;
  core.gates = gates;
  core.w_o_heads = [&] {
    return reshape(transpose(out_proj.weight, 0, 1), {h, d, out_proj.weight.size(0)});
  };
  core.b_o = out_proj.bias;
  core.project = [&](const Tensor& z) {
    return out_proj.forward(reshape(permute(z, {0, 2, 1, 3}), {n, l, h * d}));
  };
  return detail::attention_core(core);
}

}  // namespace

// --- AttentionHead ------------------------------------------------------------------

AttentionHead::AttentionHead(const AttentionHeadOptions& options, Generator* generator)
    : Module("AttentionHead"), options_(options) {
  const auto& o = options_;
  if (o.embed_dim <= 0 || o.head_dim <= 0 || o.kdim < 0 || o.vdim < 0)
    throw ValueError("AttentionHead: embed_dim and head_dim must be positive and kdim, vdim " +
                     std::string("non-negative, got embed_dim=") + std::to_string(o.embed_dim) +
                     ", head_dim=" + std::to_string(o.head_dim) +
                     ", kdim=" + std::to_string(o.kdim) + ", vdim=" + std::to_string(o.vdim));
  const std::int64_t d = o.head_dim;
  q_proj = register_module(
      "q_proj",
      std::make_shared<Linear>(LinearOptions(o.embed_dim, d).with_bias(o.bias), generator));
  k_proj = register_module(
      "k_proj",
      std::make_shared<Linear>(LinearOptions(o.key_dim(), d).with_bias(o.bias), generator));
  v_proj = register_module(
      "v_proj",
      std::make_shared<Linear>(LinearOptions(o.value_dim(), d).with_bias(o.bias), generator));
  if (o.add_bias_kv) {
    bias_k = register_parameter("bias_k", empty({1, 1, d}));
    bias_v = register_parameter("bias_v", empty({1, 1, d}));
    init::xavier_normal_(bias_k, 1.0, generator);
    init::xavier_normal_(bias_v, 1.0, generator);
  }
}

functional::AttentionResult AttentionHead::forward(const Tensor& q, const Tensor& k,
                                                   const Tensor& v,
                                                   const AttentionHeadArgs& args) const {
  q.check_defined("AttentionHead");
  k.check_defined("AttentionHead");
  v.check_defined("AttentionHead");
  const auto& o = options_;
  const bool ranks_ok = q.dim() == 3 && k.dim() == 3 && v.dim() == 3;
  if (!ranks_ok || q.size(2) != o.embed_dim || k.size(2) != o.key_dim() ||
      v.size(2) != o.value_dim() || k.size(0) != q.size(0) || v.size(0) != q.size(0) ||
      v.size(1) != k.size(1))
    throw ShapeError("AttentionHead: expected q (N, L, " + std::to_string(o.embed_dim) +
                     "), k (N, S, " + std::to_string(o.key_dim()) + "), v (N, S, " +
                     std::to_string(o.value_dim()) + "), got q " + shape_str(q.shape()) + ", k " +
                     shape_str(k.shape()) + ", v " + shape_str(v.shape()));
  const Projections p = project(q, k, v, args.add_zero_attn);
  functional::AttentionOptions attention;
  attention.masks = p.appended > 0 ? detail::pad_masks(args.masks, p.appended) : args.masks;
  attention.scale = 1.0 / std::sqrt(static_cast<double>(o.head_dim));
  attention.dropout_p = args.dropout_p;
  attention.generator = args.generator;
  attention.need_weights = args.need_weights;
  attention.keep_internals = args.keep_internals;
  return functional::scaled_dot_product_attention(p.q, p.k, p.v, attention);
}

AttentionHead::Projections AttentionHead::project(const Tensor& q, const Tensor& k, const Tensor& v,
                                                  bool add_zero_attn) const {
  Projections p;
  p.q = q_proj->forward(q);  // (N, L, d)
  p.k = k_proj->forward(k);  // (N, S, d)
  p.v = v_proj->forward(v);  // (N, S, d)
  if (bias_k.defined()) {    // one more key/value position: (N, S+1, d)
    detail::append_bias_kv(p.k, p.v, bias_k, bias_v);
    ++p.appended;
  }
  if (add_zero_attn) {  // a zero key/value after it
    detail::append_zero_attn(p.k, p.v, 1);
    ++p.appended;
  }
  return p;
}

functional::AttentionResult AttentionHead::forward(const Tensor& q, const Tensor& k,
                                                   const Tensor& v,
                                                   const AttentionMask& mask) const {
  return forward(q, k, v, AttentionHeadArgs().with_mask(mask));
}

std::string AttentionHead::extra_repr() const {
  const auto& o = options_;
  return "embed_dim=" + std::to_string(o.embed_dim) + ", head_dim=" + std::to_string(o.head_dim) +
         ", kdim=" + std::to_string(o.key_dim()) + ", vdim=" + std::to_string(o.value_dim()) +
         ", bias=" + bool_str(o.bias) + ", add_bias_kv=" + bool_str(o.add_bias_kv);
}

// --- HeadwiseMultiheadAttention -------------------------------------------------------

HeadwiseMultiheadAttention::HeadwiseMultiheadAttention(const MultiheadAttentionOptions& options,
                                                       Uninitialized)
    : AttentionLayer(kHeadwise), options_(options) {
  options_.validate(kHeadwise);
  const auto& o = options_;
  Generator scratch;  // the heads' own inits are overwritten by the caller
  heads = register_module("heads", std::make_shared<ModuleList<AttentionHead>>());
  for (std::int64_t h = 0; h < o.num_heads; ++h)
    heads->push_back(std::make_shared<AttentionHead>(AttentionHeadOptions(o.embed_dim, o.head_dim())
                                                         .with_kdim(o.key_dim())
                                                         .with_vdim(o.value_dim())
                                                         .with_bias(o.bias)
                                                         .with_add_bias_kv(o.add_bias_kv),
                                                     &scratch));
  out_proj = register_module(
      "out_proj", std::make_shared<Linear>(
                      LinearOptions(o.inner_dim(), o.embed_dim).with_bias(o.bias), &scratch));
}

// The fused constructor's draws from the default generator, mapped onto the heads.
HeadwiseMultiheadAttention::HeadwiseMultiheadAttention(const MultiheadAttentionOptions& options,
                                                       Generator* generator)
    : HeadwiseMultiheadAttention(options, Uninitialized{}) {
  const auto fused = std::make_shared<MultiheadAttention>(options_, generator);
  copy_from(*fused);
}

void HeadwiseMultiheadAttention::copy_from(const MultiheadAttention& fused) {
  NoGradGuard no_grad;
  const auto& o = options_;
  const std::int64_t d = o.head_dim();
  const Tensor w_q = fused.w_q(), w_k = fused.w_k(), w_v = fused.w_v();  // (I, E|kdim|vdim)
  const Tensor b_q = fused.b_q(), b_k = fused.b_k(), b_v = fused.b_v();  // (I) or undefined
  for (std::int64_t h = 0; h < o.num_heads; ++h) {
    AttentionHead& head = *(*heads)[static_cast<std::size_t>(h)];
    head.q_proj->weight.copy_(head_block(w_q, 0, h, d));
    head.k_proj->weight.copy_(head_block(w_k, 0, h, d));
    head.v_proj->weight.copy_(head_block(w_v, 0, h, d));
    if (o.bias) {
      head.q_proj->bias.copy_(head_block(b_q, 0, h, d));
      head.k_proj->bias.copy_(head_block(b_k, 0, h, d));
      head.v_proj->bias.copy_(head_block(b_v, 0, h, d));
    }
    if (o.add_bias_kv) {
      head.bias_k.copy_(head_block(fused.bias_k, 2, h, d));
      head.bias_v.copy_(head_block(fused.bias_v, 2, h, d));
    }
  }
  out_proj->weight.copy_(fused.out_proj->weight);
  if (o.bias) out_proj->bias.copy_(fused.out_proj->bias);
}

std::shared_ptr<HeadwiseMultiheadAttention> HeadwiseMultiheadAttention::from_fused(
    const MultiheadAttention& fused) {
  std::shared_ptr<HeadwiseMultiheadAttention> headwise(
      new HeadwiseMultiheadAttention(fused.options(), Uninitialized{}));
  headwise->to(fused.out_proj->weight.dtype());
  headwise->copy_from(fused);
  headwise->train(fused.is_training());
  return headwise;
}

std::shared_ptr<MultiheadAttention> HeadwiseMultiheadAttention::to_fused() const {
  Generator scratch;  // every value is overwritten below
  auto fused = std::make_shared<MultiheadAttention>(options_, &scratch);
  fused->to(out_proj->weight.dtype());
  NoGradGuard no_grad;
  const auto& o = options_;
  std::vector<Tensor> w_q, w_k, w_v, b_q, b_k, b_v, bias_k, bias_v;
  for (const auto& head : *heads) {
    w_q.push_back(head->q_proj->weight);
    w_k.push_back(head->k_proj->weight);
    w_v.push_back(head->v_proj->weight);
    if (o.bias) {
      b_q.push_back(head->q_proj->bias);
      b_k.push_back(head->k_proj->bias);
      b_v.push_back(head->v_proj->bias);
    }
    if (o.add_bias_kv) {
      bias_k.push_back(head->bias_k);
      bias_v.push_back(head->bias_v);
    }
  }
  // Heads stack as row blocks: (H*d, in) = (I, in).
  if (o.packed_in_proj()) {
    fused->in_proj_weight.copy_(concat({concat(w_q, 0), concat(w_k, 0), concat(w_v, 0)}, 0));
  } else {
    fused->q_proj_weight.copy_(concat(w_q, 0));
    fused->k_proj_weight.copy_(concat(w_k, 0));
    fused->v_proj_weight.copy_(concat(w_v, 0));
  }
  if (o.bias)
    fused->in_proj_bias.copy_(concat({concat(b_q, 0), concat(b_k, 0), concat(b_v, 0)}, 0));
  if (o.add_bias_kv) {
    fused->bias_k.copy_(concat(bias_k, 2));
    fused->bias_v.copy_(concat(bias_v, 2));
  }
  fused->out_proj->weight.copy_(out_proj->weight);
  if (o.bias) fused->out_proj->bias.copy_(out_proj->bias);
  fused->train(is_training());
  return fused;
}

// A fused copy of the current values is reset (so whatever the fused reset leaves alone
// stays as it was here) and copied back.
void HeadwiseMultiheadAttention::reset_parameters(Generator* generator) {
  const auto fused = to_fused();
  fused->reset_parameters(generator);
  copy_from(*fused);
}

AttentionOutput HeadwiseMultiheadAttention::forward(const Tensor& query, const Tensor& key,
                                                    const Tensor& value,
                                                    const MultiheadAttentionArgs& args) const {
  const detail::PreparedAttention prepared =
      detail::prepare_attention(kHeadwise, query, key, value, options_, args);
  if (query.dtype() != out_proj->weight.dtype())
    throw DTypeError(std::string(kHeadwise) + ": inputs " + query.describe() + " and parameters " +
                     out_proj->weight.describe() + " differ in dtype");

  const std::int64_t n = prepared.batch, num_heads = options_.num_heads;
  const Tensor gates = detail::gate_view(kHeadwise, head_gates(), n, num_heads);  // (N|1, H, 1, 1)
  AttentionOutput result;
  if (attention_points().watched()) {
    const detail::AttentionCoreResult r = watched_forward(*this, prepared, args, gates);
    result.output = detail::restore_layout(r.output, prepared, options_.batch_first);
    if (args.need_weights)
      result.weights = detail::finish_weights(r.weights, args.average_attn_weights, prepared);
    return result;
  }

  AttentionHeadArgs head_args;
  head_args.add_zero_attn = options_.add_zero_attn;
  head_args.dropout_p = is_training() ? options_.dropout : 0.0;
  head_args.generator = args.dropout_generator;
  head_args.need_weights = args.need_weights;
  std::vector<Tensor> outputs, weights;  // H of (N, L, d) and of (N, L, S')
  for (std::int64_t h = 0; h < num_heads; ++h) {
    head_args.masks = detail::head_masks(prepared.masks, h);
    functional::AttentionResult r = (*heads)[static_cast<std::size_t>(h)]->forward(
        prepared.query, prepared.key, prepared.value, head_args);
    Tensor z = r.output;  // (N, L, d), times its gate (N|1, 1, 1)
    if (gates.defined()) z = mul(z, reshape(narrow(gates, 1, h, 1), {gates.size(0), 1, 1}));
    outputs.push_back(z);
    if (args.need_weights) weights.push_back(r.weights);
  }
  // Head h in columns [h*d, (h+1)*d) of the concatenation (N, L, I).
  result.output =
      detail::restore_layout(out_proj->forward(concat(outputs, 2)), prepared, options_.batch_first);
  if (args.need_weights)
    result.weights = detail::finish_weights(stack(weights, 1), args.average_attn_weights, prepared);
  return result;
}

std::string HeadwiseMultiheadAttention::extra_repr() const {
  const auto& o = options_;
  return "embed_dim=" + std::to_string(o.embed_dim) + ", num_heads=" + std::to_string(o.num_heads) +
         ", head_dim=" + std::to_string(o.head_dim()) + ", dropout=" + std::to_string(o.dropout) +
         ", kdim=" + std::to_string(o.key_dim()) + ", vdim=" + std::to_string(o.value_dim()) +
         ", bias=" + bool_str(o.bias) + ", add_bias_kv=" + bool_str(o.add_bias_kv) +
         ", add_zero_attn=" + bool_str(o.add_zero_attn) +
         ", batch_first=" + bool_str(o.batch_first);
}

}  // namespace headgrad::nn
