// Activation, path and attribution patching and head ablation (see inspect/patching.hpp).
#include "headgrad/inspect/patching.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>

#include "headgrad/autograd/function.hpp"
#include "headgrad/autograd/grad_mode.hpp"
#include "headgrad/core/error.hpp"
#include "headgrad/core/interrupt.hpp"
#include "headgrad/nn/gpt.hpp"
#include "headgrad/ops/elementwise.hpp"
#include "headgrad/ops/index.hpp"
#include "headgrad/ops/reduce.hpp"
#include "headgrad/ops/shape_ops.hpp"

namespace headgrad::inspect {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// `value` with its [:, head, position] (per-head points: head dim 1, position dim 2) or
// [:, position] (other points: position dim 1) taken from `source`; the whole of `source`
// when neither is given.
Tensor patched(const Tensor& value, const Tensor& source, bool head_point, std::int64_t head,
               std::int64_t position) {
  if (head < 0 && position < 0) return source;
  Shape mask_shape(static_cast<std::size_t>(value.dim()), 1);
  const std::int64_t heads = head_point ? value.size(1) : 1;
  const std::int64_t position_dim = head_point ? 2 : 1;
  const std::int64_t length = position >= 0 ? value.size(position_dim) : 1;
  if (head_point) mask_shape[1] = heads;
  if (position >= 0) mask_shape[static_cast<std::size_t>(position_dim)] = length;
  std::vector<bool> mask(static_cast<std::size_t>(heads * length), false);
  for (std::int64_t h = 0; h < heads; ++h)
    for (std::int64_t t = 0; t < length; ++t)
      mask[static_cast<std::size_t>(h * length + t)] =
          (head < 0 || h == head) && (position < 0 || t == position);
  return where(from_vector<bool>(mask, mask_shape).to(value.device()), source, value);
}

double scalar(const Tensor& metric, const char* op) {
  if (metric.numel() != 1)
    throw ShapeError(std::string(op) + ": the metric must return one number, got " +
                     metric.describe());
  return metric.item();
}

PatchingGrid make_grid(const std::string& point, std::vector<std::string> rows,
                       std::vector<std::string> dims, Shape shape) {
  PatchingGrid grid;
  grid.point = point;
  grid.rows = std::move(rows);
  grid.dims = std::move(dims);
  grid.shape = std::move(shape);
  std::int64_t total = 1;
  for (std::int64_t s : grid.shape) total *= s;
  grid.values.assign(static_cast<std::size_t>(total), kNaN);
  return grid;
}

// The module part of a hook name ("layers.0.self_attn.z" -> "layers.0.self_attn").
std::string module_of(const std::string& name) {
  const std::size_t dot = name.rfind('.');
  return dot == std::string::npos ? std::string() : name.substr(0, dot);
}

}  // namespace

namespace {

// Token ids index the vocabulary as an Embedding does: a negative id is refused, not wrapped
// as a position would be (a -1 left by a padding convention would score the last token).
void check_token_ids(const char* op, const char* what, const Tensor& ids, std::int64_t vocab) {
  const Tensor host = ids.device().is_cpu() ? ids : ids.to(Device::cpu());
  for (const std::int64_t id : host.to_vector<std::int64_t>())
    if (id < 0 || id >= vocab)
      throw IndexError(std::string(op) + ": " + what + " holds the token id " + std::to_string(id) +
                       ", outside the vocabulary [0, " + std::to_string(vocab) +
                       "); token ids are not wrapped as positions " +
                       "are (pass ids from the task, e.g. vocab_size - 1 for the last token)");
}

}  // namespace

Tensor logit_difference(const Tensor& logits, const Tensor& position, const Tensor& answer,
                        const Tensor& wrong) {
  const char* op = "logit_difference";
  const std::int64_t n = logits.dim() == 3 ? logits.size(0) : -1;
  for (const Tensor* t : {&position, &answer, &wrong})
    if (n < 0 || t->dtype() != kInt64 || t->dim() != 1 || t->size(0) != n)
      throw ShapeError(std::string(op) + ": expected logits (N, T, V) and int64 position, " +
                       "answer, wrong of shape (N), got logits " + logits.describe() +
                       ", position " + position.describe() + ", answer " + answer.describe() +
                       ", wrong " + wrong.describe());
  check_token_ids(op, "answer", answer, logits.size(2));
  check_token_ids(op, "wrong", wrong, logits.size(2));
  // logits[n, position[n], answer[n]] - logits[n, position[n], wrong[n]], pairwise.
  const Tensor rows = arange(static_cast<double>(n), TensorOptions(kInt64).device(logits.device()));
  const Tensor picked_answer = logits.index({rows, position, answer});
  const Tensor picked_wrong = logits.index({rows, position, wrong});
  return mean(sub(picked_answer, picked_wrong));
}

