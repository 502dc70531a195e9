// The attention observer slot and the composed attention core (nn/attention_observer.hpp,
// src/nn/attention_core.hpp).
#include "nn/attention_core.hpp"

#include <utility>

#include "headgrad/nn/functional.hpp"
#include "headgrad/nn/hooks.hpp"
#include "headgrad/ops/elementwise.hpp"
#include "headgrad/ops/matmul.hpp"
#include "headgrad/ops/reduce.hpp"

namespace headgrad::nn {

const std::vector<AttentionTap>& all_attention_taps() {
  static const std::vector<AttentionTap> taps = {
      AttentionTap::q,       AttentionTap::k, AttentionTap::v,           AttentionTap::scores,
      AttentionTap::pattern, AttentionTap::z, AttentionTap::contribution};
  return taps;
}

AttentionObserver* attention_observer() {
  return static_cast<AttentionObserver*>(detail::active_handler(HandlerKind::observer));
}

namespace detail {

AttentionObserver* observer_for(const Module* layer) {
  AttentionObserver* o = attention_observer();
  if (o == nullptr) return nullptr;
  for (AttentionTap tap : all_attention_taps())
    if (o->wants(layer, tap)) return o;
  return nullptr;
}

bool attention_watched(const Module* layer) {
  return observer_for(layer) != nullptr || hooks_want(layer);
}

namespace {

// The tap an observer knows a hook point by (result is the observer's contribution).
AttentionTap tap_of(HookPoint point) {
  switch (point) {
    case HookPoint::q:
      return AttentionTap::q;
    case HookPoint::k:
      return AttentionTap::k;
    case HookPoint::v:
      return AttentionTap::v;
    case HookPoint::scores:
      return AttentionTap::scores;
    case HookPoint::pattern:
      return AttentionTap::pattern;
    case HookPoint::z:
      return AttentionTap::z;
    default:
      return AttentionTap::contribution;
  }
}

// The hook, then the observer: both see the tensor the forward goes on with.
Tensor visit(const Module* layer, AttentionObserver* observer, HookPoint point, const Tensor& t) {
  Tensor out = hook(layer, point, t);
  const AttentionTap tap = tap_of(point);
  if (observer && observer->wants(layer, tap)) observer->report(layer, tap, {out}, false);
  return out;
}

}  // namespace

AttentionCoreResult attention_core(const AttentionCoreArgs& args) {
  const Module* layer = args.layer;
  AttentionObserver* observer = observer_for(layer);
  const Tensor q = visit(layer, observer, HookPoint::q, args.q);
  const Tensor k = visit(layer, observer, HookPoint::k, args.k);
  const Tensor v = visit(layer, observer, HookPoint::v, args.v);

  functional::AttentionOptions attention;
  attention.masks = args.masks;
  attention.is_causal = args.is_causal;
  attention.scale = args.scale;
  attention.dropout_p = args.dropout_p;
  attention.generator = args.generator;
  attention.need_weights = args.need_weights;
  attention.keep_internals = true;
  attention.edit = [layer, observer](AttentionStage stage, const Tensor& t) {
    return visit(layer, observer,
                 stage == AttentionStage::scores ? HookPoint::scores : HookPoint::pattern, t);
  };
  const functional::AttentionResult r =
      functional::scaled_dot_product_attention(q, k, v, attention);

  // Head gates: z (N, H, L, dv) * gates (N|1, H, 1, 1).
  Tensor z = r.output;
  if (args.gates.defined()) z = mul(z, args.gates);
  z = visit(layer, observer, HookPoint::z, z);

  AttentionCoreResult out;
  out.weights = r.weights;
  out.pattern = r.pattern;
  HookHandler* handler = hook_handler();
  const bool want_result = (observer && observer->wants(layer, AttentionTap::contribution)) ||
                           (handler && handler->wants(layer, HookPoint::result));
  if (!want_result) {
    out.output = args.project(z);
    return out;
  }
  // result (N, H, L, E) = z (N, H, L, dv) @ W_o,h^T (H, dv, E); the output is its sum over
  // heads plus b_o (summing per-head products rounds differently from one GEMM).
  const Tensor result = visit(layer, observer, HookPoint::result, matmul(z, args.w_o_heads()));
  out.output = sum(result, {1});
  if (args.b_o.defined()) out.output = add(out.output, args.b_o);
  return out;
}

}  // namespace detail
}  // namespace headgrad::nn
