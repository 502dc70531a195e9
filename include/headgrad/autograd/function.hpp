// How ops (and users' custom ops) join the graph. An op computes its outputs without
// autograd, then calls record() with the inputs, the outputs, the values its backward
// needs and the backward function itself:
//
//   Tensor out = ...;                                   // forward, plain kernels
//   autograd::record("mul", {a, b}, {&out}, {a, b},
//       [](const auto& g, const autograd::BackwardContext& ctx) -> std::vector<Tensor> {
//         return {g[0] * ctx.saved(1), g[0] * ctx.saved(0)};
//       });
//
// record() does nothing when grad mode is off or no input requires grad. Saved values are
// stored detached (a node never owns its outputs' graph), checked for in-place changes
// when unpacked, and freed after backward unless retain_graph is set. The backward
// function runs in no-grad mode and may capture plain values (shapes, dims, scalars) but
// must receive tensors through `saved`.
#pragma once

#include <functional>
#include <vector>

#include "headgrad/autograd/node.hpp"
#include "headgrad/core/tensor.hpp"

namespace headgrad::autograd {

// True when grad mode is on and any defined input requires grad.
bool any_requires_grad(const std::vector<Tensor>& inputs);

// Records an op; see the file comment. The outputs become non-leaf tensors whose grad_fn
// is the new node. `saved` may include outputs (they are saved detached, so no cycle).
void record(const char* name, const std::vector<Tensor>& inputs,
            const std::vector<Tensor*>& outputs, const std::vector<Tensor>& saved,
            BackwardFn backward);

// Runs backward from `roots` with their `grads` (undefined = ones for one-element roots).
void run_backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& grads,
                  bool retain_graph);

// Runs `callback` once the backward pass now running on this thread has finished: every
// node has run and every gradient has been accumulated (PyTorch's engine queue_callback).
// Callbacks run in the order queued, and may queue more. Called when no backward is
// running it throws AutogradError. Where a data-parallel wrapper waits for its last
// gradient all-reduce.
void queue_callback(std::function<void()> callback);

// Gradients of `outputs` with respect to `inputs`, returned instead of accumulated into
// .grad (like torch.autograd.grad). Inputs that receive no gradient get undefined tensors.
std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs = {}, bool retain_graph = false);

}  // namespace headgrad::autograd