double PatchingGrid::at(std::int64_t i, std::int64_t j, std::int64_t k) const {
  std::int64_t flat = i;
  if (shape.size() >= 2) flat = flat * shape[1] + j;
  if (shape.size() >= 3) flat = flat * shape[2] + k;
  if (flat < 0 || flat >= static_cast<std::int64_t>(values.size()))
    throw IndexError("PatchingGrid::at: index out of range for shape " + shape_str(shape));
  return values[static_cast<std::size_t>(flat)];
}

Tensor PatchingGrid::tensor() const { return from_vector<double>(values, shape); }

// --- Patching -------------------------------------------------------------------------

Patching::Patching(nn::Module& model, ModelRun run, Tensor clean, Tensor corrupted,
                   LogitsMetric metric)
    : model_(model),
      run_(std::move(run)),
      clean_input_(std::move(clean)),
      corrupted_input_(std::move(corrupted)),
      metric_(std::move(metric)),
      names_(model) {
  const char* op = "inspect::Patching";
  clean_input_.check_defined(op);
  corrupted_input_.check_defined(op);
  if (clean_input_.shape() != corrupted_input_.shape())
    throw ShapeError(std::string(op) + ": the clean input " + clean_input_.describe() +
                     " and the corrupted input " + corrupted_input_.describe() +
                     " must have one shape (patching swaps activations position by position)");
  NoGradGuard no_grad;
  CachedRun c = run_with_cache(model_, [&] { return run_(clean_input_); });
  CachedRun k = run_with_cache(model_, [&] { return run_(corrupted_input_); });
  clean_ = std::move(c.cache);
  corrupted_ = std::move(k.cache);
  clean_metric_ = scalar(metric_(c.output), op);
  corrupted_metric_ = scalar(metric_(k.output), op);
  const double gap = clean_metric_ - corrupted_metric_;
  if (!(std::abs(gap) > 1e-6 * std::max(1.0, std::abs(clean_metric_))))
    throw ValueError(std::string(op) + ": the clean and corrupted metrics are equal (" +
                     std::to_string(clean_metric_) + " and " + std::to_string(corrupted_metric_) +
                     "): nothing to restore; choose a corruption that changes the answer");
}

Patching::Patching(nn::GPT& model, Tensor clean, Tensor corrupted, LogitsMetric metric,
                   Tensor key_padding_mask)
    : Patching(
          model,
          [&model, key_padding_mask](const Tensor& x) {
            return model.forward(x, key_padding_mask);
          },
          std::move(clean), std::move(corrupted), std::move(metric)) {
  resume_ = [&model, key_padding_mask](std::int64_t layer, const Tensor& residual) {
    return model.forward_from(layer, residual, key_padding_mask);
  };
}

double Patching::normalise(double metric) const {
  return (metric - corrupted_metric_) / (clean_metric_ - corrupted_metric_);
}

// Every patched run passes here: the place to stop a long sweep (Ctrl-C in Python).
Tensor Patching::run_with(Hooks& hooks, const Tensor& input) const {
  if (interrupt_requested()) throw Interrupted("inspect::Patching: interrupted between runs");
  auto scope = hooks.activate();
  return run_(input);
}

double Patching::patch(const std::vector<Patch>& patches) const {
  NoGradGuard no_grad;
  Hooks hooks(model_);
  for (const Patch& p : patches) {
    const Tensor source = clean_.get(p.name);
    const bool head_point = names_.context(p.name).per_head;
    if (p.head >= 0 && !head_point)
      throw ValueError("inspect::Patching::patch: '" + p.name + "' has no heads (head " +
                       std::to_string(p.head) + " given)");
    hooks.add(p.name, [source, head_point, p](const Tensor& value, const HookContext&) {
      return patched(value, source, head_point, p.head, p.position);
    });
  }
  return normalise(scalar(metric_(run_patched(hooks, patches)), "inspect::Patching::patch"));
}

