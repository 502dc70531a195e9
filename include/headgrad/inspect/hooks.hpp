// inspect::Hooks: functions at a model's hook points (nn/hooks.hpp) that read and replace
// activations, and ActivationCache: one run's activations by name. TransformerLens's
// run_with_hooks / run_with_cache, as scoped C++. Hooks, captures and caches are all hook
// handlers (nn/hooks.hpp): one mechanism.
//
// Names are "<module path>.<point>" ("<point>" for the model itself), in model order
// (Module::named_hook_points; a module written in Python adds its own, "probe.hook_x"):
//   "embed", "layers.0.resid_pre", "layers.0.self_attn.q", ..., "layers.0.self_attn.result",
//   "layers.0.attn_out", ..., "layers.1.resid_post", "ln_final", "logits"
// (TransformerLens: "hook_embed" + "hook_pos_embed", "blocks.0.hook_resid_pre",
// "blocks.0.attn.hook_q", ..., "ln_final.hook_normalized", and the logits it returns).
//
//   inspect::Hooks hooks(model);
//   hooks.add("layers.1.self_attn.z", 3, [](const Tensor& z, const inspect::HookContext&) {
//     return zeros_like(z);                       // zero-ablate head 3 of layer 1
//   });
//   {
//     auto scope = hooks.activate();              // this thread, until the scope ends
//     Tensor logits = model(tokens);              // the forward runs the hooks
//   }
//
// A hook returns the tensor the forward goes on with: the value itself (or an undefined
// tensor) to leave it unchanged, or a replacement of the same shape, dtype and device
// (ShapeError/DTypeError/DeviceError naming the hook point otherwise). Gradients flow through
// the replacement. A head hook (add with a head) receives that head's slice of a per-head
// point, (N, L, ...) with the head axis removed, and returns its replacement; the other heads
// are untouched. Hooks at one point run in the order they were added.
//
// Changing hooks while a forward runs (a hook that adds hooks or clears them) is safe: each
// point runs the hooks it had when the forward reached it, and a change applies from the
// next point reached on, as with PyTorch's module hooks. An empty HookFn is refused.
//
// Scopes: activate() pushes these hooks on the calling thread's stack (nn/handler_scope.hpp);
// Scope::end() (or the scope's destructor) pops them. Every active handler runs: two Hooks
// active at once both run, in the order they were activated, and a Capture or cache active
// with them records what the hooks made. Ending a scope out of order or from another thread
// is an Error that changes nothing; destroying a Hooks ends its scopes. Hooks know the
// points by HookPoint::id(), not by address.
//
// Cost: none while no Hooks is active on the thread (see nn/hooks.hpp); active, only the
// points with hooks do anything, but an attention layer with any hooked point runs its
// composed path.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "headgrad/core/tensor.hpp"
#include "headgrad/nn/hooks.hpp"
#include "headgrad/nn/module.hpp"

namespace headgrad::inspect {

struct HookContext {
  std::string name;       // "layers.0.self_attn.z"
  std::string module;     // "layers.0.self_attn" ("" for the model)
  std::string point;      // the point's own name: "z"
  bool per_head = false;  // the tensor has a head axis at dim 1
  // The point's index among the model's points of the same own name, in model order: the
  // attention layer (inspect::attention_layers order) for q .. result, the transformer
  // layer for resid_pre .. resid_post, 0 for the model's embed, ln_final and logits.
  std::int64_t layer = 0;
  std::int64_t head = -1;  // the head of a head hook, -1 for a hook on the whole tensor
};

using HookFn = std::function<Tensor(const Tensor& value, const HookContext& context)>;

class Hooks final : public nn::HookHandler {
 public:
  // Every hook point of `model` and its descendants (which must outlive this object's use).
  explicit Hooks(const nn::Module& model);

