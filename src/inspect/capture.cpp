// inspect::Capture (see inspect/capture.hpp): a read-only hook handler keeping the latest
// tensor of each chosen hook point under its full name.
#include "headgrad/inspect/capture.hpp"

#include <algorithm>

#include "headgrad/autograd/grad_mode.hpp"
#include "headgrad/core/error.hpp"

namespace headgrad::inspect {

namespace {

std::string own_name(const std::string& full) {
  const std::size_t dot = full.rfind('.');
  return dot == std::string::npos ? full : full.substr(dot + 1);
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

const std::vector<std::string>& head_points() {
  static const std::vector<std::string> points = {"q",       "k", "v",     "scores",
                                                  "pattern", "z", "result"};
  return points;
}

Capture::Capture(const nn::Module& model, const std::vector<std::string>& points, bool retain_grads)
    : nn::HookHandler("inspect::Capture", /*read_only=*/true), retain_grads_(retain_grads) {
  const auto all = model.named_hook_points();
  std::vector<std::string> own_names;
  for (const auto& [full, point] : all)
    if (std::find(own_names.begin(), own_names.end(), own_name(full)) == own_names.end())
      own_names.push_back(own_name(full));
  std::vector<bool> matched(points.size(), false);
  for (const auto& [full, point] : all)
    for (std::size_t i = 0; i < points.size(); ++i)
      if (points[i] == full || points[i] == own_name(full)) {
        chosen_[point->id()] = full;
        matched[i] = true;
      }
  if (points.empty())
    for (const auto& [full, point] : all) chosen_[point->id()] = full;
  for (std::size_t i = 0; i < points.size(); ++i)
    if (!matched[i] &&
        std::find(head_points().begin(), head_points().end(), points[i]) == head_points().end())
      throw IndexError("inspect::Capture: the model has no hook point '" + points[i] +
                       "' (its points: " + joined(own_names) +
                       ", each also by its full name, as \"layers.0.self_attn.pattern\")");
  for (const auto& [path, module] : model.named_modules())
    for (const auto& [own, point] : module->hook_points())
      if (chosen_.count(point->id()) != 0) {
        layer_order_.push_back(path);
        break;
      }
}

Tensor Capture::apply(const nn::HookPoint& point, const Tensor& value) {
  Tensor kept = value;
  if (retain_grads_ && is_grad_enabled() && kept.requires_grad()) kept.retain_grad();
  recorded_[chosen_.at(point.id())] = kept;
  return value;
}

Tensor Capture::get(const std::string& name) const {
  const auto it = recorded_.find(name);
  if (it != recorded_.end()) return it->second;
  std::string known;
  for (const auto& [n, t] : recorded_) known += (known.empty() ? "" : ", ") + n;
  throw IndexError("Capture: nothing recorded under '" + name + "' (recorded: " +
                   (known.empty() ? "none; was the capture active during the forward?" : known) +
                   ")");
}

Tensor Capture::grad(const std::string& name) const {
  const Tensor g = get(name).grad();
  if (!g.defined())
    throw Error("Capture: no gradient for '" + name +
                "': it was recorded without one (grad mode off, nothing upstream requires "
                "grad, or retain_grads off) or backward has not reached it");
  return g;
}

bool Capture::contains(const std::string& name) const { return recorded_.count(name) != 0; }

std::vector<std::string> Capture::names() const {
  std::vector<std::string> out;
  for (const auto& [n, t] : recorded_) out.push_back(n);
  return out;
}

std::vector<std::string> Capture::layer_names() const { return layer_order_; }

void Capture::clear() { recorded_.clear(); }

}  // namespace headgrad::inspect
