// The backward engine: recording ops into the graph, the iterative topological traversal
// that runs backward functions, leaf accumulation, hooks and retain_grad.
//
// backward(root):
//   1. count, for every node reachable from the root (explicit stack, no recursion), how
//      many edges point at it;
//   2. run nodes whose count reached zero, most recently created first (a valid
//      topological order that also frees activations in reverse creation order);
//   3. a node's incoming gradients are summed in its input buffer before it runs, so every
//      node and every leaf hook runs once per backward with the total gradient;
//   4. without retain_graph a node drops its saved values and edges right after it runs.
#include <algorithm>
#include <atomic>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "core/dispatch.hpp"
#include "headgrad/autograd/function.hpp"
#include "headgrad/autograd/grad_mode.hpp"
#include "headgrad/autograd/node.hpp"

namespace headgrad::autograd {

namespace {
std::atomic<std::uint64_t> sequence_counter{0};

// The callbacks queued (queue_callback) during the backward running on this thread; null
// when none runs.
thread_local std::vector<std::function<void()>>* queued_callbacks = nullptr;

// Gradients captured by autograd::grad instead of being accumulated into .grad:
// (node, output_nr) -> gradient.
struct Capture {
  std::vector<Edge> keep_alive;  // a leaf's accumulation node exists only while referenced
  std::vector<std::pair<Node*, int>> targets;
  std::vector<Tensor> grads;
};
}  // namespace

Node::~Node() {
  // Detach the input nodes this node solely owns and destroy them one at a time, each
  // after taking over its own solely owned inputs, so destruction never recurses.
  std::vector<std::shared_ptr<Node>> doomed;
  auto adopt_inputs = [&doomed](Node& node) {
    for (Edge& e : node.next_edges_)
      if (e.node && e.node.use_count() == 1) doomed.push_back(std::move(e.node));
    node.next_edges_.clear();
  };
  adopt_inputs(*this);
  while (!doomed.empty()) {
    std::shared_ptr<Node> node = std::move(doomed.back());
    doomed.pop_back();
    adopt_inputs(*node);
  }  // `node` dies here with no edges left, so its destructor does not recurse
}

struct NodeAccess {
  static std::shared_ptr<Node> accumulator(const Tensor& leaf) {
    TensorImpl* impl = leaf.impl();
    if (auto existing = impl->grad_accumulator.lock()) return existing;
    auto node = std::make_shared<Node>("AccumulateGrad", sequence_counter++);
    node->leaf_ = leaf.impl_ptr();
    node->output_meta_.push_back({impl->shape, impl->dtype});
    impl->grad_accumulator = node;
    return node;
  }

  // The edge through which the gradient of `t` flows.
  static Edge gradient_edge(const Tensor& t) {
    if (t.impl()->grad_fn) return Edge{t.impl()->grad_fn, t.impl()->output_nr};
    return Edge{accumulator(t), 0};
  }

  static void record(const char* name, const std::vector<Tensor>& inputs,
                     const std::vector<Tensor*>& outputs, const std::vector<Tensor>& saved,
                     BackwardFn backward) {
    if (!backward) throw AutogradError(std::string(name) + ": record() needs a backward function");
    if (outputs.empty())
      throw AutogradError(std::string(name) + ": record() needs at least one output");
    for (std::size_t i = 0; i < outputs.size(); ++i)
      if (!outputs[i] || !outputs[i]->defined())
        throw AutogradError(std::string(name) + ": output " + std::to_string(i) +
                            " passed to record() is undefined");
    auto node = std::make_shared<Node>(name, sequence_counter++);
    node->next_edges_.reserve(inputs.size());
    node->input_meta_.reserve(inputs.size());
    node->saved_.reserve(saved.size());
    node->output_meta_.reserve(outputs.size());
    for (const Tensor& in : inputs) {
      const bool needs = in.defined() && in.requires_grad();
      node->next_edges_.push_back(needs ? gradient_edge(in) : Edge{});
      node->input_meta_.push_back(in.defined() ? InputMeta{in.shape(), in.dtype()} : InputMeta{});
    }
    for (const Tensor& s : saved)
      node->saved_.push_back(s.defined() ? SavedTensor{s.detach(), s.impl()->storage->version()}
                                         : SavedTensor{});
    node->backward_ = std::move(backward);
    // output_hooks_ and retained_ stay empty until a hook or retain_grad asks (per_output).
    for (std::size_t i = 0; i < outputs.size(); ++i) {
      TensorImpl* impl = outputs[i]->impl();
      if (!is_floating(impl->dtype))
        throw AutogradError(std::string(name) + ": output " + std::to_string(i) +
                            " is not floating and cannot be part of the graph");
      impl->grad_fn = node;
      impl->output_nr = static_cast<int>(i);
      node->output_meta_.push_back({impl->shape, impl->dtype});
    }
  }

