// inspect::Capture: records a model's activations at its hook points (nn/hooks.hpp) while
// it is active on a thread: a read-only hook handler, as inspect::Hooks is an editing one
// (one mechanism; run_with_cache is a Capture for one run). Each recorded tensor is kept
// under the point's full name, "<module path>.<point>", e.g. "layers.0.self_attn.pattern";
// after backward, grad(name) gives its gradient.
//
//   inspect::Capture capture(model, {"pattern", "z"});
//   {
//     auto scope = capture.activate();  // this thread, until scope ends
//     Tensor loss = ...model(tokens)...;
//     loss.backward();
//   }
//   Tensor pattern = capture.get("layers.0.self_attn.pattern");  // (N, H, L, S)
//   Tensor dz = capture.grad("layers.0.self_attn.z");            // (N, H, L, d)
//
// Which points: each entry of `points` is a point's own name ("pattern": that point of every
// module that has one) or a full name ("layers.1.self_attn.pattern"); the default is the
// attention layers' per-head points (head_points()), an empty list every point of the
// model. The attention points and their shapes are in nn/hooks.hpp: q, k, v (N, H, L|S', d),
// scores and pattern (N, H, L, S'), z (N, H, L, d) and result (N, H, L, E), whose sum over
// heads plus out_proj.bias is the layer's output.
//
// A capture runs after the active hooks that edit (nn/handler_scope.hpp), so it records the
// tensors the forward used. Each name holds the tensor of the latest forward through that
// point (a layer called twice in one forward keeps the second call). The values are the
// graph's own tensors; with retain_grads (default) and grad mode on, their gradients are
// kept by backward.
//
// Cost. Off (no handler active on the thread, the default) a hook point costs one
// thread-local load. On, the capture keeps the recorded tensors (and their gradients) alive,
// and an attention layer with a recorded point runs its composed path; recording result
// computes the output projection as H batched products and a sum instead of one GEMM, which
// changes the output's rounding (not its value) and costs more. Measured costs are in
// docs/research/heads.md.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "headgrad/core/tensor.hpp"
#include "headgrad/nn/hooks.hpp"
#include "headgrad/nn/module.hpp"

namespace headgrad::inspect {

// The attention layers' per-head points: q, k, v, scores, pattern, z, result.
const std::vector<std::string>& head_points();

class Capture final : public nn::HookHandler {
 public:
  // Records the chosen points of `model` and its descendants (which must outlive the
  // capture's use); IndexError naming the model's points for an entry that matches none.
  explicit Capture(const nn::Module& model, const std::vector<std::string>& points = head_points(),
                   bool retain_grads = true);

  // Makes this capture active on the calling thread until the scope ends (end(), or its
  // destructor; move-only). Scopes form a checked stack per thread (nn/handler_scope.hpp):
  // ending one out of order or from another thread is an Error that changes nothing;
  // destroying the capture ends its scopes.
  class Scope {
   public:
    explicit Scope(Capture* capture) : scope_(capture) {}
    void end() { scope_.end(); }
    bool active() const { return scope_.active(); }

   private:
    nn::HandlerScope scope_;
  };
  [[nodiscard]] Scope activate() { return Scope(this); }

  // The recorded tensor of that full name; IndexError listing the recorded names.
  Tensor get(const std::string& name) const;
  // Its gradient after backward; Error when it was recorded without a gradient (grad
  // mode off, nothing upstream requiring grad, retain_grads off) or backward has not
  // reached it.
  Tensor grad(const std::string& name) const;
  bool contains(const std::string& name) const;
  std::vector<std::string> names() const;        // recorded, sorted
  std::vector<std::string> layer_names() const;  // modules with a chosen point, model order
  void clear();                                  // drops every recorded tensor

  // --- nn::HookHandler: what the hook points call -------------------------------------
  bool wants(const nn::HookPoint& point) const override { return chosen_.count(point.id()) != 0; }
  // Keeps `value` under the point's full name (retaining its gradient with retain_grads)
  // and returns it unchanged.
  Tensor apply(const nn::HookPoint& point, const Tensor& value) override;

 private:
  std::unordered_map<std::uint64_t, std::string> chosen_;  // HookPoint::id() -> full name
  std::vector<std::string> layer_order_;
  bool retain_grads_ = true;
  std::map<std::string, Tensor> recorded_;
};

}  // namespace headgrad::inspect
