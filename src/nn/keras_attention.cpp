// nn::KerasMultiHeadAttention and its EinsumDense projections: input validation, the
// forward composition (projections, nn::functional::scaled_dot_product_attention, output
// projection) and the weight conversion to and from nn::MultiheadAttention. Shapes and
// layouts are described in headgrad/nn/keras_attention.hpp.
#include "headgrad/nn/keras_attention.hpp"

#include <cmath>
#include <sstream>
#include <string>
#include <utility>

#include "headgrad/autograd/grad_mode.hpp"
#include "headgrad/core/error.hpp"
#include "headgrad/nn/functional.hpp"
#include "headgrad/nn/init.hpp"
#include "headgrad/ops/dropout.hpp"
#include "headgrad/ops/elementwise.hpp"
#include "headgrad/ops/matmul.hpp"
#include "headgrad/ops/shape_ops.hpp"
#include "nn/attention_core.hpp"

namespace headgrad::nn {

namespace {

constexpr const char* kOp = "KerasMultiHeadAttention";

std::int64_t product(const Shape& shape, std::size_t begin, std::size_t end) {
  std::int64_t p = 1;
  for (std::size_t i = begin; i < end; ++i) p *= shape[i];
  return p;
}

// Copies `src` (same number of elements, any shape) into the parameter `dst`, converting
// dtype, without recording a graph.
void copy_values(Tensor& dst, const Tensor& src) {
  NoGradGuard no_grad;
  dst.copy_(src.detach().reshape(dst.shape()));
}

}  // namespace

// --- options -------------------------------------------------------------------------

void KerasMultiHeadAttentionOptions::validate() const {
  auto fail = [](const std::string& what) { throw ValueError(std::string(kOp) + ": " + what); };
  if (num_heads <= 0) fail("num_heads must be positive, got " + std::to_string(num_heads));
  if (key_dim <= 0) fail("key_dim must be positive, got " + std::to_string(key_dim));
  if (value_dim < 0)
    fail("value_dim must be positive (or 0 for key_dim), got " + std::to_string(value_dim));
  if (query_features <= 0)
    fail("query_features (the last dim of the query) must be positive, got " +
         std::to_string(query_features));
  if (value_features < 0)
    fail("value_features must be positive (or 0 for query_features), got " +
         std::to_string(value_features));
  if (key_features < 0)
    fail("key_features must be positive (or 0 for value_features), got " +
         std::to_string(key_features));
  if (output_shape < 0)
    fail("output_shape must be positive (or 0 for query_features), got " +
         std::to_string(output_shape));
  if (!(dropout >= 0.0 && dropout < 1.0))
    fail("dropout must be in [0, 1), got " + std::to_string(dropout));
}

// --- EinsumDense ---------------------------------------------------------------------

KerasEinsumDense::KerasEinsumDense(Shape kernel_shape, std::int64_t contracted_dims, bool use_bias)
    : Module("EinsumDense"), contracted_dims_(contracted_dims) {
  if (contracted_dims < 1 || contracted_dims >= static_cast<std::int64_t>(kernel_shape.size()))
    throw ValueError("EinsumDense: kernel " + shape_str(kernel_shape) + " cannot contract " +
                     std::to_string(contracted_dims) + " input dims");
  const Shape bias_shape(kernel_shape.begin() + contracted_dims, kernel_shape.end());
  kernel = register_parameter("kernel", zeros(kernel_shape));
  bias = register_parameter("bias", use_bias ? zeros(bias_shape) : Tensor());
}

void KerasEinsumDense::reset_parameters(Generator* generator) {
  NoGradGuard no_grad;
  init::glorot_uniform_keras_(kernel, generator);
  if (bias.defined()) init::zeros_(bias);
}

// x (*, in...) -> flatten in... -> (*, prod(in)) @ kernel (prod(in), prod(out))
//   -> (*, out...) + bias (out...)
Tensor KerasEinsumDense::forward(const Tensor& x) const {
  x.check_defined("EinsumDense");
  const Shape& ks = kernel.shape();
  const std::size_t c = static_cast<std::size_t>(contracted_dims_);
  const Shape& xs = x.shape();
  bool fits = xs.size() >= c;
  for (std::size_t i = 0; fits && i < c; ++i) fits = xs[xs.size() - c + i] == ks[i];
  if (!fits)
    throw ShapeError("EinsumDense: input " + shape_str(xs) + " does not end with the kernel's " +
                     "input dims (kernel " + shape_str(ks) + ")");
  const std::int64_t in = product(ks, 0, c), out = product(ks, c, ks.size());
  Shape flat(xs.begin(), xs.end() - c);
  Shape result_shape = flat;
  flat.push_back(in);
  result_shape.insert(result_shape.end(), ks.begin() + c, ks.end());
  Tensor y = matmul(x.reshape(flat), kernel.reshape({in, out})).reshape(result_shape);
  return bias.defined() ? y + bias : y;
}

std::string KerasEinsumDense::extra_repr() const {
  return "kernel=" + shape_str(kernel.shape()) +
         ", contracted_dims=" + std::to_string(contracted_dims_) +
         ", use_bias=" + (bias.defined() ? "true" : "false");
}

// --- KerasMultiHeadAttention ---------------------------------------------------------

KerasMultiHeadAttention::KerasMultiHeadAttention(const KerasMultiHeadAttentionOptions& options,
                                                 Generator* generator)
    : Module("KerasMultiHeadAttention"),
      options_(options),
      points_(AttentionHookPoints::declare(*this)) {
  options_.validate();
  const std::int64_t h = options_.num_heads, kd = options_.key_dim, vd = value_dim();
  const bool b = options_.use_bias;
  query_dense = register_module(
      "query", std::make_shared<KerasEinsumDense>(Shape{options_.query_features, h, kd}, 1, b));
  key_dense = register_module("key", std::make_shared<KerasEinsumDense>(
                                         Shape{options_.resolved_key_features(), h, kd}, 1, b));
  value_dense = register_module(
      "value",
      std::make_shared<KerasEinsumDense>(Shape{options_.resolved_value_features(), h, vd}, 1, b));
  attention_output_dense = register_module(
      "attention_output", std::make_shared<KerasEinsumDense>(Shape{h, vd, output_shape()}, 2, b));
  reset_parameters(generator);
}

void KerasMultiHeadAttention::reset_parameters(Generator* generator) {
  // Keras builds (and initializes) query, key, value, then attention_output.
  query_dense->reset_parameters(generator);
  key_dense->reset_parameters(generator);
  value_dense->reset_parameters(generator);
  attention_output_dense->reset_parameters(generator);
}

namespace {

// Checks one input: defined, (B, L, features), the parameters' dtype.
void check_input(const Tensor& t, const char* name, std::int64_t features, DType dtype) {
  if (!t.defined()) throw ValueError(std::string(kOp) + ": " + name + " is undefined");
  if (t.dim() != 3) {
    std::ostringstream msg;
    msg << kOp << ": " << name << " " << shape_str(t.shape())
        << " must be batched (B, L, features)";
    if (t.dim() == 2) msg << "; unbatched inputs are not supported, add a batch dim of 1";
    throw ShapeError(msg.str());
  }
  if (t.size(2) != features)
    throw ShapeError(std::string(kOp) + ": " + name + " " + shape_str(t.shape()) +
                     " has last dim " + std::to_string(t.size(2)) + ", expected " +
                     std::to_string(features));
  if (t.dtype() != dtype)
    throw DTypeError(std::string(kOp) + ": " + name + " " + t.describe() +
                     " does not match the parameters' dtype " + to_string(dtype));
}

// attention_mask (B, T, S), or broadcast to it with rank 2 or 3, as one mask for every head
// (Keras expands the head axis), plus the causal flag and the scale 1 / sqrt(key_dim).
functional::AttentionOptions attention_options(const KerasAttentionArgs& args,
                                               const Shape& expected, std::int64_t key_dim) {
  functional::AttentionOptions attention;
  if (args.attention_mask.defined()) {
    const Tensor& m = args.attention_mask;
    bool fits = m.dim() >= 2 && m.dim() <= 3;
    for (std::int64_t i = 0; fits && i < m.dim(); ++i) {
      const std::int64_t size = m.size(m.dim() - 1 - i), want = expected[2 - i];
      fits = size == want || size == 1;
    }
    if (!fits)
      throw ShapeError(std::string(kOp) + ": attention_mask " + shape_str(m.shape()) +
                       " must be (B, T, S) = " + shape_str(expected) +
                       " or broadcast to it (rank 2 or 3)");
    // (B, T, S) -> (B, 1, T, S)
    attention.masks.push_back(AttentionMask::attend_where_true(m.dim() == 3 ? m.unsqueeze(1) : m));
  }
  attention.is_causal = args.use_causal_mask;
  attention.scale = 1.0 / std::sqrt(static_cast<double>(key_dim));
  return attention;
}

// (B, H, T, vd): the attended values, with dropout when `dropout` > 0; `weights` receives
// the attention scores when asked (Keras returns them before dropout).
Tensor attend(const Tensor& q, const Tensor& k, const Tensor& v,
              functional::AttentionOptions attention, const KerasAttentionArgs& args,
              double dropout, Tensor& weights) {
  if (dropout > 0 && args.return_attention_scores) {
    // The weights before dropout: the dropout is applied here.
    attention.need_weights = true;
    functional::AttentionResult r = functional::scaled_dot_product_attention(q, k, v, attention);
    weights = r.weights;
    return matmul(headgrad::dropout(r.weights, dropout, true, args.dropout_generator), v);
  }
  attention.need_weights = args.return_attention_scores;
  attention.dropout_p = dropout;
  attention.generator = args.dropout_generator;
  functional::AttentionResult r = functional::scaled_dot_product_attention(q, k, v, attention);
  if (args.return_attention_scores) weights = r.weights;
  return r.output;
}

// Hook points or taps: the shared composed core (attention_core).
AttentionOutput watched_forward(const KerasMultiHeadAttention& layer, const Tensor& q,
                                const Tensor& k, const Tensor& v,
                                const functional::AttentionOptions& attention,
                                const KerasAttentionArgs& args, double dropout) {
  detail::AttentionCoreArgs core;
  core.points = &layer.attention_points();
  core.q = q;
  core.k = k;
  core.v = v;
  core.masks = attention.masks;
  core.is_causal = attention.is_causal;
  core.scale = *attention.scale;
  core.dropout_p = dropout;
  core.generator = args.dropout_generator;
  core.w_o_heads = [&layer] { return layer.attention_output_dense->kernel; };  // (H, vd, O)
  core.b_o = layer.attention_output_dense->bias;
  core.project = [&layer](const Tensor& z) {
    return layer.attention_output_dense->forward(z.transpose(1, 2));
  };
  const detail::AttentionCoreResult r = detail::attention_core(core);
  AttentionOutput result;
  result.output = r.output;
  if (args.return_attention_scores) result.weights = r.pattern;  // Keras: before dropout
  return result;
}

}  // namespace

AttentionOutput KerasMultiHeadAttention::forward(const Tensor& query, const Tensor& value,
                                                 const Tensor& key_in,
                                                 const KerasAttentionArgs& args) const {
  const Tensor& key = key_in.defined() ? key_in : value;
  const DType dtype = query_dense->kernel.dtype();
  check_input(query, "query", options_.query_features, dtype);
  check_input(value, "value", options_.resolved_value_features(), dtype);
  check_input(key, "key", options_.resolved_key_features(), dtype);
  const std::int64_t batch = query.size(0), target = query.size(1), source = value.size(1);
  if (value.size(0) != batch || key.size(0) != batch)
    throw ShapeError(std::string(kOp) + ": query " + shape_str(query.shape()) + ", value " +
                     shape_str(value.shape()) + " and key " + shape_str(key.shape()) +
                     " must share the batch size");
  if (key.size(1) != source)
    throw ShapeError(std::string(kOp) + ": key " + shape_str(key.shape()) + " and value " +
                     shape_str(value.shape()) + " must share the source length");
  const functional::AttentionOptions attention =
      attention_options(args, {batch, target, source}, options_.key_dim);

  // (B, L, F) -> (B, L, H, d) -> (B, H, L, d)
  const Tensor q = query_dense->forward(query).transpose(1, 2);
  const Tensor k = key_dense->forward(key).transpose(1, 2);
  const Tensor v = value_dense->forward(value).transpose(1, 2);
  const bool training = args.training.value_or(is_training());
  const double dropout = training && options_.dropout > 0.0 ? options_.dropout : 0.0;
  if (attention_points().watched())
    return watched_forward(*this, q, k, v, attention, args, dropout);
  AttentionOutput result;
  const Tensor attended = attend(q, k, v, attention, args, dropout, result.weights);
  // (B, H, T, vd) -> (B, T, H, vd) -> (B, T, O)
  result.output = attention_output_dense->forward(attended.transpose(1, 2));
  return result;
}

std::string KerasMultiHeadAttention::extra_repr() const {
  std::ostringstream s;
  s << "num_heads=" << options_.num_heads << ", key_dim=" << options_.key_dim
    << ", value_dim=" << value_dim() << ", query_features=" << options_.query_features
    << ", key_features=" << options_.resolved_key_features()
    << ", value_features=" << options_.resolved_value_features()
    << ", output_shape=" << output_shape()
    << ", use_bias=" << (options_.use_bias ? "true" : "false") << ", dropout=" << options_.dropout;
  return s.str();
}

// --- conversion ----------------------------------------------------------------------

std::shared_ptr<KerasMultiHeadAttention> KerasMultiHeadAttention::from_torch(
    const MultiheadAttention& mha) {
  const MultiheadAttentionOptions& o = mha.options();
  if (o.add_bias_kv || o.add_zero_attn)
    throw ValueError(std::string(kOp) +
                     "::from_torch: add_bias_kv and add_zero_attn have no Keras counterpart");
  const std::int64_t e = o.embed_dim, h = o.num_heads, d = o.head_dim();
  auto options = KerasMultiHeadAttentionOptions(h, d, e)
                     .with_value_dim(d)
                     .with_key_features(o.key_dim())
                     .with_value_features(o.value_dim())
                     .with_output_shape(e)
                     .with_use_bias(o.bias)
                     .with_dropout(o.dropout);
  // A private generator: the values are overwritten, and the default stream stays as it was.
  Generator scratch(0);
  auto keras = std::make_shared<KerasMultiHeadAttention>(options, &scratch);
  keras->to(mha.out_proj->weight.dtype());
  keras->train(mha.is_training());

  NoGradGuard no_grad;
  // W (E, F) -> W^T (F, E) -> (F, H, d): kernel[f, h, j] = W[h*d + j, f]
  copy_values(keras->query_dense->kernel, mha.w_q().t());
  copy_values(keras->key_dense->kernel, mha.w_k().t());
  copy_values(keras->value_dense->kernel, mha.w_v().t());
  // W_o (E, H*d) -> W_o^T (H*d, E) -> (H, d, E): kernel[h, j, e] = W_o[e, h*d + j]
  copy_values(keras->attention_output_dense->kernel, mha.out_proj->weight.t());
  if (o.bias) {
    copy_values(keras->query_dense->bias, mha.b_q());
    copy_values(keras->key_dense->bias, mha.b_k());
    copy_values(keras->value_dense->bias, mha.b_v());
    copy_values(keras->attention_output_dense->bias, mha.out_proj->bias);
  }
  return keras;
}

std::shared_ptr<MultiheadAttention> KerasMultiHeadAttention::to_torch(bool batch_first) const {
  const std::int64_t h = options_.num_heads, kd = options_.key_dim, vd = value_dim();
  const std::int64_t e = options_.query_features;
  auto fail = [](const std::string& why) {
    throw ValueError(std::string(kOp) + "::to_torch: " + why);
  };
  if (kd != vd)
    fail("PyTorch uses one head size for query, key and value, but key_dim " + std::to_string(kd) +
         " != value_dim " + std::to_string(vd));
  if (output_shape() != e)
    fail("PyTorch's output has embed_dim features, but output_shape " +
         std::to_string(output_shape()) + " != query_features " + std::to_string(e));

  // key_dim becomes head_size, unless it is PyTorch's own E / H (then head_size stays 0).
  const std::int64_t inner = h * kd;
  auto options = MultiheadAttentionOptions(e, h)
                     .with_head_size(inner == e ? 0 : kd)
                     .with_kdim(options_.resolved_key_features())
                     .with_vdim(options_.resolved_value_features())
                     .with_bias(options_.use_bias)
                     .with_dropout(options_.dropout)
                     .with_batch_first(batch_first);
  Generator scratch;  // every value is overwritten below
  auto mha = std::make_shared<MultiheadAttention>(options, &scratch);
  mha->to(query_dense->kernel.dtype());
  mha->train(is_training());

  NoGradGuard no_grad;
  // kernel (F, H, d) -> (F, I) -> W (I, F) = its transpose
  const Tensor w_q = query_dense->kernel.detach().reshape({e, inner}).t();
  const Tensor w_k = key_dense->kernel.detach().reshape({options.key_dim(), inner}).t();
  const Tensor w_v = value_dense->kernel.detach().reshape({options.value_dim(), inner}).t();
  if (options.packed_in_proj()) {
    copy_values(mha->in_proj_weight, concat({w_q, w_k, w_v}, 0));
  } else {
    copy_values(mha->q_proj_weight, w_q);
    copy_values(mha->k_proj_weight, w_k);
    copy_values(mha->v_proj_weight, w_v);
  }
  // kernel (H, d, E) -> (I, E) -> W_o (E, I) = its transpose
  copy_values(mha->out_proj->weight,
              attention_output_dense->kernel.detach().reshape({inner, e}).t());
  if (options_.use_bias) {
    copy_values(mha->in_proj_bias, concat({query_dense->bias.detach().reshape({inner}),
                                           key_dense->bias.detach().reshape({inner}),
                                           value_dense->bias.detach().reshape({inner})},
                                          0));
    copy_values(mha->out_proj->bias, attention_output_dense->bias);
  }
  return mha;
}

// --- masks ---------------------------------------------------------------------------

Tensor keras_mask_from_torch(const Tensor& blocked) {
  blocked.check_defined("keras_mask_from_torch");
  if (blocked.dtype() != DType::boolean)
    throw DTypeError("keras_mask_from_torch: the PyTorch mask " + blocked.describe() +
                     " must be bool (true = blocked); a float mask is additive and has no "
                     "Keras counterpart");
  return logical_not(blocked);
}

Tensor torch_mask_from_keras(const Tensor& attend) {
  attend.check_defined("torch_mask_from_keras");
  if (attend.dtype() == DType::boolean) return logical_not(attend);
  // Numeric Keras masks: nonzero = attend, so zero = blocked.
  return eq(attend, zeros({}, attend.options()));
}

}  // namespace headgrad::nn
