// inspect::Capture (see inspect/capture.hpp): a thread-local pointer to the active
// capture, and a map from "<layer>.<tap>" to the tensors the layers recorded.
#include "headgrad/inspect/capture.hpp"

#include "headgrad/autograd/grad_mode.hpp"
#include "headgrad/core/error.hpp"
#include "headgrad/nn/multihead_attention.hpp"
#include "headgrad/ops/shape_ops.hpp"

namespace headgrad::inspect {

namespace {

std::string full_name(const std::string& layer, Tap tap) {
  return layer.empty() ? to_string(tap) : layer + "." + to_string(tap);
}

}  // namespace

const std::vector<Tap>& all_taps() { return nn::all_attention_taps(); }

std::string to_string(Tap tap) {
  switch (tap) {
    case Tap::q:
      return "q";
    case Tap::k:
      return "k";
    case Tap::v:
      return "v";
    case Tap::scores:
      return "scores";
    case Tap::pattern:
      return "pattern";
    case Tap::z:
      return "z";
    case Tap::contribution:
      return "contribution";
  }
  return "?";
}

Tap parse_tap(const std::string& name) {
  std::string known;
  for (Tap t : all_taps()) {
    if (to_string(t) == name) return t;
    known += (known.empty() ? "" : ", ") + to_string(t);
  }
  throw ValueError("inspect::parse_tap: unknown tap '" + name + "' (taps: " + known + ")");
}

Capture* active_capture() { return dynamic_cast<Capture*>(nn::attention_observer()); }

Capture::Scope::Scope(Capture* capture)
    : scope_(nn::HandlerKind::observer, capture, static_cast<nn::AttentionObserver*>(capture)) {}

Capture::Capture(const nn::Module& model, std::vector<Tap> taps, bool retain_grads)
    : nn::AttentionObserver("inspect::Capture"),
      selected_(all_taps().size(), false),
      retain_grads_(retain_grads) {
  for (Tap t : taps) selected_[static_cast<std::size_t>(t)] = true;
  for (const auto& [name, module] : model.named_modules())
    if (dynamic_cast<const nn::AttentionLayer*>(module.get())) {
      layers_.emplace(module->instance_id(), name);
      layer_order_.push_back(name);
    }
}

bool Capture::wants(const nn::Module* layer, Tap tap) const {
  return selected_[static_cast<std::size_t>(tap)] && watches(layer);
}

void Capture::report(const nn::Module* layer, Tap tap, std::vector<Tensor> parts, bool per_head) {
  if (!wants(layer, tap)) return;
  if (retain_grads_ && is_grad_enabled())
    for (Tensor& t : parts)
      if (t.requires_grad()) t.retain_grad();
  entries_[full_name(layers_.at(layer->instance_id()), tap)] = Entry{std::move(parts), per_head};
}

const Capture::Entry& Capture::entry(const std::string& name) const {
  auto it = entries_.find(name);
  if (it == entries_.end()) {
    std::string known;
    for (const auto& [n, e] : entries_) known += (known.empty() ? "" : ", ") + n;
    throw IndexError("Capture: nothing recorded under '" + name + "' (recorded: " +
                     (known.empty() ? "none; was the capture active during the forward?" : known) +
                     ")");
  }
  return it->second;
}

Tensor Capture::get(const std::string& name) const {
  const Entry& e = entry(name);
  return e.per_head ? stack(e.parts, 1) : e.parts.front();
}

Tensor Capture::grad(const std::string& name) const {
  const Entry& e = entry(name);
  std::vector<Tensor> grads;
  for (const Tensor& t : e.parts) {
    Tensor g = t.grad();
    if (!g.defined())
      throw Error("Capture: no gradient for '" + name +
                  "': it was recorded without one (grad mode off, nothing upstream requires "
                  "grad, or retain_grads off) or backward has not reached it");
    grads.push_back(g);
  }
  return e.per_head ? stack(grads, 1) : grads.front();
}

bool Capture::contains(const std::string& name) const { return entries_.count(name) != 0; }

std::vector<std::string> Capture::names() const {
  std::vector<std::string> out;
  for (const auto& [n, e] : entries_) out.push_back(n);
  return out;
}

std::vector<std::string> Capture::layer_names() const { return layer_order_; }

void Capture::clear() { entries_.clear(); }

}  // namespace headgrad::inspect
