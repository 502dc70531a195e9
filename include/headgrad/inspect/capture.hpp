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
// Taps, whatever the layer's batch_first or batching (N = 1 for unbatched input), with
// H heads, d = head_dim, E = embed_dim, S' = keys after add_bias_kv / add_zero_attn:
//   q             (N, H, L, d)   the projected query of each head, as the scores read it
//   k, v          (N, H, S', d)
//   scores        (N, H, L, S')  scaled q k^T after masking (-inf where blocked), before softmax
//   pattern       (N, H, L, S')  softmax of the scores, before dropout
//   z             (N, H, L, d)   each head's output after its gate (see head_gates in
//                                nn/multihead_attention.hpp): what the output projection reads
//   contribution  (N, H, L, E)   z_h W_o[:, h*d:(h+1)*d]^T: the layer's output (batch first)
//                                is the sum over h of contribution plus out_proj.bias
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
#include "headgrad/nn/module.hpp"

namespace headgrad::inspect {

enum class Tap { q, k, v, scores, pattern, z, contribution };

const std::vector<Tap>& all_taps();
std::string to_string(Tap tap);          // "q", ..., "contribution"
Tap parse_tap(const std::string& name);  // ValueError listing the tap names

class Capture {
 public:
  // Watches every attention layer of `model` (the model itself included) and records the
  // taps in `taps`. `model` must outlive the capture's use.
  explicit Capture(const nn::Module& model, std::vector<Tap> taps = all_taps(),
                   bool retain_grads = true);

  // Makes this capture the active one on the calling thread until the scope ends (the
  // previously active one, if any, is restored then).
  class Scope {
   public:
    explicit Scope(Capture* capture);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    Capture* previous_;
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

  // --- for the attention layers ------------------------------------------------------
  bool watches(const nn::Module* layer) const { return layers_.count(layer) != 0; }
  bool wants(const nn::Module* layer, Tap tap) const;
  // Records one (N, H, ...) tensor, or H per-head tensors (N, ...) stacked on dim 1 when
  // read; does nothing unless wants(layer, tap).
  void record(const nn::Module* layer, Tap tap, const Tensor& value);
  void record_heads(const nn::Module* layer, Tap tap, const std::vector<Tensor>& heads);

 private:
  struct Entry {
    std::vector<Tensor> parts;  // one (N, H, ...) or H of (N, ...)
    bool per_head = false;
  };
  void store(const nn::Module* layer, Tap tap, std::vector<Tensor> parts, bool per_head);
  const Entry& entry(const std::string& name) const;

  std::unordered_map<const nn::Module*, std::string> layers_;
  std::vector<std::string> layer_order_;
  std::vector<bool> selected_;  // indexed by Tap
  bool retain_grads_ = true;
  std::map<std::string, Entry> entries_;
};

// The capture active on this thread, or null (taps off).
Capture* active_capture();

}  // namespace headgrad::inspect
