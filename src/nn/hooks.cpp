// The hook-point slot and names (see nn/hooks.hpp).
#include "headgrad/nn/hooks.hpp"

#include <utility>

#include "headgrad/core/error.hpp"
#include "headgrad/nn/gpt.hpp"
#include "headgrad/nn/keras_attention.hpp"
#include "headgrad/nn/multihead_attention.hpp"
#include "headgrad/nn/transformer.hpp"

namespace headgrad::nn {

namespace {

struct PointName {
  HookPoint point;
  const char* name;
};

constexpr PointName kPointNames[] = {
    {HookPoint::q, "q"},
    {HookPoint::k, "k"},
    {HookPoint::v, "v"},
    {HookPoint::scores, "scores"},
    {HookPoint::pattern, "pattern"},
    {HookPoint::z, "z"},
    {HookPoint::result, "result"},
    {HookPoint::resid_pre, "resid_pre"},
    {HookPoint::attn_out, "attn_out"},
    {HookPoint::resid_mid, "resid_mid"},
    {HookPoint::cross_attn_out, "cross_attn_out"},
    {HookPoint::resid_mid_cross, "resid_mid_cross"},
    {HookPoint::mlp_pre, "mlp_pre"},
    {HookPoint::mlp_post, "mlp_post"},
    {HookPoint::mlp_out, "mlp_out"},
    {HookPoint::resid_post, "resid_post"},
    {HookPoint::embed, "embed"},
    {HookPoint::ln_final, "ln_final"},
    {HookPoint::logits, "logits"},
};

// The replacement must stand where the value stood.
void check_replacement(const Module* module, HookPoint point, const Tensor& value,
                       const Tensor& replacement) {
  const std::string where = "hook at " + module->type_name() + "." + to_string(point);
  if (!replacement.defined())
    throw ValueError(where + ": the hook returned an undefined tensor (return the value itself " +
                     "to leave it unchanged)");
  if (replacement.shape() != value.shape())
    throw ShapeError(where + ": the replacement " + replacement.describe() +
                     " must have the shape " + shape_str(value.shape()) +
                     " of the value it replaces");
  if (replacement.dtype() != value.dtype())
    throw DTypeError(where + ": the replacement " + replacement.describe() + " must be " +
                     headgrad::to_string(value.dtype()) + " like the value it replaces");
  if (replacement.device() != value.device())
    throw DeviceError(where + ": the replacement is on " + replacement.device().str() +
                      " but the value is on " + value.device().str());
}

}  // namespace

const std::vector<HookPoint>& all_hook_points() {
  static const std::vector<HookPoint> points = [] {
    std::vector<HookPoint> out;
    for (const auto& p : kPointNames) out.push_back(p.point);
    return out;
  }();
  return points;
}

std::string to_string(HookPoint point) {
  for (const auto& p : kPointNames)
    if (p.point == point) return p.name;
  return "?";
}

HookPoint parse_hook_point(const std::string& name) {
  std::string known;
  for (const auto& p : kPointNames) {
    if (name == p.name) return p.point;
    known += known.empty() ? p.name : std::string(", ") + p.name;
  }
  throw ValueError("parse_hook_point: unknown hook point '" + name + "' (known: " + known + ")");
}

bool is_head_point(HookPoint point) {
  switch (point) {
    case HookPoint::q:
    case HookPoint::k:
    case HookPoint::v:
    case HookPoint::scores:
    case HookPoint::pattern:
    case HookPoint::z:
    case HookPoint::result:
      return true;
    default:
      return false;
  }
}

std::vector<HookPoint> hook_points_of(const Module& module) {
  using P = HookPoint;
  if (dynamic_cast<const AttentionLayer*>(&module) ||
      dynamic_cast<const KerasMultiHeadAttention*>(&module))
    return {P::q, P::k, P::v, P::scores, P::pattern, P::z, P::result};
  if (dynamic_cast<const TransformerEncoderLayer*>(&module))
    return {P::resid_pre, P::attn_out, P::resid_mid, P::mlp_pre,
            P::mlp_post,  P::mlp_out,  P::resid_post};
  if (dynamic_cast<const TransformerDecoderLayer*>(&module))
    return {P::resid_pre, P::attn_out, P::resid_mid, P::cross_attn_out, P::resid_mid_cross,
            P::mlp_pre,   P::mlp_post, P::mlp_out,   P::resid_post};
  if (dynamic_cast<const GPT*>(&module)) return {P::embed, P::ln_final, P::logits};
  return {};
}

HookHandler* hook_handler() {
  return static_cast<HookHandler*>(detail::active_handler(HandlerKind::hooks));
}

Tensor hook(const Module* module, HookPoint point, const Tensor& value) {
  HookHandler* handler = hook_handler();
  if (handler == nullptr || !handler->wants(module, point)) return value;
  Tensor replacement = handler->apply(module, point, value);
  if (replacement.impl() != value.impl()) check_replacement(module, point, value, replacement);
  return replacement;
}

bool hooks_want(const Module* module) {
  HookHandler* handler = hook_handler();
  if (handler == nullptr) return false;
  for (HookPoint point : all_hook_points())
    if (handler->wants(module, point)) return true;
  return false;
}

}  // namespace headgrad::nn
