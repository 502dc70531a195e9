// Module: the base of every layer. Parameters, buffers and submodules are registered by
// name, so named_parameters() and state_dict() use PyTorch's dotted names
// ("out_proj.weight"). Forward functions are not virtual: each module declares the
// forward that fits it, as in the PyTorch C++ frontend.
//
// Registered tensors are shared handles: converting a module (to(dtype)) or loading a
// state dict changes the tensors in place, so a module's member handles and the registry
// always see the same data.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "headgrad/core/state_dict.hpp"
#include "headgrad/core/tensor.hpp"

namespace headgrad::nn {

class HookPoint;  // nn/hooks.hpp

// The state dict type lives in core (optimizers and checkpoints use it too); nn::StateDict
// is the name PyTorch users look for.
using headgrad::StateDict;

class Module : public std::enable_shared_from_this<Module> {
 public:
  explicit Module(std::string type_name = "Module");
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  const std::string& type_name() const { return type_name_; }
  // A number no other module of this process has had: hooks and captures know modules by
  // it, not by address, so a module allocated where a destroyed one lived is a new module.
  std::uint64_t instance_id() const { return instance_id_; }

  // --- parameters, buffers, submodules (registration order; recurse = children too) ---
  std::vector<Tensor> parameters(bool recurse = true) const;
  std::vector<std::pair<std::string, Tensor>> named_parameters(bool recurse = true) const;
  std::vector<std::pair<std::string, Tensor>> named_buffers(bool recurse = true) const;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_children() const;
  // This module (under the name "") and every descendant, depth first.
  std::vector<std::pair<std::string, std::shared_ptr<const Module>>> named_modules() const;
  // The parameter of that dotted name; throws IndexError listing the known names.
  Tensor parameter(const std::string& dotted_name) const;
  std::int64_t num_parameters(bool trainable_only = false) const;  // element count

  // --- copies ----------------------------------------------------------------------
  // A new module of the same type and options holding copies of this one's parameters and
  // buffers (values, dtype, device, requires_grad and grad, in storage of their own) and the
  // same training modes: Python's copy.deepcopy(model). A copy's dropout draws from the
  // default generator. Error for a module type that cannot be rebuilt from its options (a
  // plain Module; modules written in Python are copied in Python).
  virtual std::shared_ptr<Module> clone() const;

  // --- modes -----------------------------------------------------------------------
  virtual void train(bool on = true);  // recursive
  void eval() { train(false); }
  bool is_training() const { return training_; }

  // Drops the gradient of every parameter (PyTorch's zero_grad(set_to_none=True)).
  void zero_grad();

  // Converts every floating parameter and buffer to `dtype`, in place (float64 for
  // gradient checks and oracle tests). Gradients are dropped.
  void to(DType dtype);
  // Moves every parameter and buffer to `device`, in place: the same Tensor handles (and
  // so any optimizer holding them) now refer to device memory, as module.to(device) in
  // PyTorch. Gradients are dropped. Build the optimizer after moving, or move before the
  // first step: optimizer state made on another device is rejected when it is used.
  void to(Device device);
  // The device of the first parameter (or buffer); cpu for a module without any.
  Device device() const;

  // --- state dict --------------------------------------------------------------------
  // Parameters and buffers under their dotted names; the tensors are detached copies.
  StateDict state_dict() const;
  // Copies values into the registered tensors (converting dtype). Everything is checked
  // before anything is written: with strict, missing or unexpected names are errors; a
  // shape mismatch is always one. The error lists every offending name. Returns the
  // names that were missing and unexpected (empty with strict).
  struct LoadResult {
    std::vector<std::string> missing_keys;
    std::vector<std::string> unexpected_keys;
  };
  LoadResult load_state_dict(const StateDict& state, bool strict = true);

  // A multi-line description of the module tree, as print(module) in PyTorch.
  std::string to_string() const;