  // A hook on the whole tensor at `name`; IndexError listing the model's names if unknown.
  Hooks& add(const std::string& name, HookFn fn);
  // A hook on one head of a per-head point (q, k, v, scores, pattern, z, result, or a
  // point declared with per_head); ValueError for other points, IndexError for a head out
  // of range.
  Hooks& add(const std::string& name, std::int64_t head, HookFn fn);
  void clear();  // removes every hook

  std::vector<std::string> names() const;  // every hook point of the model, model order
  bool contains(const std::string& name) const;
  // The context of `name` (head -1); IndexError if unknown.
  HookContext context(const std::string& name) const;
  // The names of the points whose own name is `point` ("z"), in model order (one per
  // module with that point; empty when the model has none).
  std::vector<std::string> names_at(const std::string& point) const;
  // The distinct own names of the model's points ("q", ..., "logits"), model order.
  std::vector<std::string> point_names() const;
  // The number of heads of the attention layer `name` belongs to (0 for other points).
  std::int64_t heads_at(const std::string& name) const;

  // One activation on the calling thread (move-only): the hooks run in the forwards of this
  // thread until the scope ends (end(), or its destructor); then the handler active before
  // it is active again.
  class Scope {
   public:
    explicit Scope(Hooks* hooks);
    // Error, changing nothing, unless this is the thread's innermost scope and the calling
    // thread opened it (nn::HandlerScope::end).
    void end() { scope_.end(); }
    bool active() const { return scope_.active(); }

   private:
    nn::HandlerScope scope_;
  };
  [[nodiscard]] Scope activate() { return Scope(this); }

  // --- nn::HookHandler ---------------------------------------------------------------
  bool wants(const nn::HookPoint& point) const override;
  Tensor apply(const nn::HookPoint& point, const Tensor& value) override;

 private:
  struct Entry {
    std::int64_t head = -1;
    HookFn fn;
  };
  using Entries = std::vector<Entry>;
  struct Site {
    HookContext context;
    std::int64_t heads = 0;  // attention layers' head count, 0 elsewhere
    // Never changed in place: add and clear swap in a new list, so a forward that is
    // running a point's hooks keeps iterating the list it started with.
    std::shared_ptr<const Entries> entries;
  };
  std::size_t site_index(const std::string& name) const;  // IndexError if unknown
  void append(Site& site, Entry entry);

  std::vector<Site> sites_;                               // model order
  std::map<std::string, std::size_t> by_name_;            // name -> sites_ index
  std::unordered_map<std::uint64_t, std::size_t> by_id_;  // HookPoint::id() -> sites_ index
  std::size_t hooked_ = 0;                                // sites with entries
};

// One run's activations at hook points, by name (TransformerLens's ActivationCache).
class ActivationCache {
 public:
  Tensor get(const std::string& name) const;  // IndexError listing the cached names
  Tensor operator[](const std::string& name) const { return get(name); }
  // The gradient after a backward from the run's output (cached with gradients); Error
  // otherwise.
  Tensor grad(const std::string& name) const;
  bool contains(const std::string& name) const { return values_.count(name) != 0; }
  std::vector<std::string> names() const;  // sorted
  void set(const std::string& name, Tensor value) { values_[name] = std::move(value); }

 private:
  std::map<std::string, Tensor> values_;
};

struct CacheOptions {
  // The names to cache; empty = every hook point of the model.
  std::vector<std::string> names;
  // Keep the graph's own tensors with retain_grad, so that after a backward from the
  // output grad(name) reads their gradients. Without it the cache holds detached values.
  bool with_grads = false;
};

struct CachedRun {
  Tensor output;  // what `forward` returned
  ActivationCache cache;
};

// Runs `forward` (the model's forward on some input) once with `hooks` (if any, activated
// for the run unless already active on this thread) and every requested hook point
// recorded, by a read-only handler, after the hooks ran.
CachedRun run_with_cache(const nn::Module& model, const std::function<Tensor()>& forward,
                         const CacheOptions& options = {}, Hooks* hooks = nullptr);

}  // namespace headgrad::inspect
