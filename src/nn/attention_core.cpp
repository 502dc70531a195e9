// The composed attention core (src/nn/attention_core.hpp).
#include "nn/attention_core.hpp"

#include <utility>

#include "headgrad/nn/functional.hpp"
#include "headgrad/ops/elementwise.hpp"
#include "headgrad/ops/matmul.hpp"
#include "headgrad/ops/reduce.hpp"

namespace headgrad::nn::detail {

AttentionCoreResult attention_core(const AttentionCoreArgs& args) {
  const AttentionHookPoints& points = *args.points;
  const Tensor q = (*points.q)(args.q);
  const Tensor k = (*points.k)(args.k);
  const Tensor v = (*points.v)(args.v);

  functional::AttentionOptions attention;
  attention.masks = args.masks;
  attention.is_causal = args.is_causal;
  attention.scale = args.scale;
  attention.dropout_p = args.dropout_p;
  attention.generator = args.generator;
  attention.need_weights = args.need_weights;
  attention.keep_internals = true;
  attention.edit_scores = [&points](const Tensor& t) { return (*points.scores)(t); };
  attention.edit_pattern = [&points](const Tensor& t) { return (*points.pattern)(t); };
  const functional::AttentionResult r =
      functional::scaled_dot_product_attention(q, k, v, attention);

  // Head gates: z (N, H, L, dv) * gates (N|1, H, 1, 1).
  Tensor z = r.output;
  if (args.gates.defined()) z = mul(z, args.gates);
  z = (*points.z)(z);

  AttentionCoreResult out;
  out.weights = r.weights;
  out.pattern = r.pattern;
  if (!points.result->watched()) {
    out.output = args.project(z);
    return out;
  }
  // result (N, H, L, E) = z (N, H, L, dv) @ W_o,h^T (H, dv, E); the output is its sum over
  // heads plus b_o (summing per-head products rounds differently from one GEMM).
  const Tensor result = (*points.result)(matmul(z, args.w_o_heads()));
  out.output = sum(result, {1});
  if (args.b_o.defined()) out.output = add(out.output, args.b_o);
  return out;
}

}  // namespace headgrad::nn::detail
