// A node of the backward graph. Each differentiable op that runs in grad mode creates one
// node that knows its inputs' nodes (edges), the values it saved for backward and the
// function that maps output gradients to input gradients.
//
// Ownership (no cycles): a non-leaf tensor owns its grad_fn node; a node owns the nodes
// of its inputs through its edges, and detached copies of the values it saved. A node
// never owns its own outputs. A leaf that requires grad gets an accumulation node that
// owns the leaf, while the leaf holds only a weak pointer back to it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "headgrad/core/tensor.hpp"

namespace headgrad::autograd {

class Node;

// Where the gradient for one input of a node goes: output `input_nr` of `node`.
struct Edge {
  std::shared_ptr<Node> node;
  int input_nr = 0;
  bool valid() const { return node != nullptr; }
};

// A value saved for backward: a detached handle plus the storage version it had when
// saved, so that an in-place write in between is detected instead of giving wrong
// gradients.
struct SavedTensor {
  Tensor value;
  std::uint64_t version = 0;
};

// What a backward function sees besides the output gradients.
class BackwardContext {
 public:
  BackwardContext(const std::string& node_name, const std::vector<Tensor>& saved,
                  const std::vector<bool>& needs_grad)
      : node_name_(node_name), saved_(saved), needs_grad_(needs_grad) {}
  // The i-th value passed as `saved` to record().
  const Tensor& saved(std::size_t i) const {
    if (i >= saved_.size())
      throw AutogradError(node_name_ + ": backward asked for saved value " + std::to_string(i) +
                          " but only " + std::to_string(saved_.size()) + " were saved");
    return saved_[i];
  }
  // Whether input i needs a gradient (skip computing the ones that don't).
  bool needs_grad(std::size_t i) const {
    if (i >= needs_grad_.size())
      throw AutogradError(node_name_ + ": backward asked about input " + std::to_string(i) +
                          " of " + std::to_string(needs_grad_.size()));
    return needs_grad_[i];
  }

 private:
  const std::string& node_name_;
  const std::vector<Tensor>& saved_;
  const std::vector<bool>& needs_grad_;
};

// Maps the gradients of a node's outputs (undefined where none arrived, for
// multi-output nodes) to one gradient per input (undefined = no gradient).
using BackwardFn = std::function<std::vector<Tensor>(const std::vector<Tensor>& grad_outputs,
                                                     const BackwardContext& ctx)>;

struct InputMeta {
  Shape shape;
  DType dtype = DType::float32;
};

class Node {
 public:
  Node(std::string name, std::uint64_t sequence_nr)
      : name_(std::move(name)), sequence_nr_(sequence_nr) {}
  // Tears down long chains of nodes iteratively (a recursive chain of shared_ptr
  // destructors would overflow the stack on a 100,000-op graph).
  ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  const std::string& name() const { return name_; }
  std::uint64_t sequence_nr() const { return sequence_nr_; }
  const std::vector<Edge>& next_edges() const { return next_edges_; }
  std::size_t num_outputs() const { return output_meta_.size(); }
  bool is_accumulator() const { return leaf_ != nullptr; }
  bool released() const { return released_; }

 private:
  friend struct NodeAccess;  // record(), hooks and accumulators (src/autograd)

  std::string name_;
  std::uint64_t sequence_nr_;
  std::vector<Edge> next_edges_;        // one per input (invalid if it needs no grad)
  std::vector<InputMeta> input_meta_;   // expected gradient shape/dtype per input
  std::vector<InputMeta> output_meta_;  // shape/dtype per output
  std::vector<SavedTensor> saved_;
  BackwardFn backward_;
  std::vector<std::vector<std::pair<std::size_t, GradHook>>> output_hooks_;  // per output
  std::vector<std::weak_ptr<TensorImpl>> retained_;                          // per output
  std::shared_ptr<TensorImpl> leaf_;  // accumulation nodes only
  bool released_ = false;
};

}  // namespace headgrad::autograd
