// Hook points and the handlers they run (see nn/hooks.hpp).
#include "headgrad/nn/hooks.hpp"

#include <atomic>
#include <utility>

#include "headgrad/core/error.hpp"
#include "headgrad/nn/module.hpp"

namespace headgrad::nn {

namespace {

std::uint64_t next_point_id() {
  static std::atomic<std::uint64_t> counter{1};
  return counter.fetch_add(1, std::memory_order_relaxed);
}

// The replacement must stand where the value stood.
void check_replacement(const HookPoint& point, const ScopedHandler& handler, const Tensor& value,
                       const Tensor& replacement) {
  const std::string where =
      handler.handler_name() + " at hook point '" + point.name() + "' of " + point.owner_type();
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

HookPoint::HookPoint(bool per_head) : id_(next_point_id()), per_head_(per_head) {}

void HookPoint::set_registration(std::string name, std::string owner_type) {
  name_ = std::move(name);
  owner_type_ = std::move(owner_type);
}

Tensor HookPoint::operator()(const Tensor& value) const {
  const std::vector<ScopedHandler*>* handlers = detail::active_handlers();
  if (handlers == nullptr) return value;
  // A hook may change the scopes; this list stays alive and unchanged until the run ends.
  detail::HandlerRun run;
  Tensor current = value;
  for (ScopedHandler* h : *handlers) {
    auto* handler = static_cast<HookHandler*>(h);
    if (!handler->wants(*this)) continue;
    Tensor out = handler->apply(*this, current);
    if (handler->read_only() || out.impl() == current.impl()) continue;
    check_replacement(*this, *handler, current, out);
    current = std::move(out);
  }
  return current;
}

bool HookPoint::watched() const {
  const std::vector<ScopedHandler*>* handlers = detail::active_handlers();
  if (handlers == nullptr) return false;
  for (ScopedHandler* h : *handlers)
    if (static_cast<HookHandler*>(h)->wants(*this)) return true;
  return false;
}

std::vector<HookHandler*> active_hook_handlers() {
  std::vector<HookHandler*> out;
  if (const auto* handlers = detail::active_handlers())
    for (ScopedHandler* h : *handlers) out.push_back(static_cast<HookHandler*>(h));
  return out;
}

AttentionHookPoints AttentionHookPoints::declare(Module& layer) {
  AttentionHookPoints p;
  p.q = &layer.register_hook_point("q", true);
  p.k = &layer.register_hook_point("k", true);
  p.v = &layer.register_hook_point("v", true);
  p.scores = &layer.register_hook_point("scores", true);
  p.pattern = &layer.register_hook_point("pattern", true);
  p.z = &layer.register_hook_point("z", true);
  p.result = &layer.register_hook_point("result", true);
  return p;
}

bool AttentionHookPoints::watched() const {
  if (detail::active_handlers() == nullptr) return false;
  for (const HookPoint* point : {q, k, v, scores, pattern, z, result})
    if (point->watched()) return true;
  return false;
}

}  // namespace headgrad::nn
