// Per-head statistics, importance, ablation and pruning for the attention layers of a model
// (nn::MultiheadAttention and nn::HeadwiseMultiheadAttention, through nn::AttentionLayer).
//
// Layers are numbered in model order (attention_layers); a head is (layer, head). A head's
// width is d = options().head_dim(); a layer's projections have H * d rows (W_q, W_k, W_v)
// and out_proj.weight H * d columns.
//
//   head_grad_norms   after a backward: for each head h the L2 norms of the gradient of
//                     rows [h*d, (h+1)*d) of W_q, W_k, W_v, of columns [h*d, (h+1)*d) of
//                     out_proj.weight, and of its output z (when a capture holds z's
//                     gradient).
//   head_importance   Michel, Levy and Neubig (2019), "Are Sixteen Heads Really Better
//                     than One?": every head gets a gate xi_h multiplying its output (1,
//                     so the model is unchanged); importance I_h = mean over examples x of
//                     |dL(x)/dxi_h|, L(x) the example's loss (train::task_loss: the mean
//                     over its scored targets, or scored positions for regression tasks).
//                     One backward per batch gives every example's gradient: the gates are
//                     per example, (N, H), and the batch loss's gradient is rescaled by
//                     (scored in the batch) / (scored in x), counted by
//                     train::scored_per_example for every task kind.
//                     `normalized` divides each layer's scores by their L2 norm, as the
//                     paper does before pruning globally.
//   importance_order  every head, least important first. By default (automatic) it ranks
//                     by the normalized scores when every layer has at least two heads, and
//                     by the raw scores otherwise: a one-head layer's normalized score is
//                     always 1 (or 0), so normalized scores cannot rank its head against
//                     others.
//   HeadAblation      sets the gates of chosen heads to 0 (the rest 1) for its lifetime.
//   pruning_curve     loss and accuracy as heads are removed one by one in a given order
//                     (importance_order; greedy_order, the greedy best order by ablation
//                     loss; random_order). random_pruning_band summarizes the curves of
//                     many random orders, evaluating each set of removed heads once.
//   head_parameter_counts / attention_parameter_count
//                     parameters per head and per model, to plot a pruning curve against
//                     the fraction of attention parameters removed.
// Mechanism scores (previous-token and induction heads) are in inspect/mechanism.hpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "headgrad/inspect/capture.hpp"
#include "headgrad/nn/module.hpp"
#include "headgrad/nn/multihead_attention.hpp"
#include "headgrad/train/trainer.hpp"

namespace headgrad::inspect {

struct NamedAttentionLayer {
  std::string name;  // dotted path in the model, e.g. "layers.0.self_attn" ("" = the model)
  nn::AttentionLayer* layer = nullptr;
};

// Every attention layer of `model`, the model itself included, in model order.
std::vector<NamedAttentionLayer> attention_layers(nn::Module& model);

// One head of a model: `layer` indexes attention_layers(model) (model order, the model
// itself first when it is an attention layer), `head` counts from 0 within that layer.
// Brace-initialize it: HeadAblation ablate(model, {{0, 2}, {1, 0}}).
struct HeadId {
  std::int64_t layer = 0;  // index into attention_layers(model)
  std::int64_t head = 0;
  bool operator==(const HeadId&) const = default;
};

struct HeadGradNorms {
  std::int64_t layer = 0;
  std::int64_t head = 0;
  double w_q = 0, w_k = 0, w_v = 0;  // row blocks of the projections' gradients
  double w_o = 0;                    // column block of out_proj.weight's gradient
  double z = -1;                     // ||dL/dz_h||, or -1 without a captured z gradient
};

// Reads the gradients left by the last backward (a parameter without one counts 0).
// With `capture` holding "<layer>.z" with its gradient, z is filled too. One entry per
// head, layer-major: layer 0's heads 0 .. H-1, then layer 1's, ... (attention_layers
// order), so entry l * H + h is head (l, h) when every layer has H heads; each entry also
// names its layer and head.
std::vector<HeadGradNorms> head_grad_norms(nn::Module& model, const Capture* capture = nullptr);

// How the heads' updates relate (docs/research/heads.md, "The gradient question"): per
// attention layer and projection, the cosine between every pair of heads' gradient blocks
// (W_q, W_k, W_v: head h's rows; W_o: its columns), [head][head], 1 on the diagonal, NaN
// where a block's gradient is 0. Reads the gradients left by the last backward.
struct HeadGradCosines {
  std::string layer;  // attention_layers name
  std::vector<std::vector<double>> w_q, w_k, w_v, w_o;
};
std::vector<HeadGradCosines> head_grad_cosines(nn::Module& model);

// Two models whose attention layers have the same projection shapes (e.g. one head and
// eight at one width E, loaded with the same weights), compared block by block: each
// layer's W_q, W_k, W_v gradients cut into `slices` equal row blocks and W_o's into
// `slices` column blocks (the heads' blocks of a model with `slices` heads). For every
// layer and slice, in model order: the cosine between the two models' blocks (NaN where one
// is 0) and the norm ratio ||a|| / ||b|| (NaN where b's is 0). ValueError naming the layer
// when the layer counts or projection shapes differ, or `slices` does not divide the
// projections' width.
struct GradSliceComparison {
  std::int64_t layer = 0, slice = 0;
  double cos_q = 0, cos_k = 0, cos_v = 0, cos_o = 0;
  double ratio_q = 0, ratio_k = 0, ratio_v = 0, ratio_o = 0;
};
std::vector<GradSliceComparison> compare_grad_slices(nn::Module& a, nn::Module& b,
                                                     std::int64_t slices);

struct HeadImportance {
  std::vector<std::string> layers;              // attention layer names
  std::vector<std::vector<double>> raw;         // [layer][head]: mean |dL(x)/dxi|
  std::vector<std::vector<double>> normalized;  // each layer's row divided by its L2 norm
  std::int64_t examples = 0;                    // examples with at least one scored target
};

// Importance over batches 0 .. batches-1 of `split`, in eval mode (the training mode and
// every layer's gates are restored afterwards; the parameters' gradients are left as
// they were). Existing gates of shape (H) are kept as the gates' values.
HeadImportance head_importance(nn::Module& model, const train::ForwardFn& forward,
                               const train::Task& task, train::Split split, std::int64_t batches,
                               std::int64_t batch_size);

// Which scores importance_order ranks by.
//   normalized  each layer's scores divided by their L2 norm (HeadImportance::normalized),
//               Michel et al. (2019)'s global ranking.
//   raw         the mean |dL/dxi| themselves (HeadImportance::raw).
//   automatic   normalized when every layer has at least two heads, raw otherwise: a layer
//               with one head has the normalized score 1 (0 when its raw score is 0)
//               whatever its raw score, so ranking by normalized scores would order such
//               heads by nothing but their layer.
enum class ImportanceRanking { automatic, raw, normalized };

// Every head, least important first (ties: model order). The heads are those of
// importance.normalized (importance.raw when normalized is empty); ValueError when the
// table ranked by is missing or shaped differently.
std::vector<HeadId> importance_order(const HeadImportance& importance,
                                     ImportanceRanking ranking = ImportanceRanking::automatic);
// Every head of `model` in a random order drawn from `seed`.
std::vector<HeadId> random_order(nn::Module& model, std::uint64_t seed);

// Gates 0 on `heads` and 1 on every other head of `model` while alive; the layers' gates
// before it are restored when it ends. IndexError for a head that does not exist.
class HeadAblation {
 public:
  HeadAblation(nn::Module& model, const std::vector<HeadId>& heads);
  ~HeadAblation();
  HeadAblation(const HeadAblation&) = delete;
  HeadAblation& operator=(const HeadAblation&) = delete;