namespace {
// The layer index of a hook point named "layers.<l>.<...>", else -1.
std::int64_t layer_of(const std::string& name) {
  const std::string prefix = "layers.";
  if (name.rfind(prefix, 0) != 0) return -1;
  const std::size_t dot = name.find('.', prefix.size());
  if (dot == std::string::npos || dot == prefix.size()) return -1;
  std::int64_t layer = 0;
  for (std::size_t i = prefix.size(); i < dot; ++i) {
    if (name[i] < '0' || name[i] > '9') return -1;
    layer = layer * 10 + (name[i] - '0');
  }
  return layer;
}
}  // namespace

// The corrupted run with `hooks` active: from the lowest patched layer's cached resid_pre
// when the run can resume there (a GPT in eval mode; the layers before it would recompute
// the corrupted run's own values), else whole.
Tensor Patching::run_patched(Hooks& hooks, const std::vector<Patch>& patches) const {
  std::int64_t first = resume_ && !model_.is_training() && !patches.empty() ? INT64_MAX : 0;
  for (const Patch& p : patches) first = std::min(first, layer_of(p.name));
  const std::string start = "layers." + std::to_string(first) + ".resid_pre";
  if (first <= 0 || !corrupted_.contains(start)) return run_with(hooks, corrupted_input_);
  if (interrupt_requested()) throw Interrupted("inspect::Patching: interrupted between runs");
  auto scope = hooks.activate();
  return resume_(first, corrupted_.get(start));
}

std::int64_t Patching::heads_of(const std::string& name) const {
  const std::int64_t heads = names_.heads_at(name);
  if (heads > 0 || !names_.context(name).per_head) return heads;
  return clean_.get(name).size(1);  // a per-head point of a module that is no attention layer
}

std::vector<std::string> Patching::names_of(const std::string& point, const char* op) const {
  const std::vector<std::string> names = names_.names_at(point);
  if (names.empty()) {
    std::string known;
    for (const std::string& n : names_.point_names()) known += (known.empty() ? "" : ", ") + n;
    throw ValueError(std::string(op) + ": the model has no '" + point +
                     "' hook point (its points: " + (known.empty() ? "none" : known) + ")");
  }
  return names;
}

std::vector<std::string> Patching::head_names(const std::string& point, const char* op) const {
  const std::vector<std::string> names = names_of(point, op);
  if (!names_.context(names.front()).per_head)
    throw ValueError(std::string(op) + ": '" + point +
                     "' has no heads; use q, k, v, scores, pattern, z or result");
  return names;
}

PatchingGrid Patching::by_layer(const std::string& point) const {
  const std::vector<std::string> names = names_of(point, "inspect::Patching::by_layer");
  std::vector<std::string> rows;
  for (const auto& n : names) rows.push_back(module_of(n));
  PatchingGrid grid = make_grid(point, rows, {"layer"}, {static_cast<std::int64_t>(names.size())});
  for (std::size_t i = 0; i < names.size(); ++i) grid.values[i] = patch({{names[i]}});
  return grid;
}

PatchingGrid Patching::head_grid(const std::string& point, bool positions) const {
  const std::vector<std::string> names = head_names(point, "inspect::Patching");
  std::vector<std::string> rows;
  std::int64_t heads = 0, length = 1;
  for (const auto& n : names) {
    rows.push_back(module_of(n));
    heads = std::max(heads, heads_of(n));
    if (positions) length = std::max(length, clean_.get(n).size(2));
  }
  Shape shape{static_cast<std::int64_t>(names.size()), heads};
  std::vector<std::string> dims{"layer", "head"};
  if (positions) {
    shape.push_back(length);
    dims.push_back("position");
  }
  return make_grid(point, rows, dims, shape);
}

PatchingGrid Patching::by_head(const std::string& point) const {
  PatchingGrid grid = head_grid(point, false);
  const std::vector<std::string> names = names_.names_at(point);
  for (std::size_t l = 0; l < names.size(); ++l)
    for (std::int64_t h = 0; h < heads_of(names[l]); ++h)
      grid.values[l * grid.shape[1] + h] = patch({{names[l], h}});
  return grid;
}

PatchingGrid Patching::by_head_position(const std::string& point) const {
  PatchingGrid grid = head_grid(point, true);
  const std::vector<std::string> names = names_.names_at(point);
  const std::int64_t heads = grid.shape[1], length = grid.shape[2];
  for (std::size_t l = 0; l < names.size(); ++l)
    for (std::int64_t h = 0; h < heads_of(names[l]); ++h)
      for (std::int64_t t = 0; t < clean_.get(names[l]).size(2); ++t)
        grid.values[(l * heads + h) * length + t] = patch({{names[l], h, t}});
  return grid;
}

