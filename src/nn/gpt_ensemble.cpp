// nn::GPTEnsemble (see nn/gpt_ensemble.hpp): GPT::forward with every op grouped over the
// leading model axis.
#include "headgrad/nn/gpt_ensemble.hpp"

#include <cmath>

#include "headgrad/autograd/grad_mode.hpp"
#include "headgrad/ops/attention.hpp"
#include "headgrad/ops/elementwise.hpp"
#include "headgrad/ops/index.hpp"
#include "headgrad/ops/mask.hpp"
#include "headgrad/ops/matmul.hpp"
#include "headgrad/ops/norm.hpp"
#include "headgrad/ops/shape_ops.hpp"

namespace headgrad::nn {

namespace {

constexpr const char* kOp = "GPTEnsemble";

std::string member_str(std::size_t k) { return "member " + std::to_string(k); }

void check_supported(const GPTOptions& o) {
  std::string why;
  if (!o.norm_first) why = "norm_first is false";
  if (o.dropout != 0.0) why = "dropout is " + std::to_string(o.dropout);
  if (o.per_head) why = "per_head is true";
  if (!why.empty())
    throw ValueError(std::string(kOp) + ": " + why +
                     "; an ensemble supports the GPT family with norm_first, no dropout and "
                     "packed attention (per_head false)");
}

bool same_options(const GPTOptions& a, const GPTOptions& b) {
  return a.vocab_size == b.vocab_size && a.max_len == b.max_len && a.d_model == b.d_model &&
         a.nhead == b.nhead && a.num_layers == b.num_layers &&
         a.dim_feedforward == b.dim_feedforward && a.dropout == b.dropout &&
         a.activation == b.activation && a.layer_norm_eps == b.layer_norm_eps &&
         a.norm_first == b.norm_first && a.bias == b.bias && a.per_head == b.per_head &&
         a.head_dim == b.head_dim && a.input_dim == b.input_dim && a.causal == b.causal &&
         a.positions == b.positions;
}

// The child of `parent` called `name`, made (a plain Module) if it is not there yet.
std::shared_ptr<Module> child(Module& parent, const std::string& name) {
  for (auto& [n, m] : parent.named_children())
    if (n == name) return m;
  auto made = std::make_shared<Module>("GPTEnsemble.part");
  parent.add_module(name, made);
  return made;
}

// Registers `tensor` under the dotted `name`, making the intermediate modules.
void add_dotted(Module& root, const std::string& name, const Tensor& tensor) {
  Module* at = &root;
  std::size_t start = 0;
  std::shared_ptr<Module> keep_alive;
  for (std::size_t dot = name.find('.'); dot != std::string::npos;
       start = dot + 1, dot = name.find('.', start)) {
    keep_alive = child(*at, name.substr(start, dot - start));
    at = keep_alive.get();
  }
  at->add_parameter(name.substr(start), tensor);
}

// Token ids of member k moved to rows k * rows_per_member + id of the stacked table. Ids
// outside [0, rows_per_member) are refused (they would read another member's rows). The
// ids are checked and moved on the CPU (a GPU's are read back: K * B * T integers).
Tensor offset_ids(const Tensor& ids, std::int64_t rows_per_member, const char* what) {
  const std::int64_t k_count = ids.size(0);
  const std::int64_t per = k_count == 0 ? 0 : ids.numel() / k_count;
  std::vector<std::int64_t> v = ids.to(Device::cpu()).to_vector<std::int64_t>();
  for (std::int64_t k = 0; k < k_count; ++k)
    for (std::int64_t i = 0; i < per; ++i) {
      std::int64_t& id = v[static_cast<std::size_t>(k * per + i)];
      if (id < 0 || id >= rows_per_member)
        throw IndexError(std::string(kOp) + ": " + what + " id " + std::to_string(id) + " of " +
                         member_str(static_cast<std::size_t>(k)) + " is out of range [0, " +
                         std::to_string(rows_per_member) + ")");
      id += k * rows_per_member;
    }
  return from_vector<std::int64_t>(v, ids.shape()).to(ids.device());
}

}  // namespace

GPTEnsemble::GPTEnsemble(const std::vector<const GPT*>& members) : Module(kOp) {
  if (members.empty())
    throw ValueError(std::string(kOp) + ": needs at least one member GPT, got none");
  for (std::size_t k = 0; k < members.size(); ++k)
    if (members[k] == nullptr)
      throw ValueError(std::string(kOp) + ": " + member_str(k) + " is null");
  options_ = members[0]->options();
  check_supported(options_);
  for (std::size_t k = 1; k < members.size(); ++k)
    if (!same_options(members[k]->options(), options_))
      throw ValueError(std::string(kOp) + ": " + member_str(k) + " (" + members[k]->to_string() +
                       ") differs in its options from member 0 (" + members[0]->to_string() +
                       "); an ensemble's members share one architecture");
  size_ = static_cast<std::int64_t>(members.size());
  NoGradGuard no_grad;
  for (const auto& [name, first] : members[0]->named_parameters()) {
    std::vector<Tensor> slices;
    for (std::size_t k = 0; k < members.size(); ++k) {
      const Tensor p = members[k]->parameter(name);
      if (p.dtype() != first.dtype() || p.device() != first.device())
        throw DTypeError(std::string(kOp) + ": parameter '" + name + "' of " + member_str(k) +
                         " is " + p.describe() + " but member 0's is " + first.describe() +
                         " (convert the members to one dtype and device first)");
      slices.push_back(p);
    }
    Tensor param = stack(slices, 0);
    param.requires_grad_(true);
    add_dotted(*this, name, param);
    by_name_.emplace(name, param);  // the same handle: keep() updates both
  }
}

Tensor GPTEnsemble::stacked(const std::string& name) const {
  const auto it = by_name_.find(name);
  return it == by_name_.end() ? Tensor() : it->second;
}

std::int64_t GPTEnsemble::check_member(std::int64_t k, const char* what) const {
  if (k < 0 || k >= size_)
    throw IndexError(std::string(kOp) + "::" + what + ": member " + std::to_string(k) +
                     " is out of range for an ensemble of " + std::to_string(size_));
  return k;
}

// (K, B, T) ids -> (K, B, T, D): one lookup in the stacked table (K*V, D) at k*V + id,
// plus member k's positions 0 .. T-1 (K, 1, T, D), as GPT::embed does per member.
// Float inputs (K, B, T, F) go through the grouped input projection instead.
Tensor GPTEnsemble::embed(const Tensor& input) const {
  const auto& o = options_;
  const std::int64_t k_count = size_, d = o.d_model;
  input.check_defined(kOp);
  Tensor x;
  std::int64_t length = 0;
  if (o.input_dim == 0) {
    if (input.dtype() != kInt64 || input.dim() != 3 || input.size(0) != k_count)
      throw ShapeError(std::string(kOp) + ": tokens " + input.describe() +
                       " must be int64 of shape (members, batch, length) with members = " +
                       std::to_string(k_count));
    length = input.size(2);
    const Tensor table = stacked("token_embedding.weight");
    x = embedding(reshape(table, {k_count * o.vocab_size, d}),
                  offset_ids(input, o.vocab_size, "token"));
  } else {
    if (!is_floating(input.dtype()) || input.dim() != 4 || input.size(0) != k_count ||
        input.size(3) != o.input_dim)
      throw ShapeError(std::string(kOp) + ": input " + input.describe() +
                       " must be floating (members, batch, length, input_dim) = (" +
                       std::to_string(k_count) + ", B, T, " + std::to_string(o.input_dim) + ")");
    length = input.size(2);
    x = grouped_linear(input, stacked("input_projection.weight"), stacked("input_projection.bias"));
  }
  if (!o.positions) return x;
  if (length > o.max_len)
    throw ShapeError(std::string(kOp) + ": input " + input.describe() + " is longer than max_len " +
                     std::to_string(o.max_len));
  std::vector<std::int64_t> rows;
  for (std::int64_t k = 0; k < k_count; ++k)
    for (std::int64_t t = 0; t < length; ++t) rows.push_back(k * o.max_len + t);
  const Tensor positions = from_vector<std::int64_t>(rows, {k_count, length}).to(input.device());
  const Tensor table = stacked("position_embedding.weight");
  const Tensor pos = embedding(reshape(table, {k_count * o.max_len, d}), positions);
  return add(x, reshape(pos, {k_count, 1, length, d}));
}

// Self-attention of layer `layer` on x (K, B, T, E): the grouped in-projection, the K*B
// sequences through the attention op (ops/attention.hpp: the fused kernel on the CPU, the
// composed path on a GPU, as the GPT's layers), the grouped out-projection.
Tensor GPTEnsemble::attention(std::int64_t layer, const Tensor& x,
                              const Tensor& key_padding_mask) const {
  const auto& o = options_;
  const std::string prefix = "layers." + std::to_string(layer) + ".self_attn.";
  const std::int64_t k_count = size_, b = x.size(1), t = x.size(2), h = o.nhead;
  const std::int64_t d = o.head_dim != 0 ? o.head_dim : o.d_model / o.nhead, inner = h * d;
  const Tensor qkv = reshape(
      grouped_linear(x, stacked(prefix + "in_proj_weight"), stacked(prefix + "in_proj_bias")),
      {k_count * b, t, 3 * inner});
  std::vector<AttentionMask> masks;
  if (key_padding_mask.defined())
    masks.push_back(AttentionMask::torch_mha(reshape(key_padding_mask, {k_count * b, 1, 1, t})));
  if (o.causal)
    masks.push_back(
        AttentionMask::blocked_where_true(reshape(causal_mask(t, t).to(x.device()), {1, 1, t, t})));
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  const Tensor out_w = stacked(prefix + "out_proj.weight");
  const Tensor out_b = stacked(prefix + "out_proj.bias");
  auto project = [&](const Tensor& merged) {  // (K*B, T, I) -> (K, B, T, E)
    return grouped_linear(reshape(merged, {k_count, b, t, inner}), out_w, out_b);
  };
  HeadAttentionArgs a;
  a.q = {qkv, 0};
  a.k = {qkv, inner};
  a.v = {qkv, 2 * inner};
  a.heads = h;
  a.head_dim = d;
  a.value_head_dim = d;
  a.scale = scale;
  a.masks = std::move(masks);
  return project(multihead_attention(a).output);
}

Tensor GPTEnsemble::forward(const Tensor& input, const Tensor& key_padding_mask) const {
  const auto& o = options_;
  Tensor x = embed(input);
  if (key_padding_mask.defined() && key_padding_mask.shape() != Shape{size_, x.size(1), x.size(2)})
    throw ShapeError(
        std::string(kOp) + ": key_padding_mask " + key_padding_mask.describe() +
        " must be (members, batch, length) = " + shape_str({size_, x.size(1), x.size(2)}));
  const double eps = o.layer_norm_eps;
  for (std::int64_t l = 0; l < o.num_layers; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    auto norm = [&](const char* which, const Tensor& in) {
      return grouped_layer_norm(in, stacked(p + which + ".weight"), stacked(p + which + ".bias"),
                                eps);
    };
    x = add(x, attention(l, norm("norm1", x), key_padding_mask));
    const Tensor pre = grouped_linear(norm("norm2", x), stacked(p + "linear1.weight"),
                                      stacked(p + "linear1.bias"));
    const Tensor post = o.activation == Activation::gelu ? gelu(pre) : relu(pre);
    x = add(x, grouped_linear(post, stacked(p + "linear2.weight"), stacked(p + "linear2.bias")));
  }
  x = grouped_layer_norm(x, stacked("norm.weight"), stacked("norm.bias"), eps);
  return grouped_linear(x, stacked("lm_head.weight"));
}

StateDict GPTEnsemble::member_state_dict(std::int64_t k) const {
  check_member(k, "member_state_dict");
  NoGradGuard no_grad;
  StateDict out;
  for (const auto& [name, t] : named_parameters()) out.insert(name, select(t, 0, k));
  return out;
}

std::shared_ptr<GPT> GPTEnsemble::member(std::int64_t k) const {
  check_member(k, "member");
  Generator scratch(0);  // the initial weights are overwritten at once
  auto model = std::make_shared<GPT>(options_, &scratch);
  const Tensor any = parameters().front();
  model->to(any.dtype());
  model->to(any.device());
  model->load_state_dict(member_state_dict(k));
  model->train(is_training());
  return model;
}

void GPTEnsemble::keep(const std::vector<std::int64_t>& members) {
  if (members.empty())
    throw ValueError(std::string(kOp) +
                     "::keep: at least one member must stay (drop the ensemble instead)");
  std::vector<bool> seen(static_cast<std::size_t>(size_), false);
  for (std::int64_t k : members) {
    check_member(k, "keep");
    if (seen[static_cast<std::size_t>(k)])
      throw ValueError(std::string(kOp) + "::keep: member " + std::to_string(k) +
                       " is listed twice");
    seen[static_cast<std::size_t>(k)] = true;
  }
  NoGradGuard no_grad;
  const Tensor index =
      from_vector<std::int64_t>(members, {static_cast<std::int64_t>(members.size())});
  for (auto& [name, t] : named_parameters()) {
    const Tensor kept = index_select(t, 0, index.to(t.device()));
    TensorImpl& impl = *t.impl();
    impl.storage = kept.impl()->storage;
    impl.offset = kept.impl()->offset;
    impl.shape = kept.shape();
    impl.grad = Tensor();
  }
  size_ = static_cast<std::int64_t>(members.size());
}

std::string GPTEnsemble::extra_repr() const {
  return "members=" + std::to_string(size_) +
         ", vocab_size=" + std::to_string(options_.vocab_size) +
         ", d_model=" + std::to_string(options_.d_model) +
         ", nhead=" + std::to_string(options_.nhead) +
         ", num_layers=" + std::to_string(options_.num_layers);
}

}  // namespace headgrad::nn
