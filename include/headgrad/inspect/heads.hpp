// Per-head statistics, importance and ablation for the attention layers of a model
// (nn::MultiheadAttention and nn::HeadwiseMultiheadAttention, through nn::AttentionLayer).
//
// Layers are numbered in model order (attention_layers); a head is (layer, head).
//
//   head_grad_norms   after a backward: for each head h (d = head_dim) the L2 norms of
//                     the gradient of rows [h*d, (h+1)*d) of W_q, W_k, W_v, of columns
//                     [h*d, (h+1)*d) of out_proj.weight, and of its output z (when a
//                     capture holds z's gradient).
//   head_importance   Michel, Levy and Neubig (2019), "Are Sixteen Heads Really Better
//                     than One?": every head gets a gate xi_h multiplying its output (1,
//                     so the model is unchanged); importance I_h = mean over examples x of
//                     |dL(x)/dxi_h|, L(x) the example's loss (mean over its scored
//                     targets). One backward per batch gives every example's gradient: the
//                     gates are per example, (N, H), and the batch loss's gradient is
//                     rescaled by (scored targets in the batch) / (scored targets of x).
//                     `normalized` divides each layer's scores by their L2 norm, as the
//                     paper does before pruning globally.
//   HeadAblation      sets the gates of chosen heads to 0 (the rest 1) for its lifetime.
//   pruning_curve     accuracy as heads are removed one by one in a given order
//                     (importance_order: least important first; random_order).
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
// With `capture` holding "<layer>.z" with its gradient, z is filled too.
std::vector<HeadGradNorms> head_grad_norms(nn::Module& model, const Capture* capture = nullptr);

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

// Every head, least important first by normalized importance (ties: model order).
std::vector<HeadId> importance_order(const HeadImportance& importance);
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

}  // namespace headgrad::inspect