  static void check_gradient(const Node& node, const Tensor& g, const InputMeta& meta,
                             const char* what, std::size_t index) {
    if (g.shape() != meta.shape || g.dtype() != meta.dtype)
      throw AutogradError(node.name() + ": backward produced a gradient " + detail::describe(g) +
                          " for " + what + " " + std::to_string(index) + " of shape " +
                          shape_str(meta.shape) + " " + to_string(meta.dtype));
  }

  static Tensor run_hooks(const Node& node,
                          const std::vector<std::pair<std::size_t, GradHook>>& hooks, Tensor g,
                          const InputMeta& meta) {
    for (const auto& [id, hook] : hooks) {
      Tensor replaced = hook(g);
      if (replaced.defined()) {
        check_gradient(node, replaced, meta, "hook result for output", 0);
        g = replaced;
      }
    }
    return g;
  }

  // Adds g into impl->grad, stealing g's buffer when nothing else refers to it.
  static void accumulate_grad(TensorImpl& impl, const Tensor& g) {
    if (!impl.grad.defined()) {
      const bool sole_owner = g.impl_ptr().use_count() == 1 && g.impl()->storage.use_count() == 1;
      impl.grad = sole_owner ? g : g.detach().clone();
    } else {
      impl.grad.add_(g);
    }
  }

  static void release(Node& node) {
    node.saved_.clear();
    node.saved_.shrink_to_fit();
    node.backward_ = nullptr;
    node.next_edges_.clear();
    node.released_ = true;
  }

  // `list` (output_hooks_ or retained_, empty until first asked: most nodes never are)
  // sized to one entry per output.
  template <typename List>
  static List& per_output(const Node& node, List& list) {
    if (list.size() < node.num_outputs()) list.resize(node.num_outputs());
    return list;
  }

  static void retain(TensorImpl& impl, const std::shared_ptr<TensorImpl>& owner) {
    Node& node = *impl.grad_fn;
    per_output(node, node.retained_)[static_cast<std::size_t>(impl.output_nr)] = owner;
  }

  static std::size_t add_hook(TensorImpl& impl, GradHook hook) {
    const std::size_t id = impl.next_hook_id++;
    if (impl.grad_fn)
      per_output(*impl.grad_fn,
                 impl.grad_fn->output_hooks_)[static_cast<std::size_t>(impl.output_nr)]
          .emplace_back(id, std::move(hook));
    else
      impl.hooks.emplace_back(id, std::move(hook));
    return id;
  }

  // Runs a leaf's post-accumulate hooks (on a copy of the list: a hook may remove itself).
  static void run_post_accumulate_hooks(const std::shared_ptr<TensorImpl>& leaf) {
    if (leaf->post_accumulate_hooks.empty()) return;
    const auto hooks = leaf->post_accumulate_hooks;
    const Tensor tensor(leaf);
    for (const auto& [id, hook] : hooks) hook(tensor);
  }

  static void remove_hook(TensorImpl& impl, std::size_t id) {
    auto& hooks =
        impl.grad_fn
            ? per_output(*impl.grad_fn,
                         impl.grad_fn->output_hooks_)[static_cast<std::size_t>(impl.output_nr)]
            : impl.hooks;
    std::erase_if(hooks, [id](const auto& entry) { return entry.first == id; });
    std::erase_if(impl.post_accumulate_hooks,
                  [id](const auto& entry) { return entry.first == id; });
  }

