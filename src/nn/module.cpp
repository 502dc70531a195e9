// Module registry, modes, dtype conversion and state dicts (see nn/module.hpp).
#include "headgrad/nn/module.hpp"

#include <algorithm>
#include <atomic>
#include <sstream>

#include "core/cuda_backend.hpp"
#include "headgrad/autograd/grad_mode.hpp"
#include "headgrad/core/error.hpp"
#include "headgrad/nn/hooks.hpp"

namespace headgrad::nn {

// --- registration ---------------------------------------------------------------------

namespace {
std::uint64_t next_instance_id() {
  static std::atomic<std::uint64_t> counter{1};
  return counter.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace

Module::Module(std::string type_name)
    : type_name_(std::move(type_name)), instance_id_(next_instance_id()) {}

void Module::check_new_name(const std::string& name) const {
  if (name.empty() || name.find('.') != std::string::npos)
    throw ValueError(type_name_ +
                     ": a parameter, buffer, submodule or hook point name must be non-empty " +
                     "and contain no '.', got '" + name + "'");
  auto taken = [&](const auto& list) {
    return std::any_of(list.begin(), list.end(), [&](const auto& e) { return e.first == name; });
  };
  if (taken(parameters_) || taken(buffers_) || taken(children_) || taken(hook_points_))
    throw ValueError(type_name_ + ": the name '" + name + "' is already registered");
}

Tensor& Module::register_parameter(const std::string& name, Tensor tensor, bool requires_grad) {
  check_new_name(name);
  if (tensor.defined()) {
    if (!tensor.is_leaf())
      throw AutogradError(type_name_ + ": parameter '" + name +
                          "' must be a leaf tensor (detach it first)");
    tensor.requires_grad_(requires_grad);
    if (tensor.name().empty()) tensor.set_name(name);
  }
  parameters_.emplace_back(name, std::move(tensor));
  return parameters_.back().second;
}

Tensor& Module::register_buffer(const std::string& name, Tensor tensor) {
  check_new_name(name);
  buffers_.emplace_back(name, std::move(tensor));
  return buffers_.back().second;
}

void Module::register_module_impl(const std::string& name, std::shared_ptr<Module> module) {
  check_new_name(name);
  if (!module) throw ValueError(type_name_ + ": submodule '" + name + "' is null");
  children_.emplace_back(name, std::move(module));
}

// --- traversal --------------------------------------------------------------------------

void Module::collect(const std::string& prefix, bool recurse, bool buffers,
                     std::vector<std::pair<std::string, Tensor>>& out) const {
  for (const auto& [name, t] : buffers ? buffers_ : parameters_)
    if (t.defined()) out.emplace_back(prefix + name, t);
  if (!recurse) return;
  for (const auto& [name, child] : children_)
    child->collect(prefix + name + ".", true, buffers, out);
}

std::vector<std::pair<std::string, Tensor>> Module::named_parameters(bool recurse) const {
  std::vector<std::pair<std::string, Tensor>> out;
  collect("", recurse, false, out);
  return out;
}

std::vector<std::pair<std::string, Tensor>> Module::named_buffers(bool recurse) const {
  std::vector<std::pair<std::string, Tensor>> out;
  collect("", recurse, true, out);
  return out;
}

std::vector<Tensor> Module::parameters(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& [name, t] : named_parameters(recurse)) out.push_back(t);
  return out;
}

std::vector<std::pair<std::string, std::shared_ptr<Module>>> Module::named_children() const {
  return children_;
}

std::vector<std::pair<std::string, std::shared_ptr<const Module>>> Module::named_modules() const {
  std::vector<std::pair<std::string, std::shared_ptr<const Module>>> out;
  // Depth first with an explicit stack (module trees can be deep).
  std::vector<std::pair<std::string, const Module*>> stack{{"", this}};
  while (!stack.empty()) {
    auto [prefix, m] = stack.back();
    stack.pop_back();
    std::shared_ptr<const Module> owned;
    try {
      owned = m->shared_from_this();
    } catch (const std::bad_weak_ptr&) {
      // A module on the stack: a non-owning handle.
      owned = std::shared_ptr<const Module>(std::shared_ptr<const Module>(), m);
    }
    out.emplace_back(prefix, owned);
    for (auto it = m->children_.rbegin(); it != m->children_.rend(); ++it)
      stack.emplace_back(prefix.empty() ? it->first : prefix + "." + it->first, it->second.get());
  }
  return out;
}

const HookPoint& Module::register_hook_point(const std::string& name, bool per_head) {
  auto point = std::make_shared<HookPoint>(per_head);
  add_hook_point(name, point);
  return *point;
}

void Module::add_hook_point(const std::string& name, std::shared_ptr<HookPoint> point) {
  if (!point) throw ValueError(type_name_ + ".add_hook_point('" + name + "'): no hook point given");
  check_new_name(name);
  point->set_registration(name, type_name_);
  hook_points_.emplace_back(name, std::move(point));
}

std::vector<std::pair<std::string, std::shared_ptr<const HookPoint>>> Module::hook_points() const {
  return {hook_points_.begin(), hook_points_.end()};
}

std::vector<std::pair<std::string, std::shared_ptr<const HookPoint>>> Module::named_hook_points()
    const {
  std::vector<std::pair<std::string, std::shared_ptr<const HookPoint>>> out;
  for (const auto& [path, module] : named_modules())
    for (const auto& [name, point] : module->hook_points_)
      out.emplace_back(path.empty() ? name : path + "." + name, point);
  return out;
}

Tensor Module::parameter(const std::string& dotted_name) const {
  auto all = named_parameters();
  for (auto& [name, t] : all)
    if (name == dotted_name) return t;
  std::string known;
  for (auto& [name, t] : all) known += (known.empty() ? "" : ", ") + name;
  throw IndexError(type_name_ + ": no parameter '" + dotted_name + "' (parameters: " + known + ")");
}

std::int64_t Module::num_parameters(bool trainable_only) const {
  std::int64_t n = 0;
  for (auto& [name, t] : named_parameters())
    if (!trainable_only || t.requires_grad()) n += t.numel();
  return n;
}

// --- modes and conversion ----------------------------------------------------------------

void Module::train(bool on) {
  training_ = on;
  for (auto& [name, child] : children_) child->train(on);
}

void Module::zero_grad() {
  for (auto& [name, t] : named_parameters()) t.zero_grad();
}

// --- copies ---------------------------------------------------------------------------

std::shared_ptr<Module> Module::clone() const {
  throw Error(type_name_ + ".clone: a " + type_name_ + " cannot be rebuilt from options; " +
              "copy a module of a concrete type (GPT, Linear, ...) or one written in Python " +
              "(copy.deepcopy)");
}

namespace {

// dst takes a copy of src: its own storage, src's dtype, device, requires_grad and grad.
void copy_tensor(const Tensor& src, const Tensor& dst, const std::string& where) {
  if (src.defined() != dst.defined() || (src.defined() && src.shape() != dst.shape()))
    throw Error(where + ": the copy's tensor " + (dst.defined() ? dst.describe() : "(none)") +
                " does not match the original's " + (src.defined() ? src.describe() : "(none)"));
  if (!src.defined()) return;
  const Tensor data = src.detach().clone();
  TensorImpl* impl = dst.impl();
  impl->storage = data.impl()->storage;
  impl->offset = data.impl()->offset;
  impl->dtype = data.dtype();
  impl->grad = src.grad().defined() ? src.grad().detach().clone() : Tensor();
  Tensor handle = dst;  // the same tensor: the copy's registered handle
  if (is_floating(handle.dtype())) handle.requires_grad_(src.requires_grad());
}

void copy_tensors(const std::vector<std::pair<std::string, Tensor>>& from,
                  const std::vector<std::pair<std::string, Tensor>>& to, const std::string& who) {
  if (from.size() != to.size())
    throw Error(who + ".clone: the copy has " + std::to_string(to.size()) + " tensors where the " +
                "original has " + std::to_string(from.size()));
  for (std::size_t i = 0; i < from.size(); ++i) {
    if (from[i].first != to[i].first)
      throw Error(who + ".clone: the copy's tensor '" + to[i].first + "' stands where the " +
                  "original has '" + from[i].first + "'");
    copy_tensor(from[i].second, to[i].second, who + ".clone: '" + from[i].first + "'");
  }
}

}  // namespace

void Module::copy_state_into(Module& copy) const {
  NoGradGuard no_grad;
  copy_tensors(named_parameters(), copy.named_parameters(), type_name_);
  copy_tensors(named_buffers(), copy.named_buffers(), type_name_);
  const auto mine = named_modules();
  const auto theirs = copy.named_modules();
  for (std::size_t i = 0; i < mine.size() && i < theirs.size(); ++i)
    std::const_pointer_cast<Module>(theirs[i].second)->training_ = mine[i].second->training_;
}

void Module::to(DType dtype) {
  if (!is_floating(dtype))
    throw DTypeError(type_name_ + ".to: modules convert only to a floating dtype, got " +
                     headgrad::to_string(dtype));
  NoGradGuard no_grad;
  auto convert = [&](const Tensor& t) {
    if (!is_floating(t.dtype()) || t.dtype() == dtype) return;
    Tensor converted = t.detach().to(dtype);
    TensorImpl* impl = t.impl();
    impl->storage = converted.impl()->storage;
    impl->offset = converted.impl()->offset;
    impl->dtype = dtype;
    impl->grad = Tensor();
  };
  for (auto& [name, t] : named_parameters()) convert(t);
  for (auto& [name, t] : named_buffers()) convert(t);
}

void Module::to(Device device) {
  if (device.is_cuda()) cuda::check_device(device.index(), (type_name_ + ".to").c_str());
  NoGradGuard no_grad;
  auto move = [&](const Tensor& t) {
    if (!t.defined() || t.device() == device) return;
    Tensor moved = t.detach().to(device);
    TensorImpl* impl = t.impl();
    impl->storage = moved.impl()->storage;
    impl->offset = moved.impl()->offset;
    impl->grad = Tensor();
  };
  for (auto& [name, t] : named_parameters()) move(t);
  for (auto& [name, t] : named_buffers()) move(t);
}

Device Module::device() const {
  for (auto& [name, t] : named_parameters()) return t.device();
  for (auto& [name, t] : named_buffers()) return t.device();
  return Device::cpu();
}

// --- state dict ---------------------------------------------------------------------------

StateDict Module::state_dict() const {
  StateDict out;
  for (auto& [name, t] : named_parameters()) out.insert(name, t.detach().clone());
  for (auto& [name, t] : named_buffers()) out.insert(name, t.detach().clone());
  return out;
}

Module::LoadResult Module::load_state_dict(const StateDict& state, bool strict) {
  auto targets = named_parameters();
  for (auto& b : named_buffers()) targets.push_back(b);

  LoadResult result;
  std::vector<std::string> problems;
  for (auto& [name, t] : targets) {
    const Tensor* src = state.find(name);
    if (!src) {
      result.missing_keys.push_back(name);
      continue;
    }
    if (!src->defined())
      problems.push_back("'" + name + "' is undefined");
    else if (src->shape() != t.shape())
      problems.push_back("'" + name + "' has shape " + shape_str(src->shape()) +
                         ", the module expects " + shape_str(t.shape()));
    else if (is_floating(t.dtype()) != is_floating(src->dtype()))
      problems.push_back("'" + name + "' has dtype " + headgrad::to_string(src->dtype()) +
                         ", the module holds " + headgrad::to_string(t.dtype()));
  }
  for (const auto& entry : state) {
    const std::string& name = entry.first;
    bool known =
        std::any_of(targets.begin(), targets.end(), [&](const auto& e) { return e.first == name; });
    if (!known) result.unexpected_keys.push_back(name);
  }
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (auto& x : v) s += (s.empty() ? "" : ", ") + x;
    return s;
  };
  if (strict && !result.missing_keys.empty())
    problems.push_back("missing keys: " + join(result.missing_keys));
  if (strict && !result.unexpected_keys.empty())
    problems.push_back("unexpected keys: " + join(result.unexpected_keys));
  if (!problems.empty())
    throw ValueError(type_name_ + ".load_state_dict: nothing was loaded: " + join(problems));

  NoGradGuard no_grad;
  for (auto& [name, t] : targets)
    if (const Tensor* src = state.find(name)) t.copy_(*src);
  return result;
}

// --- printing ---------------------------------------------------------------------------

void Module::describe(std::string& out, int indent) const {
  out += type_name_ + "(" + extra_repr();
  if (children_.empty()) {
    out += ")";
    return;
  }
  out += "\n";
  for (const auto& [name, child] : children_) {
    out += std::string(indent + 2, ' ') + "(" + name + "): ";
    child->describe(out, indent + 2);
    out += "\n";
  }
  out += std::string(indent, ' ') + ")";
}

std::string Module::to_string() const {
  std::string out;
  describe(out, 0);
  return out;
}

}  // namespace headgrad::nn
