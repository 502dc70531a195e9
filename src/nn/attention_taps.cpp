// The attention observer slot and the shared tap reporting (nn/attention_observer.hpp,
// src/nn/attention_taps.hpp).
#include "nn/attention_taps.hpp"

#include <utility>

#include "headgrad/ops/elementwise.hpp"
#include "headgrad/ops/matmul.hpp"
#include "headgrad/ops/reduce.hpp"
#include "headgrad/ops/shape_ops.hpp"

namespace headgrad::nn {

namespace {
thread_local AttentionObserver* active_observer = nullptr;
}  // namespace

const std::vector<AttentionTap>& all_attention_taps() {
  static const std::vector<AttentionTap> taps = {
      AttentionTap::q,       AttentionTap::k, AttentionTap::v,           AttentionTap::scores,
      AttentionTap::pattern, AttentionTap::z, AttentionTap::contribution};
  return taps;
}

AttentionObserver* attention_observer() { return active_observer; }

AttentionObserver* set_attention_observer(AttentionObserver* observer) {
  return std::exchange(active_observer, observer);
}

namespace detail {

AttentionObserver* observer_for(const Module* layer) {
  AttentionObserver* o = active_observer;
  if (o == nullptr) return nullptr;
  for (AttentionTap tap : all_attention_taps())
    if (o->wants(layer, tap)) return o;
  return nullptr;
}

Tensor report_attention_taps(AttentionObserver& observer, const Module* layer,
                             const AttentionTapValues& values, const Linear& out_proj) {
  const std::pair<AttentionTap, const HeadValues*> taps[] = {
      {AttentionTap::q, &values.q},
      {AttentionTap::k, &values.k},
      {AttentionTap::v, &values.v},
      {AttentionTap::scores, &values.scores},
      {AttentionTap::pattern, &values.pattern},
      {AttentionTap::z, &values.z}};
  for (const auto& [tap, v] : taps)
    if (observer.wants(layer, tap)) observer.report(layer, tap, v->parts, v->per_head);
  if (!observer.wants(layer, AttentionTap::contribution)) return Tensor();

  // z (N, H, L, d); W_o^T (H*d, E) -> (H, d, E): block h holds columns [h*d, (h+1)*d) of W_o.
  // contribution (N, H, L, E) = z @ W_o,h^T; the output is its sum over heads + b_o.
  const Tensor z = values.z.per_head ? stack(values.z.parts, 1) : values.z.parts.front();
  const std::int64_t h = z.size(1), d = z.size(3), e = out_proj.weight.size(0);
  const Tensor w_o = reshape(transpose(out_proj.weight, 0, 1), {h, d, e});
  const Tensor contribution = matmul(z, w_o);
  observer.report(layer, AttentionTap::contribution, {contribution}, false);
  Tensor projected = sum(contribution, {1});
  if (out_proj.bias.defined()) projected = add(projected, out_proj.bias);
  return projected;
}

}  // namespace detail
}  // namespace headgrad::nn