  // The roots' gradient edges and starting gradients (ones for one-element roots).
  struct Roots {
    std::vector<Edge> edges;
    std::vector<Tensor> grads;
  };
  static Roots start(const std::vector<Tensor>& roots, const std::vector<Tensor>& root_grads);
  // The nodes reachable from the roots, and those that take part: all of them for backward;
  // for autograd::grad only those on a path from a root to a requested input.
  struct Participants {
    std::vector<Node*> reachable;
    std::unordered_set<Node*> needed;
  };
  static Participants participants(const std::vector<Edge>& root_edges, const Capture* capture);
  // The node's saved values, checked against in-place writes since they were saved.
  static std::vector<Tensor> saved_values(const Node& node);
  // Runs tensor hooks on each output gradient, fills retained .grad and the captures.
  static void deliver_output_grads(Node& node, std::vector<Tensor>& grads, Capture* capture);

  // One backward pass: traverse, then the callbacks queued during it.
  static void execute(const std::vector<Tensor>& roots, const std::vector<Tensor>& root_grads,
                      bool retain_graph, Capture* capture);
  static void traverse(const std::vector<Tensor>& roots, const std::vector<Tensor>& root_grads,
                       bool retain_graph, Capture* capture);

  // One traversal's bookkeeping: the participating nodes, each one's count of inputs still
  // to come, the gradients gathered for each, and the nodes ready to run, most recent first.
  struct Later {
    bool operator()(const std::shared_ptr<Node>& a, const std::shared_ptr<Node>& b) const {
      return a->sequence_nr() < b->sequence_nr();
    }
  };
  struct Pass {
    Participants graph;
    Capture* capture = nullptr;
    bool retain_graph = false;
    std::unordered_map<Node*, int> deps;
    std::unordered_map<Node*, std::vector<Tensor>> buffers;
    std::priority_queue<std::shared_ptr<Node>, std::vector<std::shared_ptr<Node>>, Later> ready;
    bool is_needed(const Edge& e) const {
      return e.valid() && graph.needed.count(e.node.get()) > 0;
    }
  };
  // A node runs its backward function when one of its inputs needs a gradient.
  static bool runs(const Pass& pass, const Node& node);
  // deps of every participating node; refuses a node whose saved values were freed.
  static void count_dependencies(Pass& pass);
  static void add_to_buffer(Pass& pass, const Edge& e, const Tensor& g);
  // A ready node: its output gradients delivered, then accumulated (a leaf) or its
  // backward run and the input gradients passed on.
  static void run_node(Pass& pass, const std::shared_ptr<Node>& node);
  // The node's backward on `grads`: one gradient per input (undefined where none).
  static std::vector<Tensor> input_gradients(const Pass& pass, Node& node,
                                             const std::vector<Tensor>& grads);
};

NodeAccess::Roots NodeAccess::start(const std::vector<Tensor>& roots,
                                    const std::vector<Tensor>& root_grads) {
  if (roots.size() != root_grads.size())
    throw AutogradError("backward: got " + std::to_string(roots.size()) + " tensors and " +
                        std::to_string(root_grads.size()) + " gradients");
  Roots out;
  for (std::size_t r = 0; r < roots.size(); ++r) {
    const Tensor& root = roots[r];
    detail::check_defined("backward", root, "the tensor");
    if (!root.requires_grad())
      throw AutogradError("backward: " + detail::describe(root) +
                          " does not require grad and has no grad_fn (nothing to differentiate)");
    Tensor g = root_grads[r];
    if (!g.defined()) {
      if (root.numel() != 1)
        throw AutogradError(
            "backward: gradient can be implicitly created only for one-element "
            "tensors, but " +
            detail::describe(root) + " has " + std::to_string(root.numel()) +
            " elements; pass a gradient of the same shape");
      g = ones_like(root);
    } else if (g.shape() != root.shape() || g.dtype() != root.dtype()) {
      throw AutogradError("backward: gradient " + detail::describe(g) + " does not match " +
                          detail::describe(root));
    }
    out.edges.push_back(gradient_edge(root));
    out.grads.push_back(g);
  }
  return out;
}

NodeAccess::Participants NodeAccess::participants(const std::vector<Edge>& root_edges,
                                                  const Capture* capture) {
  // The reachable graph, walked with an explicit stack (no recursion).
  Participants out;
  std::unordered_map<Node*, std::vector<Node*>> parents;  // filled when capturing
  std::unordered_set<Node*> seen;
  std::vector<Node*> stack;
  for (const Edge& e : root_edges)
    if (seen.insert(e.node.get()).second) stack.push_back(e.node.get());
  while (!stack.empty()) {
    Node* node = stack.back();
    stack.pop_back();
    out.reachable.push_back(node);
    for (const Edge& e : node->next_edges_) {
      if (!e.valid()) continue;
      if (capture) parents[e.node.get()].push_back(node);
      if (seen.insert(e.node.get()).second) stack.push_back(e.node.get());
    }
  }
  if (!capture) {
    out.needed.insert(out.reachable.begin(), out.reachable.end());
    return out;
  }
  // autograd::grad: walk up from the requested inputs (PyTorch does the same), so the rest
  // of the graph is neither run nor freed.
  for (const auto& [target, output_nr] : capture->targets)
    if (seen.count(target) && out.needed.insert(target).second) stack.push_back(target);
  while (!stack.empty()) {
    Node* node = stack.back();
    stack.pop_back();
    for (Node* parent : parents[node])
      if (out.needed.insert(parent).second) stack.push_back(parent);
  }
  return out;
}

std::vector<Tensor> NodeAccess::saved_values(const Node& node) {
  std::vector<Tensor> saved;
  saved.reserve(node.saved_.size());
  for (std::size_t s = 0; s < node.saved_.size(); ++s) {
    const SavedTensor& st = node.saved_[s];
    if (st.value.defined() && st.value.impl()->storage->version() != st.version)
      throw AutogradError(node.name() + ": saved value " + std::to_string(s) + " " +
                          detail::describe(st.value) +
                          " was modified by an in-place operation after it was saved for "
                          "backward");
    saved.push_back(st.value);
  }
  return saved;
}

void NodeAccess::deliver_output_grads(Node& node, std::vector<Tensor>& grads, Capture* capture) {
  for (std::size_t i = 0; i < grads.size(); ++i) {
    if (!grads[i].defined()) continue;
    const InputMeta& meta = node.output_meta_[i];
    if (node.is_accumulator()) grads[i] = run_hooks(node, node.leaf_->hooks, grads[i], meta);
    if (i < node.output_hooks_.size())
      grads[i] = run_hooks(node, node.output_hooks_[i], grads[i], meta);
    if (i < node.retained_.size())
      if (auto impl = node.retained_[i].lock(); impl && !capture) accumulate_grad(*impl, grads[i]);
    if (capture) {
      for (std::size_t c = 0; c < capture->targets.size(); ++c)
        if (capture->targets[c] == std::pair<Node*, int>{&node, static_cast<int>(i)})
          capture->grads[c] = grads[i];
    }
  }
}

void NodeAccess::execute(const std::vector<Tensor>& roots, const std::vector<Tensor>& root_grads,
                         bool retain_graph, Capture* capture) {
  // Callbacks queued while this pass runs; a nested backward (from a hook) has its own.
  std::vector<std::function<void()>> callbacks;
  struct Scope {
    std::vector<std::function<void()>>* previous;
    explicit Scope(std::vector<std::function<void()>>* mine) : previous(queued_callbacks) {
      queued_callbacks = mine;
    }
    ~Scope() { queued_callbacks = previous; }
  } scope(&callbacks);
  traverse(roots, root_grads, retain_graph, capture);
  for (std::size_t i = 0; i < callbacks.size(); ++i) {
    auto callback = std::move(callbacks[i]);  // may queue more: `callbacks` can grow
    callback();
  }
}

void NodeAccess::traverse(const std::vector<Tensor>& roots, const std::vector<Tensor>& root_grads,
                          bool retain_graph, Capture* capture) {
  NoGradGuard no_grad;
  const Roots root = start(roots, root_grads);
  Pass pass;
  pass.graph = participants(root.edges, capture);  // 1. the nodes that take part
  pass.capture = capture;
  pass.retain_graph = retain_graph;
  count_dependencies(pass);
  for (std::size_t r = 0; r < root.edges.size(); ++r)
    add_to_buffer(pass, root.edges[r], root.grads[r]);
  std::unordered_set<Node*> pushed;
  for (const Edge& e : root.edges)
    if (pass.deps[e.node.get()] == 0 && pushed.insert(e.node.get()).second) pass.ready.push(e.node);
  while (!pass.ready.empty()) {  // 2./3. run ready nodes, most recent first
    const std::shared_ptr<Node> node = pass.ready.top();
    pass.ready.pop();
    run_node(pass, node);
  }
}

bool NodeAccess::runs(const Pass& pass, const Node& node) {
  return !node.is_accumulator() &&
         std::any_of(node.next_edges_.begin(), node.next_edges_.end(),
                     [&pass](const Edge& e) { return pass.is_needed(e); });
}

void NodeAccess::count_dependencies(Pass& pass) {
  for (Node* node : pass.graph.reachable) {
    if (!pass.graph.needed.count(node)) continue;
    if (node->released_ && (runs(pass, *node) || !pass.capture))
      throw AutogradError(
          "backward: trying to backward through the graph a second time (the saved values of '" +
          node->name() +
          "' were freed after the first backward); pass retain_graph=true to "
          "the first backward if you need to backward twice");
    for (const Edge& e : node->next_edges_)
      if (pass.is_needed(e)) ++pass.deps[e.node.get()];
  }
}

void NodeAccess::add_to_buffer(Pass& pass, const Edge& e, const Tensor& g) {
  auto& buf = pass.buffers[e.node.get()];
  if (buf.empty()) buf.resize(e.node->num_outputs());
  Tensor& slot = buf[static_cast<std::size_t>(e.input_nr)];
  if (!slot.defined()) {
    slot = g;
  } else if (slot.impl_ptr().use_count() == 1 && slot.impl()->storage.use_count() == 1 &&
             slot.shape() == g.shape() && slot.dtype() == g.dtype()) {
    slot.add_(g);  // nothing else sees this buffer: sum in place, no new tensor
  } else {
    slot = slot + g;  // operator+ (declared with Tensor, defined in ops)
  }
}

void NodeAccess::run_node(Pass& pass, const std::shared_ptr<Node>& node) {
  std::vector<Tensor> grads = std::move(pass.buffers[node.get()]);
  pass.buffers.erase(node.get());
  grads.resize(node->num_outputs());
  deliver_output_grads(*node, grads, pass.capture);
  if (node->is_accumulator()) {
    if (!pass.capture && grads[0].defined()) {
      accumulate_grad(*node->leaf_, grads[0]);
      run_post_accumulate_hooks(node->leaf_);
    }
    return;
  }
  if (!runs(pass, *node)) return;  // autograd::grad: a requested input with nothing needed below
  const std::vector<Tensor> input_grads = input_gradients(pass, *node, grads);
  for (std::size_t i = 0; i < node->next_edges_.size(); ++i) {
    const Edge& e = node->next_edges_[i];
    if (!pass.is_needed(e)) continue;
    if (!input_grads.empty() && input_grads[i].defined()) {
      check_gradient(*node, input_grads[i], node->input_meta_[i], "input", i);
      add_to_buffer(pass, e, input_grads[i]);
    }
    if (--pass.deps[e.node.get()] == 0) pass.ready.push(e.node);
  }
  if (!pass.retain_graph) release(*node);
}

std::vector<Tensor> NodeAccess::input_gradients(const Pass& pass, Node& node,
                                                const std::vector<Tensor>& grads) {
  const bool any =
      std::any_of(grads.begin(), grads.end(), [](const Tensor& g) { return g.defined(); });
  if (!any) return {};  // no gradient arrived: nothing to pass on
  const std::vector<Tensor> saved = saved_values(node);
  std::vector<bool> needs(node.next_edges_.size());
  for (std::size_t i = 0; i < needs.size(); ++i) needs[i] = pass.is_needed(node.next_edges_[i]);
  std::vector<Tensor> input_grads =
      node.backward_(grads, BackwardContext(node.name(), saved, needs));
  if (input_grads.size() != node.next_edges_.size())
    throw AutogradError(node.name() + ": backward returned " + std::to_string(input_grads.size()) +
                        " gradients for " + std::to_string(node.next_edges_.size()) + " inputs");
  return input_grads;
}

bool any_requires_grad(const std::vector<Tensor>& inputs) {
  if (!is_grad_enabled()) return false;
  for (const Tensor& t : inputs)
    if (t.defined() && t.requires_grad()) return true;
  return false;
}

void record(const char* name, const std::vector<Tensor>& inputs,
            const std::vector<Tensor*>& outputs, const std::vector<Tensor>& saved,
            BackwardFn backward) {
  if (!any_requires_grad(inputs)) return;
  NodeAccess::record(name, inputs, outputs, saved, std::move(backward));
}

void queue_callback(std::function<void()> callback) {
  if (queued_callbacks == nullptr)
    throw AutogradError("queue_callback: no backward pass is running on this thread");
  queued_callbacks->push_back(std::move(callback));
}

void run_backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& grads,
                  bool retain_graph) {
  NodeAccess::execute(roots, grads, retain_graph, nullptr);
}

