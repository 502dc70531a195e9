// Per-head views of the attention layers' weights (nn/attention_heads.hpp), one function
// per layout, each given `get`: the parameter itself or its gradient.
#include "headgrad/nn/attention_heads.hpp"

#include <functional>
#include <string>

#include "headgrad/core/error.hpp"
#include "headgrad/nn/attention_head.hpp"
#include "headgrad/nn/keras_attention.hpp"
#include "headgrad/nn/multihead_attention.hpp"
#include "headgrad/ops/shape_ops.hpp"

namespace headgrad::nn {

namespace {

using Get = std::function<Tensor(const Tensor&)>;

Tensor itself(const Tensor& t) { return t; }
Tensor gradient(const Tensor& t) { return t.defined() ? t.grad() : Tensor(); }

// [start, start + length) of `t` along `dim`, or undefined when `t` is.
Tensor block(const Tensor& t, std::int64_t dim, std::int64_t start, std::int64_t length) {
  return t.defined() ? narrow(t, dim, start, length) : Tensor();
}

void check_head(const std::string& layer, std::int64_t h, std::int64_t count) {
  if (h < 0 || h >= count)
    throw IndexError(layer + "::head_weights: head " + std::to_string(h) + " is out of range for " +
                     std::to_string(count) + " heads");
}

// Row blocks of the packed (3I, E) / separate (I, .) projections, column block of W_o.
HeadWeights fused_blocks(const MultiheadAttention& m, std::int64_t h, const Get& get) {
  check_head(m.type_name(), h, m.num_heads());
  const std::int64_t d = m.head_dim(), i = m.inner_dim(), start = h * d;
  HeadWeights w;
  if (m.options().packed_in_proj()) {
    const Tensor packed = get(m.in_proj_weight);
    w.w_q = block(packed, 0, start, d);
    w.w_k = block(packed, 0, i + start, d);
    w.w_v = block(packed, 0, 2 * i + start, d);
  } else {
    w.w_q = block(get(m.q_proj_weight), 0, start, d);
    w.w_k = block(get(m.k_proj_weight), 0, start, d);
    w.w_v = block(get(m.v_proj_weight), 0, start, d);
  }
  const Tensor bias = get(m.in_proj_bias);
  w.b_q = block(bias, 0, start, d);
  w.b_k = block(bias, 0, i + start, d);
  w.b_v = block(bias, 0, 2 * i + start, d);
  const Tensor bias_k = get(m.bias_k), bias_v = get(m.bias_v);  // (1, 1, I)
  if (bias_k.defined()) w.bias_k = reshape(block(bias_k, 2, start, d), {d});
  if (bias_v.defined()) w.bias_v = reshape(block(bias_v, 2, start, d), {d});
  w.w_o = block(get(m.out_proj->weight), 1, start, d);
  return w;
}

HeadWeights headwise_blocks(const HeadwiseMultiheadAttention& m, std::int64_t h, const Get& get) {
  check_head(m.type_name(), h, m.head_count());
  const AttentionHead& head = *(*m.heads)[static_cast<std::size_t>(h)];
  const std::int64_t d = m.head_width();
  HeadWeights w;
  w.w_q = get(head.q_proj->weight);
  w.w_k = get(head.k_proj->weight);
  w.w_v = get(head.v_proj->weight);
  w.b_q = get(head.q_proj->bias);
  w.b_k = get(head.k_proj->bias);
  w.b_v = get(head.v_proj->bias);
  const Tensor bias_k = get(head.bias_k), bias_v = get(head.bias_v);  // (1, 1, d)
  if (bias_k.defined()) w.bias_k = reshape(bias_k, {d});
  if (bias_v.defined()) w.bias_v = reshape(bias_v, {d});
  w.w_o = block(get(m.out_proj->weight), 1, h * d, d);
  return w;
}

// Kernels (features, H, d) -> head h's (d, features); biases (H, d) -> (d); the output
// kernel (H, vd, O) -> (O, vd).
HeadWeights keras_blocks(const KerasMultiHeadAttention& m, std::int64_t h, const Get& get) {
  check_head(m.type_name(), h, m.head_count());
  auto kernel_rows = [&](const KerasEinsumDense& dense) {
    const Tensor k = get(dense.kernel);
    return k.defined() ? transpose(select(k, 1, h), 0, 1) : Tensor();
  };
  auto bias_row = [&](const KerasEinsumDense& dense) {
    const Tensor b = get(dense.bias);
    return b.defined() ? select(b, 0, h) : Tensor();
  };
  HeadWeights w;
  w.w_q = kernel_rows(*m.query_dense);
  w.w_k = kernel_rows(*m.key_dense);
  w.w_v = kernel_rows(*m.value_dense);
  w.b_q = bias_row(*m.query_dense);
  w.b_k = bias_row(*m.key_dense);
  w.b_v = bias_row(*m.value_dense);
  const Tensor out = get(m.attention_output_dense->kernel);
  if (out.defined()) w.w_o = transpose(select(out, 0, h), 0, 1);
  return w;
}

}  // namespace

std::int64_t HeadWeights::numel() const {
  std::int64_t total = 0;
  for (const Tensor* t : {&w_q, &w_k, &w_v, &b_q, &b_k, &b_v, &bias_k, &bias_v, &w_o})
    if (t->defined()) total += t->numel();
  return total;
}

HeadWeights MultiheadAttention::head_weights(std::int64_t h) const {
  return fused_blocks(*this, h, itself);
}
HeadWeights MultiheadAttention::head_grads(std::int64_t h) const {
  return fused_blocks(*this, h, gradient);
}
HeadWeights HeadwiseMultiheadAttention::head_weights(std::int64_t h) const {
  return headwise_blocks(*this, h, itself);
}
HeadWeights HeadwiseMultiheadAttention::head_grads(std::int64_t h) const {
  return headwise_blocks(*this, h, gradient);
}
HeadWeights KerasMultiHeadAttention::head_weights(std::int64_t h) const {
  return keras_blocks(*this, h, itself);
}
HeadWeights KerasMultiHeadAttention::head_grads(std::int64_t h) const {
  return keras_blocks(*this, h, gradient);
}

}  // namespace headgrad::nn
