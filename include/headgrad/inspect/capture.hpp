// inspect::Capture: per-head taps on the attention layers of a model. While a capture is
// active on a thread, every attention layer it watches (nn::MultiheadAttention and
// nn::HeadwiseMultiheadAttention, anywhere in the model) records the chosen tensors of its
// forward pass under "<layer path>.<tap>", e.g. "layers.0.self_attn.pattern"; after
// backward, grad(name) gives their gradients.
//
//   inspect::Capture capture(model, {inspect::Tap::pattern, inspect::Tap::z});
//   {
//     auto scope = capture.activate();  // this thread, until scope ends
//     Tensor loss = ...model(tokens)...;
//     loss.backward();
//   }
//   Tensor pattern = capture.get("layers.0.self_attn.pattern");  // (N, H, L, S)
//   Tensor dz = capture.grad("layers.0.self_attn.z");            // (N, H, L, d)
//
// The taps and their shapes are nn's (nn/attention_observer.hpp): q, k, v (N, H, L|S', d),
// scores and pattern (N, H, L, S'), z (N, H, L, d) and contribution (N, H, L, E), whose
// sum over heads plus out_proj.bias is the layer's output. Capture is the observer the
// layers report to while its scope is active.
//
// nn::KerasMultiHeadAttention is not an AttentionLayer and records nothing; convert it with
// to_torch() to inspect it.
//
// Each name holds the tensors of the latest forward through that layer (a layer called
// twice in one forward keeps the second call). The values are the graph's own tensors;
// with retain_grads (default) and grad mode on, their gradients are kept by backward.
//
// Cost. Off (no capture active on the thread, the default) an attention layer pays one
// thread-local pointer load per forward. On, it keeps the tapped tensors (and their
// gradients) alive; the per-head layout stacks its heads' tensors when get() is called;
// tapping contribution computes the output projection as H batched products and a sum
// instead of one GEMM, which changes the output's rounding (not its value) and costs more.
// Measured costs are in docs/research/heads.md.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "headgrad/core/tensor.hpp"
#include "headgrad/nn/attention_observer.hpp"
#include "headgrad/nn/module.hpp"

namespace headgrad::inspect {

using Tap = nn::AttentionTap;

const std::vector<Tap>& all_taps();
std::string to_string(Tap tap);          // "q", ..., "contribution"
Tap parse_tap(const std::string& name);  // ValueError listing the tap names

class Capture final : public nn::AttentionObserver {
 public:
  // Watches every attention layer of `model` (the model itself included) and records the
  // taps in `taps`. `model` must outlive the capture's use.
  explicit Capture(const nn::Module& model, std::vector<Tap> taps = all_taps(),
                   bool retain_grads = true);

  // Makes this capture the active one on the calling thread until the scope ends (end(),
  // or its destructor; move-only); then the observer active before it is active again.
  // Scopes form a checked stack per thread (nn/handler_scope.hpp): ending one out of order
  // or from another thread is an Error that changes nothing; destroying the capture ends
  // its scopes.
  class Scope {
   public:
    explicit Scope(Capture* capture);
    void end() { scope_.end(); }
    bool active() const { return scope_.active(); }

   private:
    nn::HandlerScope scope_;
  };
  [[nodiscard]] Scope activate() { return Scope(this); }

  // The recorded tensor "<layer>.<tap>" (N, H, ...); IndexError listing the recorded names.
  Tensor get(const std::string& name) const;
  // Its gradient after backward; Error when it was recorded without a gradient (grad
  // mode off, nothing upstream requiring grad, retain_grads off) or backward has not
  // reached it.
  Tensor grad(const std::string& name) const;
  bool contains(const std::string& name) const;
  std::vector<std::string> names() const;        // recorded, sorted
  std::vector<std::string> layer_names() const;  // watched layers, model order
  void clear();                                  // drops every recorded tensor

  // --- nn::AttentionObserver: what the attention layers call ----------------------------
  bool watches(const nn::Module* layer) const { return layers_.count(layer->instance_id()) != 0; }
  bool wants(const nn::Module* layer, Tap tap) const override;
  // Keeps one (N, H, ...) tensor, or H per-head tensors (N, ...) stacked on dim 1 when
  // read, retaining their gradients (retain_grads); ignores taps it does not want.
  void report(const nn::Module* layer, Tap tap, std::vector<Tensor> parts, bool per_head) override;

 private:
  struct Entry {
    std::vector<Tensor> parts;  // one (N, H, ...) or H of (N, ...)
    bool per_head = false;
  };
  const Entry& entry(const std::string& name) const;

  std::unordered_map<std::uint64_t, std::string> layers_;  // by Module::instance_id()
  std::vector<std::string> layer_order_;
  std::vector<bool> selected_;  // indexed by Tap
  bool retain_grads_ = true;
  std::map<std::string, Entry> entries_;
};

// The capture active on this thread, or null (taps off, or another observer is active).
Capture* active_capture();

}  // namespace headgrad::inspect
