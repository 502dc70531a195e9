// inspect::Hooks and ActivationCache (see inspect/hooks.hpp).
#include "headgrad/inspect/hooks.hpp"

#include <algorithm>
#include <optional>
#include <utility>

#include "headgrad/autograd/grad_mode.hpp"
#include "headgrad/core/error.hpp"
#include "headgrad/inspect/capture.hpp"
#include "headgrad/nn/attention_heads.hpp"
#include "headgrad/ops/shape_ops.hpp"

namespace headgrad::inspect {

namespace {

// Close names first (same point), so an error lists what the user likely meant.
std::string known_names(const std::map<std::string, std::size_t>& by_name,
                        const std::string& name) {
  const std::size_t dot = name.rfind('.');
  const std::string point = dot == std::string::npos ? name : name.substr(dot + 1);
  std::string same_point, all;
  std::size_t count = 0;
  for (const auto& [known, index] : by_name) {
    (void)index;
    const std::size_t d = known.rfind('.');
    if ((d == std::string::npos ? known : known.substr(d + 1)) == point)
      same_point += (same_point.empty() ? "" : ", ") + known;
    if (count++ < 12) all += (all.empty() ? "" : ", ") + known;
  }
  if (!same_point.empty()) return same_point;
  return all + (by_name.size() > 12 ? ", ... (" + std::to_string(by_name.size()) + " in all)" : "");
}

// A hook's replacement must stand where the value stood: the same shape, dtype and device.
void check_replacement(const HookContext& context, const Tensor& value, const Tensor& out) {
  const bool head = context.head >= 0;
  const std::string where =
      "hook at " + context.name + (head ? " (head " + std::to_string(context.head) + ")" : "");
  const std::string replaced = head ? "the head's slice it replaces" : "the value it replaces";
  if (out.shape() != value.shape())
    throw ShapeError(where + ": the replacement " + out.describe() + " must have the shape " +
                     shape_str(value.shape()) + " of " + replaced);
  if (out.dtype() != value.dtype())
    throw DTypeError(where + ": the replacement " + out.describe() + " must be " +
                     headgrad::to_string(value.dtype()) + " like " + replaced +
                     " (convert it with .to(" + headgrad::to_string(value.dtype()) + "))");
  if (out.device() != value.device())
    throw DeviceError(where + ": the replacement is on " + out.device().str() + " but " + replaced +
                      " is on " + value.device().str() + " (move it with .to())");
}

// value with head h (dim 1) replaced by `part` (value's shape without dim 1).
Tensor with_head(const Tensor& value, std::int64_t h, const Tensor& part) {
  std::vector<Tensor> heads;
  for (std::int64_t i = 0; i < value.size(1); ++i)
    heads.push_back(i == h ? part : select(value, 1, i));
  return stack(heads, 1);
}

}  // namespace

Hooks::Hooks(const nn::Module& model) : nn::HookHandler("inspect::Hooks") {
  std::map<std::string, std::int64_t> seen;  // own name -> points of that name so far
  for (const auto& [path, module] : model.named_modules()) {
    const auto* heads = dynamic_cast<const nn::AttentionHeads*>(module.get());
    for (const auto& [own, point] : module->hook_points()) {
      Site site;
      site.context.module = path;
      site.context.point = own;
      site.context.per_head = point->per_head();
      site.context.name = path.empty() ? own : path + "." + own;
      site.context.layer = seen[own]++;
      site.heads = heads && point->per_head() ? heads->head_count() : 0;
      by_name_[site.context.name] = sites_.size();
      by_id_[point->id()] = sites_.size();
      sites_.push_back(std::move(site));
    }
  }
}

std::size_t Hooks::site_index(const std::string& name) const {
  const auto it = by_name_.find(name);
  if (it == by_name_.end())
    throw IndexError("inspect::Hooks: the model has no hook point '" + name +
                     "' (known: " + known_names(by_name_, name) + ")");
  return it->second;
}

void Hooks::append(Site& site, Entry entry) {
  if (!entry.fn)
    throw ValueError("inspect::Hooks::add: the hook for '" + site.context.name +
                     "' is an empty function; pass a callable (value, context) -> Tensor");
  auto entries =
      site.entries ? std::make_shared<Entries>(*site.entries) : std::make_shared<Entries>();
  entries->push_back(std::move(entry));
  if (!site.entries) ++hooked_;
  site.entries = std::move(entries);
}

Hooks& Hooks::add(const std::string& name, HookFn fn) {
  append(sites_[site_index(name)], {-1, std::move(fn)});
  return *this;
}

Hooks& Hooks::add(const std::string& name, std::int64_t head, HookFn fn) {
  Site& site = sites_[site_index(name)];
  if (!site.context.per_head)
    throw ValueError("inspect::Hooks: '" + name + "' has no head axis; head hooks go on q, k, v, " +
                     "scores, pattern, z or result (add the hook without a head)");
  if (head < 0 || (site.heads > 0 && head >= site.heads))
    throw IndexError("inspect::Hooks: head " + std::to_string(head) + " of '" + name +
                     "' is out of range for " + std::to_string(site.heads) + " heads");
  append(site, {head, std::move(fn)});
  return *this;
}

void Hooks::clear() {
  for (Site& site : sites_) site.entries.reset();
  hooked_ = 0;
}

std::vector<std::string> Hooks::names() const {
  std::vector<std::string> out;
  for (const Site& site : sites_) out.push_back(site.context.name);
  return out;
}

bool Hooks::contains(const std::string& name) const { return by_name_.count(name) != 0; }

HookContext Hooks::context(const std::string& name) const {
  return sites_[site_index(name)].context;
}

std::vector<std::string> Hooks::names_at(const std::string& point) const {
  std::vector<std::string> out;
  for (const Site& site : sites_)
    if (site.context.point == point) out.push_back(site.context.name);
  return out;
}

std::vector<std::string> Hooks::point_names() const {
  std::vector<std::string> out;
  for (const Site& site : sites_)
    if (std::find(out.begin(), out.end(), site.context.point) == out.end())
      out.push_back(site.context.point);
  return out;
}

std::int64_t Hooks::heads_at(const std::string& name) const {
  return sites_[site_index(name)].heads;
}

Hooks::Scope::Scope(Hooks* hooks) : scope_(hooks) {}

bool Hooks::wants(const nn::HookPoint& point) const {
  if (hooked_ == 0) return false;
  const auto it = by_id_.find(point.id());
  return it != by_id_.end() && sites_[it->second].entries != nullptr;
}

Tensor Hooks::apply(const nn::HookPoint& point, const Tensor& value) {
  const Site& site = sites_[by_id_.at(point.id())];
  // The list as it is now: a hook that adds or clears hooks swaps in a new one.
  const std::shared_ptr<const Entries> entries = site.entries;
  if (!entries) return value;
  Tensor current = value;
  for (const Entry& entry : *entries) {
    HookContext context = site.context;
    context.head = entry.head;
    if (entry.head < 0) {
      const Tensor out = entry.fn(current, context);
      if (!out.defined() || out.impl() == current.impl()) continue;
      check_replacement(context, current, out);
      current = out;
      continue;
    }
    if (entry.head >= current.size(1))
      throw IndexError("hook at " + context.name + ": head " + std::to_string(entry.head) +
                       " is out of range for the " + std::to_string(current.size(1)) +
                       " heads of " + current.describe());
    const Tensor part = select(current, 1, entry.head);
    const Tensor out = entry.fn(part, context);
    if (!out.defined() || out.impl() == part.impl()) continue;
    check_replacement(context, part, out);
    current = with_head(current, entry.head, out);
  }
  return current;
}

// --- ActivationCache ------------------------------------------------------------------

Tensor ActivationCache::get(const std::string& name) const {
  const auto it = values_.find(name);
  if (it != values_.end()) return it->second;
  std::string known;
  for (const auto& [n, v] : values_) known += (known.empty() ? "" : ", ") + n;
  throw IndexError("inspect::ActivationCache: nothing cached under '" + name +
                   "' (cached: " + (known.empty() ? "nothing" : known) + ")");
}

Tensor ActivationCache::grad(const std::string& name) const {
  const Tensor g = get(name).grad();
  if (!g.defined())
    throw Error("inspect::ActivationCache::grad: '" + name + "' has no gradient: cache with " +
                "CacheOptions::with_grads and call backward on the run's output first");
  return g;
}

std::vector<std::string> ActivationCache::names() const {
  std::vector<std::string> out;
  for (const auto& [n, v] : values_) out.push_back(n);
  return out;
}

CachedRun run_with_cache(const nn::Module& model, const std::function<Tensor()>& forward,
                         const CacheOptions& options, Hooks* hooks) {
  if (!options.names.empty()) {
    const Hooks known(model);
    for (const std::string& name : options.names) (void)known.context(name);  // IndexError
  }
  Capture recorder(model, options.names, options.with_grads);
  std::optional<Hooks::Scope> hooks_scope;
  if (hooks != nullptr && !hooks->active_on_this_thread()) hooks_scope.emplace(hooks->activate());
  CachedRun run;
  {
    auto scope = recorder.activate();
    run.output = forward();
    scope.end();
  }
  if (hooks_scope) hooks_scope->end();
  for (const std::string& name : recorder.names()) {
    const Tensor value = recorder.get(name);
    run.cache.set(name, options.with_grads && value.requires_grad() ? value : value.detach());
  }
  return run;
}

}  // namespace headgrad::inspect