PatchingGrid Patching::by_position(const std::string& point) const {
  const std::vector<std::string> names = names_of(point, "inspect::Patching::by_position");
  if (names_.context(names.front()).per_head)
    throw ValueError("inspect::Patching::by_position: '" + point +
                     "' is per head; use by_head_position");
  std::vector<std::string> rows;
  for (const auto& n : names) rows.push_back(module_of(n));
  const std::int64_t length = clean_.get(names.front()).size(1);
  PatchingGrid grid = make_grid(point, rows, {"layer", "position"},
                                {static_cast<std::int64_t>(names.size()), length});
  for (std::size_t l = 0; l < names.size(); ++l)
    for (std::int64_t t = 0; t < length; ++t)
      grid.values[l * length + t] = patch({{names[l], -1, t}});
  return grid;
}

// --- attribution patching --------------------------------------------------------------

PatchingGrid Patching::attribution_by_head(const std::string& point) const {
  PatchingGrid per_position = attribution_by_head_position(point);
  PatchingGrid grid = head_grid(point, false);
  const std::int64_t heads = grid.shape[1], length = per_position.shape[2];
  for (std::int64_t i = 0; i < grid.shape[0] * heads; ++i) {
    double total = 0;
    for (std::int64_t t = 0; t < length; ++t) {
      const double v = per_position.values[static_cast<std::size_t>(i * length + t)];
      if (!std::isnan(v)) total += v;
    }
    grid.values[static_cast<std::size_t>(i)] = total;
  }
  return grid;
}

PatchingGrid Patching::attribution_by_head_position(const std::string& point) const {
  const std::vector<std::string> names = head_names(point, "inspect::Patching::attribution");
  PatchingGrid grid = head_grid(point, true);
  // One corrupted run keeping the graph: d metric / d activation at every patched point.
  CacheOptions options;
  options.names = names;
  options.with_grads = true;
  Tensor metric;
  std::vector<Tensor> activations;
  {
    GradModeGuard grad_on(true);
    CachedRun run = run_with_cache(
        model_, [&] { return run_(corrupted_input_); }, options);
    metric = metric_(run.output);
    for (const auto& n : names) activations.push_back(run.cache.get(n));
  }
  for (const Tensor& a : activations)
    if (!a.requires_grad())
      throw ValueError(
          "inspect::Patching::attribution: the corrupted run's activations do not "
          "require grad; keep the model's parameters requiring grad");
  const std::vector<Tensor> grads = autograd::grad({metric}, activations);
  NoGradGuard no_grad;
  const std::int64_t heads = grid.shape[1], length = grid.shape[2];
  const double gap = clean_metric_ - corrupted_metric_;
  for (std::size_t l = 0; l < names.size(); ++l) {
    if (!grads[l].defined()) continue;  // the metric does not depend on it: NaN stays
    // (clean - corrupted) * grad summed over the batch and the feature dims -> (H, L).
    const Tensor delta = sub(clean_.get(names[l]), corrupted_.get(names[l]));
    Tensor product = mul(delta, grads[l]).to(kFloat64);
    product = sum(product, {0});  // (H, L, ...)
    while (product.dim() > 2) product = sum(product, {product.dim() - 1});
    const std::vector<double> v = product.to(Device::cpu()).to_vector<double>();
    const std::int64_t h_count = product.size(0), t_count = product.size(1);
    for (std::int64_t h = 0; h < h_count; ++h)
      for (std::int64_t t = 0; t < t_count; ++t)
        grid.values[(l * heads + h) * length + t] = v[h * t_count + t] / gap;
  }
  return grid;
}

// --- path patching ------------------------------------------------------------------------

