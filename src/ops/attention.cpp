// The attention op (see ops/attention.hpp): scaled_dot_product_attention composed from
// primitives, and multihead_attention, which picks the fused kernel or the composed path.
//
// scaled_dot_product_attention:
//
//   q (..., L, E), k (..., S, E), v (..., S, Ev)
//   scores  = (q * scale) @ k^T                 (..., L, S)   as PyTorch 1.13 MHA: q scaled first
//   scores  = mask_i(scores) for every mask     blocked -> -inf, additive -> + mask
//   scores  = edit(scores)                      when an edit callback is set
//   weights = softmax(scores, -1, safe)         an all -inf row -> zeros, zero gradient
//   weights = edit(weights)                     when an edit callback is set
//   weights = dropout(weights, p)               when p > 0
//   output  = weights @ v                       (..., L, Ev)
#include "headgrad/ops/attention.hpp"

#include <cmath>
#include <limits>

#include "headgrad/ops/dropout.hpp"
#include "headgrad/ops/elementwise.hpp"
#include "headgrad/ops/mask.hpp"
#include "headgrad/ops/matmul.hpp"
#include "headgrad/ops/shape_ops.hpp"
#include "headgrad/ops/softmax.hpp"
#include "ops/attention_fused.hpp"

namespace headgrad {

AttentionResult scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                             const AttentionOptions& options) {
  const char* op = "scaled_dot_product_attention";
  q.check_defined(op);
  k.check_defined(op);
  v.check_defined(op);
  auto shapes = [&] {
    return " (q " + shape_str(q.shape()) + ", k " + shape_str(k.shape()) + ", v " +
           shape_str(v.shape()) + ")";
  };
  if (q.dim() < 2 || k.dim() < 2 || v.dim() < 2)
    throw ShapeError(std::string(op) + ": q, k and v need at least 2 dims (..., len, features)" +
                     shapes());
  if (!is_floating(q.dtype()) || q.dtype() != k.dtype() || q.dtype() != v.dtype())
    throw DTypeError(std::string(op) + ": q, k and v must share one floating dtype, got " +
                     q.describe() + ", " + k.describe() + ", " + v.describe());
  if (q.size(-1) != k.size(-1))
    throw ShapeError(std::string(op) + ": q and k feature sizes differ" + shapes());
  if (k.size(-2) != v.size(-2))
    throw ShapeError(std::string(op) + ": k and v lengths differ" + shapes());
  if (options.dropout_p < 0.0 || options.dropout_p > 1.0)
    throw ValueError(std::string(op) + ": dropout_p must be in [0, 1], got " +
                     std::to_string(options.dropout_p));

  const double scale = options.scale.value_or(1.0 / std::sqrt(static_cast<double>(q.size(-1))));
  Tensor scores = matmul(mul(q, scale), transpose(k, -2, -1));
  for (const AttentionMask& mask : options.masks) scores = mask.apply(scores);
  if (options.is_causal)
    scores = masked_fill(scores, causal_mask(q.size(-2), k.size(-2)).to(q.device()),
                         -std::numeric_limits<double>::infinity());
  if (options.edit_scores) scores = options.edit_scores(scores);
  Tensor pattern = softmax(scores, -1, SoftmaxMode::safe);
  if (options.edit_pattern) pattern = options.edit_pattern(pattern);
  Tensor weights = pattern;
  if (options.dropout_p > 0.0)
    weights = dropout(pattern, options.dropout_p, /*training=*/true, options.generator);
  AttentionResult result;
  result.output = matmul(weights, v);
  if (options.need_weights) result.weights = weights;
  if (options.keep_internals) {
    result.query = q;
    result.key = k;
    result.value = v;
    result.scores = scores;
    result.pattern = pattern;
  }
  return result;
}

// multihead_attention's composed path, for what the fused kernel does not cover (a GPU
// tensor, dropout, a mask that needs a gradient):
//   split heads   (N, len, F) column blocks -> (N, H, len, d)     narrow, reshape, permute
//   attention     scaled_dot_product_attention                  (N, H, L, dv), weights
//   merge heads   (N, H, L, dv) -> (N, L, H * dv)                 permute, reshape
namespace {

HeadAttentionResult composed_multihead_attention(const HeadAttentionArgs& a) {
  const std::int64_t n = a.q.tensor.size(0), l = a.q.tensor.size(1), s = a.k.tensor.size(1),
                     h = a.heads;
  auto heads = [n, h](const HeadColumns& c, std::int64_t len, std::int64_t width) {
    const Tensor block = c.offset == 0 && c.tensor.size(2) == h * width
                             ? c.tensor
                             : narrow(c.tensor, 2, c.offset, h * width);
    return permute(reshape(block, {n, len, h, width}), {0, 2, 1, 3});
  };
  AttentionOptions options;
  options.masks = a.masks;
  options.scale = a.scale;
  options.dropout_p = a.dropout_p;
  options.generator = a.generator;
  options.need_weights = a.need_weights;
  const AttentionResult r =
      scaled_dot_product_attention(heads(a.q, l, a.head_dim), heads(a.k, s, a.head_dim),
                                   heads(a.v, s, a.value_head_dim), options);
  return {reshape(permute(r.output, {0, 2, 1, 3}), {n, l, h * a.value_head_dim}), r.weights};
}

}  // namespace

HeadAttentionResult multihead_attention(const HeadAttentionArgs& args) {
  detail::check_head_attention(args, "multihead_attention");
  if (detail::fused_attention_applies(args)) return detail::fused_multihead_attention(args);
  return composed_multihead_attention(args);
}

}  // namespace headgrad