std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs, bool retain_graph) {
  Capture capture;
  for (const Tensor& in : inputs) {
    detail::check_defined("grad", in);
    if (!in.requires_grad())
      throw AutogradError("grad: input " + detail::describe(in) + " does not require grad");
    Edge e = NodeAccess::gradient_edge(in);
    capture.targets.emplace_back(e.node.get(), e.input_nr);
    capture.keep_alive.push_back(std::move(e));
  }
  capture.grads.resize(inputs.size());
  std::vector<Tensor> gos = grad_outputs;
  gos.resize(outputs.size());
  NodeAccess::execute(outputs, gos, retain_graph, &capture);
  return capture.grads;
}

}  // namespace headgrad::autograd

namespace headgrad {

void Tensor::backward(const Tensor& gradient, bool retain_graph) const {
  autograd::run_backward({*this}, {gradient}, retain_graph);
}

void Tensor::retain_grad() {
  check_defined("retain_grad");
  if (!requires_grad())
    throw AutogradError("retain_grad: " + describe() + " does not require grad");
  if (is_leaf()) return;  // leaves keep their gradient anyway
  impl()->retains_grad = true;
  autograd::NodeAccess::retain(*impl(), impl_ptr());
}

std::size_t Tensor::register_hook(GradHook hook) {
  check_defined("register_hook");
  if (!requires_grad())
    throw AutogradError("register_hook: " + describe() +
                        " does not require grad, so no gradient will flow into it");
  return autograd::NodeAccess::add_hook(*impl(), std::move(hook));
}

std::size_t Tensor::register_post_accumulate_grad_hook(PostAccumulateGradHook hook) {
  check_defined("register_post_accumulate_grad_hook");
  if (!requires_grad() || !is_leaf())
    throw AutogradError("register_post_accumulate_grad_hook: " + describe() +
                        " is not a leaf that requires grad (only leaves accumulate a gradient)");
  const std::size_t id = impl()->next_hook_id++;
  impl()->post_accumulate_hooks.emplace_back(id, std::move(hook));
  return id;
}

void Tensor::remove_hook(std::size_t id) {
  check_defined("remove_hook");
  autograd::NodeAccess::remove_hook(*impl(), id);
}

}  // namespace headgrad