double Patching::path_patch(HeadId sender, HeadId receiver, const std::string& via) const {
  const char* op = "inspect::Patching::path_patch";
  if (via != "q" && via != "k" && via != "v")
    throw ValueError(std::string(op) + ": via must be q, k or v, got " + via);
  const std::vector<std::string> results = head_names("result", op);
  const std::vector<std::string> zs = names_.names_at("z");
  const std::vector<std::string> vias = names_.names_at(via);
  auto check = [&](HeadId id, const char* who) {
    if (id.layer < 0 || id.layer >= static_cast<std::int64_t>(results.size()) || id.head < 0 ||
        id.head >= heads_of(results[static_cast<std::size_t>(id.layer)]))
      throw IndexError(std::string(op) + ": " + who + " head (" + std::to_string(id.layer) + ", " +
                       std::to_string(id.head) + ") does not exist");
  };
  check(sender, "sender");
  check(receiver, "receiver");
  if (sender.layer >= receiver.layer)
    throw ValueError(std::string(op) + ": the sender's layer " + std::to_string(sender.layer) +
                     " must come before the receiver's " + std::to_string(receiver.layer));
  NoGradGuard no_grad;
  // Run 1: sender's clean result in; every other head's z and every MLP's output frozen at
  // their corrupted values; record the receiver's `via`.
  Hooks first(model_);
  const std::size_t s = static_cast<std::size_t>(sender.layer);
  first.add(results[s], sender.head, [&](const Tensor&, const HookContext&) {
    return select(clean_.get(results[s]), 1, sender.head);
  });
  for (std::size_t l = 0; l < zs.size(); ++l) {
    const Tensor frozen = corrupted_.get(zs[l]);
    const std::int64_t skip = l == s ? sender.head : -1;
    // The sender keeps its own z (its result is patched anyway).
    first.add(zs[l], [frozen, skip](const Tensor& z, const HookContext&) {
      return skip < 0 ? frozen : patched(frozen, z, /*head_point=*/true, skip, -1);
    });
  }
  for (const std::string& mlp : names_.names_at("mlp_out")) {
    const Tensor frozen = corrupted_.get(mlp);
    first.add(mlp, [frozen](const Tensor&, const HookContext&) { return frozen; });
  }
  const std::string receiver_name = vias[static_cast<std::size_t>(receiver.layer)];
  Tensor received;
  first.add(receiver_name, [&](const Tensor& value, const HookContext&) {
    received = value;
    return value;
  });
  run_with(first, corrupted_input_);
  // Run 2: the corrupted run with only the receiver's `via` replaced.
  Hooks second(model_);
  second.add(receiver_name, receiver.head,
             [&](const Tensor&, const HookContext&) { return select(received, 1, receiver.head); });
  return normalise(scalar(metric_(run_with(second, corrupted_input_)), op));
}

PatchingGrid Patching::path_patching(HeadId receiver, const std::string& via) const {
  PatchingGrid grid = head_grid("result", false);
  grid.point = "result -> " + via;
  const std::vector<std::string> results = names_.names_at("result");
  for (std::int64_t l = 0; l < receiver.layer && l < grid.shape[0]; ++l)
    for (std::int64_t h = 0; h < heads_of(results[static_cast<std::size_t>(l)]); ++h)
      grid.values[static_cast<std::size_t>(l * grid.shape[1] + h)] =
          path_patch({l, h}, receiver, via);
  return grid;
}

Patching::Restoring Patching::fewest_heads_restoring(double fraction) const {
  const PatchingGrid single = by_head("z");
  const std::vector<std::string> names = names_.names_at("z");
  std::vector<HeadId> order;
  for (std::int64_t l = 0; l < single.shape[0]; ++l)
    for (std::int64_t h = 0; h < heads_of(names[static_cast<std::size_t>(l)]); ++h)
      order.push_back({l, h});
  std::stable_sort(order.begin(), order.end(), [&](HeadId a, HeadId b) {
    return single.at(a.layer, a.head) > single.at(b.layer, b.head);
  });
  Restoring best;
  std::vector<Patch> patches;
  for (const HeadId& id : order) {
    best.heads.push_back(id);
    patches.push_back({names[static_cast<std::size_t>(id.layer)], id.head});
    best.restored = patch(patches);
    if (best.restored >= fraction) break;
  }
  return best;
}

// --- ablation ---------------------------------------------------------------------------

std::string to_string(Ablation kind) {
  switch (kind) {
    case Ablation::zero:
      return "zero";
    case Ablation::mean:
      return "mean";
    case Ablation::resample:
      return "resample";
  }
  return "?";
}

Ablation parse_ablation(const std::string& name) {
  for (Ablation a : {Ablation::zero, Ablation::mean, Ablation::resample})
    if (to_string(a) == name) return a;
  throw ValueError("parse_ablation: unknown ablation '" + name + "' (zero, mean, resample)");
}

