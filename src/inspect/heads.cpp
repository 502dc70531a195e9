// Per-head gradient norms, importance, ablation and pruning (see inspect/heads.hpp).
#include "headgrad/inspect/heads.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/scope_exit.hpp"
#include "headgrad/autograd/grad_mode.hpp"
#include "headgrad/core/error.hpp"
#include "headgrad/core/generator.hpp"
#include "headgrad/nn/attention_head.hpp"
#include "headgrad/ops/elementwise.hpp"
#include "headgrad/ops/reduce.hpp"
#include "headgrad/ops/shape_ops.hpp"

namespace headgrad::inspect {

namespace {

void collect_layers(nn::Module& module, const std::string& name,
                    std::vector<NamedAttentionLayer>& out) {
  if (auto* layer = dynamic_cast<nn::AttentionLayer*>(&module)) out.push_back({name, layer});
  for (const auto& [child_name, child] : module.named_children())
    collect_layers(*child, name.empty() ? child_name : name + "." + child_name, out);
}

// L2 norm of the block [start, start + length) of `grad` along `dim`; 0 without a grad.
double block_norm(const Tensor& grad, std::int64_t dim, std::int64_t start, std::int64_t length) {
  if (!grad.defined()) return 0.0;
  const Tensor block = narrow(grad, dim, start, length);
  return std::sqrt(sum(mul(block, block)).item());
}

double norm(const Tensor& grad) {
  return grad.defined() ? block_norm(grad, 0, 0, grad.size(0)) : 0;
}

// Gates take the dtype and device of the layer's parameters.
TensorOptions gate_options(const nn::AttentionLayer& layer) {
  const auto params = layer.parameters();
  return params.empty() ? TensorOptions(kFloat32)
                        : TensorOptions(params.front().dtype()).device(params.front().device());
}

// The gates of `layer` as a vector of H values (1 when it has none); IndexError unless (H).
std::vector<double> gate_values(const NamedAttentionLayer& named, const char* op) {
  const std::int64_t h = named.layer->options().num_heads;
  const Tensor& gates = named.layer->head_gates();
  if (!gates.defined()) return std::vector<double>(static_cast<std::size_t>(h), 1.0);
  if (gates.dim() != 1)
    throw ShapeError(std::string(op) + ": layer '" + named.name + "' has per-example gates " +
                     shape_str(gates.shape()) + "; clear them or set gates of shape (H)");
  return gates.to(Device::cpu()).to(kFloat64).to_vector<double>();
}

// Sets each layer's gates back to `saved` (the gates it had; undefined = none).
void put_back_gates(const std::vector<NamedAttentionLayer>& layers,
                    const std::vector<Tensor>& saved) {
  for (std::size_t l = 0; l < layers.size(); ++l) {
    if (saved[l].defined())
      layers[l].layer->set_head_gates(saved[l]);
    else
      layers[l].layer->clear_head_gates();
  }
}

}  // namespace

std::vector<NamedAttentionLayer> attention_layers(nn::Module& model) {
  std::vector<NamedAttentionLayer> out;
  collect_layers(model, "", out);
  return out;
}

std::vector<HeadGradNorms> head_grad_norms(nn::Module& model, const Capture* capture) {
  NoGradGuard no_grad;
  std::vector<HeadGradNorms> out;
  const auto layers = attention_layers(model);
  for (std::size_t li = 0; li < layers.size(); ++li) {
    const nn::AttentionLayer& layer = *layers[li].layer;
    const std::int64_t num_heads = layer.head_count();
    Tensor z_grad;
    const std::string z_name = layers[li].name.empty() ? "z" : layers[li].name + ".z";
    if (capture && capture->contains(z_name)) {
      try {
        z_grad = capture->grad(z_name);  // (N, H, L, d)
      } catch (const Error&) {
        // recorded without a gradient: z stays -1
      }
    }
    for (std::int64_t h = 0; h < num_heads; ++h) {
      const nn::HeadWeights g = layer.head_grads(h);  // blocks of the gradients
      HeadGradNorms n;
      n.layer = static_cast<std::int64_t>(li);
      n.head = h;
      n.w_q = norm(g.w_q);
      n.w_k = norm(g.w_k);
      n.w_v = norm(g.w_v);
      n.w_o = norm(g.w_o);
      if (z_grad.defined()) n.z = block_norm(z_grad, 1, h, 1);
      out.push_back(n);
    }
  }
  return out;
}

namespace {

// Adds one batch's |d loss / d gate| to importance.raw: each layer's gates as an (N, H)
// tensor of its gate values, so every example's gradient is its own row; an example's row
// is rescaled by total / its scored targets (every example weighs the same).
void add_batch_importance(const std::vector<NamedAttentionLayer>& layers,
                          const std::vector<std::vector<double>>& base_gates,
                          const train::ForwardFn& forward, const train::Task& task,
                          const train::Batch& batch, HeadImportance& importance) {
  const std::vector<std::int64_t> scored = train::scored_per_example(batch, task.kind());
  const auto n = static_cast<std::int64_t>(scored.size());
  const std::int64_t total = std::accumulate(scored.begin(), scored.end(), std::int64_t{0});
  if (total == 0) return;
  std::vector<Tensor> gates;  // per layer (N, H), each row the layer's gate values
  for (std::size_t li = 0; li < layers.size(); ++li) {
    const auto& g = base_gates[li];
    std::vector<double> values;
    for (std::int64_t i = 0; i < n; ++i) values.insert(values.end(), g.begin(), g.end());
    Tensor gate = from_vector(values, {n, static_cast<std::int64_t>(g.size())},
                              gate_options(*layers[li].layer));
    gate.requires_grad_(true);
    layers[li].layer->set_head_gates(gate);
    gates.push_back(gate);
  }
  task.loss(forward(batch), batch).backward();
  for (std::size_t li = 0; li < layers.size(); ++li) {
    const Tensor grad = gates[li].grad();
    if (!grad.defined()) continue;  // the loss does not depend on this layer
    const auto g = grad.to(Device::cpu()).to(kFloat64).to_vector<double>();
    const std::size_t h = importance.raw[li].size();
    for (std::int64_t i = 0; i < n; ++i) {
      if (scored[i] == 0) continue;
      const double rescale = static_cast<double>(total) / static_cast<double>(scored[i]);
      for (std::size_t j = 0; j < h; ++j)
        importance.raw[li][j] += std::abs(g[static_cast<std::size_t>(i) * h + j]) * rescale;
    }
  }
  for (std::int64_t i = 0; i < n; ++i) importance.examples += scored[i] > 0;
}

// raw averaged over the examples, and each layer's row scaled to unit L2 norm.
void normalise(HeadImportance& importance) {
  for (auto& row : importance.raw) {
    for (double& v : row)
      v = importance.examples > 0 ? v / static_cast<double>(importance.examples) : 0;
    double l2 = 0;
    for (double v : row) l2 += v * v;
    l2 = std::sqrt(l2);
    std::vector<double> normalized = row;
    if (l2 > 0)
      for (double& v : normalized) v /= l2;
    importance.normalized.push_back(normalized);
  }
}

}  // namespace

HeadImportance head_importance(nn::Module& model, const train::ForwardFn& forward,
                               const train::Task& task, train::Split split, std::int64_t batches,
                               std::int64_t batch_size) {
  const char* op = "head_importance";
  if (batches <= 0 || batch_size <= 0)
    throw ValueError(std::string(op) + ": batches and batch_size must be positive, got " +
                     std::to_string(batches) + " and " + std::to_string(batch_size));
  const auto layers = attention_layers(model);
  HeadImportance result;
  std::vector<std::vector<double>> base_gates;
  std::vector<Tensor> saved_gates;
  for (const auto& l : layers) {
    result.layers.push_back(l.name);
    base_gates.push_back(gate_values(l, op));
    saved_gates.push_back(l.layer->head_gates());
    result.raw.emplace_back(static_cast<std::size_t>(l.layer->options().num_heads), 0.0);
  }
  // Only the gates need gradients: the parameters are frozen meanwhile, so their .grad
  // stays as it was. Parameters, gates and mode are put back however this ends.
  std::vector<Tensor> frozen;
  for (Tensor& p : model.parameters())
    if (p.requires_grad()) {
      p.requires_grad_(false);
      frozen.push_back(p);
    }
  const detail::ScopeExit restore([&, was_training = model.is_training()] {
    for (Tensor& p : frozen) p.requires_grad_(true);
    put_back_gates(layers, saved_gates);
    model.train(was_training);
  });
  model.eval();
  GradModeGuard grad_on(true);
  for (std::int64_t b = 0; b < batches; ++b)
    add_batch_importance(layers, base_gates, forward, task,
                         task.batch(split, b, batch_size).to(model.device()), result);
  normalise(result);
  return result;
}

std::vector<HeadId> importance_order(const HeadImportance& importance, ImportanceRanking ranking) {
  const char* op = "importance_order";
  const auto& heads = importance.normalized.empty() ? importance.raw : importance.normalized;
  if (ranking == ImportanceRanking::automatic) {
    const bool all_multi_head = std::all_of(heads.begin(), heads.end(),
                                            [](const auto& layer) { return layer.size() >= 2; });
    ranking = all_multi_head ? ImportanceRanking::normalized : ImportanceRanking::raw;
  }
  const bool raw = ranking == ImportanceRanking::raw;
  const auto& scores = raw ? importance.raw : importance.normalized;
  bool same_shape = scores.size() == heads.size();
  for (std::size_t l = 0; same_shape && l < heads.size(); ++l)
    same_shape = scores[l].size() == heads[l].size();
  if (!same_shape)
    throw ValueError(std::string(op) + ": ranking by " + (raw ? "raw" : "normalized") +
                     " scores, but that table has " + std::to_string(scores.size()) +
                     " layers and the other " + std::to_string(heads.size()) +
                     " (or their head counts differ); fill both, or only the one ranked by");
  std::vector<HeadId> order;
  for (std::size_t l = 0; l < scores.size(); ++l)
    for (std::size_t h = 0; h < scores[l].size(); ++h)
      order.push_back({static_cast<std::int64_t>(l), static_cast<std::int64_t>(h)});
  std::stable_sort(order.begin(), order.end(), [&](const HeadId& a, const HeadId& b) {
    return scores[a.layer][a.head] < scores[b.layer][b.head];
  });
  return order;
}

std::vector<HeadId> random_order(nn::Module& model, std::uint64_t seed) {
  std::vector<HeadId> order;
  const auto layers = attention_layers(model);
  for (std::size_t l = 0; l < layers.size(); ++l)
    for (std::int64_t h = 0; h < layers[l].layer->options().num_heads; ++h)
      order.push_back({static_cast<std::int64_t>(l), h});
  Generator gen(seed);
  for (std::size_t i = order.size(); i > 1; --i)  // Fisher-Yates
    std::swap(order[i - 1], order[gen.next_u64() % i]);
  return order;
}

HeadAblation::HeadAblation(nn::Module& model, const std::vector<HeadId>& heads)
    : layers_(attention_layers(model)) {
  std::vector<std::vector<double>> gates;
  for (const auto& l : layers_)
    gates.emplace_back(static_cast<std::size_t>(l.layer->options().num_heads), 1.0);
  for (const HeadId& id : heads) {
    if (id.layer < 0 || id.layer >= static_cast<std::int64_t>(layers_.size()))
      throw IndexError("HeadAblation: no attention layer " + std::to_string(id.layer) +
                       " (the model has " + std::to_string(layers_.size()) +
                       " attention layers, 0 to " + std::to_string(layers_.size() - 1) + ")");
    const auto heads_here = static_cast<std::int64_t>(gates[id.layer].size());
    if (id.head < 0 || id.head >= heads_here)
      throw IndexError("HeadAblation: no head " + std::to_string(id.head) + " in attention layer " +
                       std::to_string(id.layer) + " (the layer has " + std::to_string(heads_here) +
                       " heads, 0 to " + std::to_string(heads_here - 1) + ")");
    gates[id.layer][id.head] = 0.0;
  }
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    saved_.push_back(layers_[l].layer->head_gates());
    layers_[l].layer->set_head_gates(from_vector(
        gates[l], {static_cast<std::int64_t>(gates[l].size())}, gate_options(*layers_[l].layer)));
  }
}

HeadAblation::~HeadAblation() { put_back_gates(layers_, saved_); }

std::vector<PruningPoint> pruning_curve(nn::Module& model, const train::ForwardFn& forward,
                                        const train::Task& task, train::Split split,
                                        std::int64_t batches, std::int64_t batch_size,
                                        const std::vector<HeadId>& order) {
  std::vector<PruningPoint> curve;
  for (std::size_t k = 0; k <= order.size(); ++k) {
    HeadAblation ablation(model, std::vector<HeadId>(order.begin(), order.begin() + k));
    const train::Metrics m = train::evaluate(model, forward, task, split, batches, batch_size);
    curve.push_back({static_cast<std::int64_t>(k), m.loss, m.accuracy});
  }
  return curve;
}

}  // namespace headgrad::inspect