 private:
  std::vector<NamedAttentionLayer> layers_;
  std::vector<Tensor> saved_;
};

struct PruningPoint {
  std::int64_t removed = 0;  // heads ablated: the first `removed` of the order
  double loss = 0;
  double accuracy = 0;
};

// train::evaluate with the first k heads of `order` ablated, for k = 0 .. order.size().
std::vector<PruningPoint> pruning_curve(nn::Module& model, const train::ForwardFn& forward,
                                        const train::Task& task, train::Split split,
                                        std::int64_t batches, std::int64_t batch_size,
                                        const std::vector<HeadId>& order);

// Greedy ablation order: repeatedly removes the head whose ablation, together with the
// heads removed before it, gives the lowest train::evaluate loss on `split` (ties: model
// order). Its pruning curve is a reference for importance orders: close to the best loss
// any order reaches at each k (greedy, so not a guaranteed optimum). It costs
// n (n + 1) / 2 evaluations for n heads. The model's gates are restored afterwards.
std::vector<HeadId> greedy_order(nn::Module& model, const train::ForwardFn& forward,
                                 const train::Task& task, train::Split split, std::int64_t batches,
                                 std::int64_t batch_size);

// The pruning curves of `orders` random orders, summarized at each k = 0 .. n heads
// removed: the mean over orders, and the central `coverage` band, low = the
// (1 - coverage) / 2 quantile and high = the (1 + coverage) / 2 quantile of the orders'
// values, each by linear interpolation between order statistics (numpy's default
// "linear" rule: the q quantile of sorted v_0 <= ... <= v_{m-1} is v at position
// q (m - 1)). The mean of a skewed sample can fall outside the band.
struct PruningBand {
  std::vector<std::int64_t> removed;  // 0 .. n
  std::vector<double> mean_accuracy, low_accuracy, high_accuracy;
  std::vector<double> mean_loss, low_loss, high_loss;
  std::int64_t orders = 0;
  std::int64_t evaluations = 0;  // distinct sets of removed heads evaluated
};

// Order i is random_order(model, seed + i). Every set of removed heads is evaluated once
// (train::evaluate with those heads ablated) and reused by every order that removes the
// same set at some k: the empty set, the full set, and shared prefixes (as sets). The
// numbers equal those of pruning_curve on each order. ValueError unless orders >= 1 and
// 0 < coverage <= 1.
PruningBand random_pruning_band(nn::Module& model, const train::ForwardFn& forward,
                                const train::Task& task, train::Split split, std::int64_t batches,
                                std::int64_t batch_size, std::int64_t orders, std::uint64_t seed,
                                double coverage = 0.95);

// Parameters per head, in model head order (layer-major, as random_order lists heads).
// Head h (width d, H heads, E = embed_dim) of a layer counts
//   rows [h*d, (h+1)*d) of W_q, W_k and W_v      d * (E + kdim + vdim)
//   the same entries of their biases             3 * d            (when bias)
//   bias_k[..., h*d:(h+1)*d], bias_v likewise    2 * d            (when add_bias_kv)
//   columns [h*d, (h+1)*d) of out_proj.weight    E * d
// out_proj.bias (E) is shared by every head and belongs to no head. The per-head layout
// counts the same numbers (each head's q/k/v_proj and bias_k/bias_v, and its columns of
// out_proj.weight).
std::vector<std::int64_t> head_parameter_counts(nn::Module& model);
// Every parameter of every attention layer (out_proj.bias included): the sum of
// head_parameter_counts plus each layer's out_proj.bias.
std::int64_t attention_parameter_count(nn::Module& model);

}  // namespace headgrad::inspect
