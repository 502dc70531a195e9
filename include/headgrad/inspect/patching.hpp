// Causal interventions on a model's hook points (inspect/hooks.hpp): activation patching,
// path patching, attribution patching and head ablation (TransformerLens's
// transformer_lens.patching, and the methods of Meng et al. 2022, Wang et al. 2022 and
// Nanda 2023).
//
// Activation patching ("denoising"): the model runs on a corrupted input with one hook
// point, or one head or position of it, set to its value in the clean run; the metric
// of the output is normalised as
//     (m_patched - m_corrupted) / (m_clean - m_corrupted),
// so 1 means the patch restores the clean behaviour and 0 that it does nothing. The metric
// is any scalar of the logits; logit_difference is the usual one.
//
// Positions are dim 2 of the per-head points (query positions for q, scores, pattern, z,
// result; key positions for k and v) and dim 1 of the residual points (models in batch
// first layout, as GPT). Every run here is without gradients and in the model's current
// mode (call eval() first: dropout would make patched and clean runs differ).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "headgrad/core/shape.hpp"
#include "headgrad/core/tensor.hpp"
#include "headgrad/inspect/heads.hpp"
#include "headgrad/inspect/hooks.hpp"
#include "headgrad/nn/module.hpp"

namespace headgrad::nn {
class GPT;
}

namespace headgrad::inspect {

// mean over n of logits[n, position[n], answer[n]] - logits[n, position[n], wrong[n]]:
// logits (N, T, V), position / answer / wrong (N) int64. A differentiable scalar; errors
// name the op and the shapes.
Tensor logit_difference(const Tensor& logits, const Tensor& position, const Tensor& answer,
                        const Tensor& wrong);

using ModelRun = std::function<Tensor(const Tensor& input)>;       // input -> logits
using LogitsMetric = std::function<Tensor(const Tensor& logits)>;  // logits -> scalar

// A grid of normalised metrics (or raw ones, for ablations): values row-major in `shape`.
struct PatchingGrid {
  std::string point;              // the hook point patched ("z", "resid_pre", ...)
  std::vector<std::string> rows;  // the module of each row ("layers.0.self_attn")
  std::vector<std::string> dims;  // "layer", then "head" and/or "position"
  Shape shape;
  std::vector<double> values;
  double at(std::int64_t i, std::int64_t j = -1, std::int64_t k = -1) const;
  Tensor tensor() const;  // float64, `shape`
};

class Patching {
 public:
  // Runs the clean and corrupted inputs once each, caching every hook point. ValueError
  // when the two metrics are (nearly) equal: there is nothing to restore.
  Patching(nn::Module& model, ModelRun run, Tensor clean, Tensor corrupted, LogitsMetric metric);
  // A GPT run as model.forward(input, key_padding_mask). In eval mode a patched run whose
  // patches all lie in layers l and later starts from the corrupted run's cached resid_pre
  // of layer l (GPT::forward_from) instead of recomputing the layers before it: those keep
  // the corrupted run's cached values, which a whole run would recompute with fewer hooks
  // active, on the fused attention path: the grids agree with whole runs to the last bits.
  Patching(nn::GPT& model, Tensor clean, Tensor corrupted, LogitsMetric metric,
           Tensor key_padding_mask = {});

  double clean_metric() const { return clean_metric_; }
  double corrupted_metric() const { return corrupted_metric_; }
  double normalise(double metric) const;
  const ActivationCache& clean_cache() const { return clean_; }
  const ActivationCache& corrupted_cache() const { return corrupted_; }
  const Hooks& hooks() const { return names_; }

  // What one patched run sets to its clean value: a hook point, one head of it (head >= 0),
  // and/or one position of it (position >= 0).
  struct Patch {
    std::string name;
    std::int64_t head = -1;
    std::int64_t position = -1;
  };
  // The corrupted run with `patches` applied: the normalised metric.
  double patch(const std::vector<Patch>& patches) const;

  // Each grid patches the points of one own name ("z", "resid_pre"; nn/hooks.hpp), in
  // model order; ValueError naming the model's points when it has none of that name.
  PatchingGrid by_layer(const std::string& point) const;                   // (layer)
  PatchingGrid by_head(const std::string& point = "z") const;              // (layer, head)
  PatchingGrid by_head_position(const std::string& point = "z") const;     // (layer, head, pos)
  PatchingGrid by_position(const std::string& point = "resid_pre") const;  // (layer, pos)

  // Attribution patching (Nanda 2023): the first-order estimate of by_head /
  // by_head_position from one forward and one backward of the corrupted run:
  // sum of (clean - corrupted) * d metric / d activation over the patched slice, normalised.
  PatchingGrid attribution_by_head(const std::string& point = "z") const;
  PatchingGrid attribution_by_head_position(const std::string& point = "z") const;

  // Path patching (Wang et al. 2022): the sender head's clean `result` enters the corrupted
  // run, every other head's z and every MLP's output are frozen to their corrupted values,
  // and the receiver head's `via` (q, k or v) is recorded; the corrupted run is then
  // repeated with only that input of the receiver patched. The normalised metric.
  double path_patch(HeadId sender, HeadId receiver, const std::string& via) const;
  // Every sender before the receiver's layer (layer, head); later cells are NaN.
  PatchingGrid path_patching(HeadId receiver, const std::string& via) const;

  // The fewest heads (greedy: by their single-head z patching effect, largest first) whose
  // joint z patching restores at least `fraction` of the metric; restored is the
  // normalised metric they reach (all heads when no smaller set does).
  struct Restoring {
    std::vector<HeadId> heads;
    double restored = 0;
  };
  Restoring fewest_heads_restoring(double fraction = 0.9) const;

 private:
  struct Attribution;
  PatchingGrid head_grid(const std::string& point, bool positions) const;
  Tensor run_with(Hooks& hooks, const Tensor& input) const;
  Tensor run_patched(Hooks& hooks, const std::vector<Patch>& patches) const;
  std::vector<std::string> head_names(const std::string& point, const char* op) const;
  std::vector<std::string> names_of(const std::string& point, const char* op) const;
  std::int64_t heads_of(const std::string& name) const;

  nn::Module& model_;
  ModelRun run_;
  // (layer, its resid_pre) -> logits: the rest of the run from that layer; empty unless the
  // model is a GPT run by the GPT constructor.
  std::function<Tensor(std::int64_t, const Tensor&)> resume_;
  Tensor clean_input_, corrupted_input_;
  LogitsMetric metric_;
  Hooks names_;
  ActivationCache clean_, corrupted_;
  double clean_metric_ = 0, corrupted_metric_ = 0;
};

enum class Ablation { zero, mean, resample };
std::string to_string(Ablation kind);
Ablation parse_ablation(const std::string& name);  // "zero", "mean", "resample"

struct AblationTable {
  Ablation kind = Ablation::zero;
  std::string point;    // "z"
  double baseline = 0;  // the metric without ablation
  PatchingGrid metric;  // (layer, head): the raw metric with that head ablated
};

// Ablates each head's `point` (default z) in turn on `input` and measures `metric`:
//   zero      the head's value set to 0
//   mean      its mean over `reference`'s examples, per position (TransformerLens's
//             mean ablation); reference must have input's shape past the batch dim
//   resample  each example takes the value of another example of `reference` (a seeded
//             permutation of reference's batch, which must have input's batch size)
AblationTable ablate_heads(nn::Module& model, const ModelRun& run, const Tensor& input,
                           const Tensor& reference, const LogitsMetric& metric, Ablation kind,
                           const std::string& point = "z", std::uint64_t seed = 0);

}  // namespace headgrad::inspect