namespace {

// The replacement source per point for ablate_heads: undefined (zero ablation), or the
// reference run's values reduced per kind (the mean over its batch, or its batch permuted).
std::vector<Tensor> ablation_sources(nn::Module& model, const ModelRun& run,
                                     const Tensor& reference, std::int64_t batch,
                                     const std::vector<std::string>& points, Ablation kind,
                                     std::uint64_t seed) {
  const char* op = "inspect::ablate_heads";
  std::vector<Tensor> source(points.size());
  if (kind == Ablation::zero) return source;
  reference.check_defined(op);
  if (kind == Ablation::resample && reference.size(0) != batch)
    throw ShapeError(std::string(op) + ": resample needs a reference batch of the input's size " +
                     std::to_string(batch) + ", got " + reference.describe());
  CacheOptions options;
  options.names = points;
  const CachedRun ref = run_with_cache(
      model, [&] { return run(reference); }, options);
  const std::int64_t n_ref = reference.size(0);
  std::vector<std::int64_t> perm(static_cast<std::size_t>(n_ref));
  std::iota(perm.begin(), perm.end(), 0);
  std::mt19937_64 rng(seed);
  std::shuffle(perm.begin(), perm.end(), rng);
  for (std::size_t l = 0; l < points.size(); ++l) {
    const Tensor values = ref.cache.get(points[l]);
    source[l] =
        kind == Ablation::mean
            ? mean(values, {0}, /*keepdim=*/true)
            : index_select(values, 0, from_vector<std::int64_t>(perm, {n_ref}).to(values.device()));
  }
  return source;
}

// The head count of each point: its attention layer's, else (a per-head point of another
// module) the head axis of the point's value on `input`.
std::vector<std::int64_t> ablation_heads(nn::Module& model, const ModelRun& run,
                                         const Tensor& input, const Hooks& names,
                                         const std::vector<std::string>& points) {
  std::vector<std::int64_t> head_counts;
  for (const auto& p : points) head_counts.push_back(names.heads_at(p));
  if (std::find(head_counts.begin(), head_counts.end(), 0) == head_counts.end()) return head_counts;
  CacheOptions options;
  options.names = points;
  const CachedRun sizes = run_with_cache(
      model, [&] { return run(input); }, options);
  for (std::size_t l = 0; l < points.size(); ++l)
    if (head_counts[l] == 0) head_counts[l] = sizes.cache.get(points[l]).size(1);
  return head_counts;
}

}  // namespace

AblationTable ablate_heads(nn::Module& model, const ModelRun& run, const Tensor& input,
                           const Tensor& reference, const LogitsMetric& metric, Ablation kind,
                           const std::string& point, std::uint64_t seed) {
  const char* op = "inspect::ablate_heads";
  NoGradGuard no_grad;
  Hooks names(model);
  const std::vector<std::string> points = names.names_at(point);
  if (points.empty() || !names.context(points.front()).per_head)
    throw ValueError(std::string(op) + ": '" + point +
                     "' is not a per-head hook point of the model; use q, k, v, scores, "
                     "pattern, z or result");
  const std::vector<Tensor> source =
      ablation_sources(model, run, reference, input.size(0), points, kind, seed);
  AblationTable table;
  table.kind = kind;
  table.point = point;
  table.baseline = scalar(metric(run(input)), op);
  const std::vector<std::int64_t> head_counts = ablation_heads(model, run, input, names, points);
  std::int64_t heads = 0;
  std::vector<std::string> rows;
  for (std::size_t l = 0; l < points.size(); ++l) {
    heads = std::max(heads, head_counts[l]);
    rows.push_back(module_of(points[l]));
  }
  table.metric =
      make_grid(point, rows, {"layer", "head"}, {static_cast<std::int64_t>(points.size()), heads});
  for (std::size_t l = 0; l < points.size(); ++l)
    for (std::int64_t h = 0; h < head_counts[l]; ++h) {
      if (interrupt_requested())
        throw Interrupted(std::string(op) + ": interrupted before layer " + std::to_string(l) +
                          ", head " + std::to_string(h));
      Hooks& hooks = names;  // the model's points, read once; one hook at a time
      hooks.clear();
      const Tensor src = source[l];
      hooks.add(points[l], h, [src, h](const Tensor& value, const HookContext&) {
        if (!src.defined()) return zeros_like(value);
        return add(zeros_like(value), select(src, 1, h));  // broadcasts a mean's batch of 1
      });
      auto scope = hooks.activate();
      table.metric.values[l * static_cast<std::size_t>(heads) + h] = scalar(metric(run(input)), op);
    }
  return table;
}

}  // namespace headgrad::inspect