  // --- hook points (nn/hooks.hpp): the places in forward where handlers read and edit --
  // A new point owned by this module under `name` (not yet taken by a parameter, buffer,
  // submodule or point); the module passes a tensor through it in forward.
  const HookPoint& register_hook_point(const std::string& name, bool per_head = false);
  // Adopts `point` under `name` (a module written in Python: self.hook_x = HookPoint()).
  void add_hook_point(const std::string& name, std::shared_ptr<HookPoint> point);
  // This module's own points, in registration order.
  std::vector<std::pair<std::string, std::shared_ptr<const HookPoint>>> hook_points() const;
  // Every point of this module and its descendants as "<module path>.<name>" ("<name>" for
  // this module's own), in named_modules() order.
  std::vector<std::pair<std::string, std::shared_ptr<const HookPoint>>> named_hook_points() const;

  // --- registration from outside (torch's public register_parameter / register_buffer /
  // add_module): what a module written in Python does as its attributes are assigned.
  // The same as the protected register_* functions a C++ module calls on its members.
  Tensor& add_parameter(const std::string& name, Tensor tensor, bool requires_grad = true) {
    return register_parameter(name, std::move(tensor), requires_grad);
  }
  Tensor& add_buffer(const std::string& name, Tensor tensor) {
    return register_buffer(name, std::move(tensor));
  }
  void add_module(const std::string& name, std::shared_ptr<Module> module) {
    register_module_impl(name, std::move(module));
  }

 protected:
  // Registers a parameter (a leaf; requires_grad set to `requires_grad`) or, for an
  // undefined tensor, records that the optional parameter is absent (PyTorch's
  // register_parameter(name, None)). Returns the stored handle.
  Tensor& register_parameter(const std::string& name, Tensor tensor, bool requires_grad = true);
  Tensor& register_buffer(const std::string& name, Tensor tensor);
  template <typename M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    register_module_impl(name, module);
    return module;
  }
  // clone() of a concrete type: `copy` is built from this module's options (so it has the
  // same parameters, buffers and submodules) and takes this module's state (copy_state_into).
  template <typename M>
  std::shared_ptr<Module> cloned(std::shared_ptr<M> copy) const {
    copy_state_into(*copy);
    return copy;
  }
  // Every parameter and buffer of `copy` takes a copy of this module's tensor of the same
  // name (values, dtype, device, requires_grad, grad), and every submodule its training
  // mode. Error naming the tensor when the two modules' structures differ.
  void copy_state_into(Module& copy) const;
  // One line of extra description for to_string(), e.g. "in_features=4, out_features=2".
  virtual std::string extra_repr() const { return {}; }

 private:
  void register_module_impl(const std::string& name, std::shared_ptr<Module> module);
  void check_new_name(const std::string& name) const;
  void collect(const std::string& prefix, bool recurse, bool buffers,
               std::vector<std::pair<std::string, Tensor>>& out) const;
  void describe(std::string& out, int indent) const;

  std::string type_name_;
  std::uint64_t instance_id_;
  bool training_ = true;
  std::vector<std::pair<std::string, Tensor>> parameters_;
  std::vector<std::pair<std::string, Tensor>> buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  std::vector<std::pair<std::string, std::shared_ptr<HookPoint>>> hook_points_;
};

// An indexable list of submodules, registered under the names "0", "1", ... (as
// torch.nn.ModuleList), so their parameters read "heads.0.q_proj.weight".
template <typename M>
class ModuleList : public Module {
 public:
  ModuleList() : Module("ModuleList") {}
  void push_back(std::shared_ptr<M> module) {
    register_module(std::to_string(items_.size()), module);
    items_.push_back(std::move(module));
  }
  std::size_t size() const { return items_.size(); }
  const std::shared_ptr<M>& operator[](std::size_t i) const { return items_.at(i); }
  typename std::vector<std::shared_ptr<M>>::const_iterator begin() const { return items_.begin(); }
  typename std::vector<std::shared_ptr<M>>::const_iterator end() const { return items_.end(); }

 private:
  std::vector<std::shared_ptr<M>> items_;
};

}  // namespace headgrad::nn
