// Direct logit attribution and the logit lens for nn::GPT (TransformerLens's
// decompose_resid / logit_attrs and accumulated_resid with apply_ln).
//
// In a pre-norm GPT (norm_first) the final residual stream is a sum of components:
//   x = embed + sum over layers l of (sum over heads h of result[l, h] + b_o[l] + mlp_out[l])
// and logits = lm_head(norm(x)). With norm's scale frozen at its value in the run
// (sigma = sqrt(var(x) + eps) per example and position, as TransformerLens does), norm is
// affine in each component c: (c - mean(c)) / sigma * gamma, plus beta once. A component's
// direct contribution to the logit difference between tokens a and b at a position is
//   ((c - mean(c)) / sigma * gamma) . (W_U[a] - W_U[b])
// and the contributions plus beta . (W_U[a] - W_U[b]) sum to the logit difference
// exactly (up to rounding). Values are means over the examples, in float64.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "headgrad/core/tensor.hpp"
#include "headgrad/nn/gpt.hpp"

namespace headgrad::inspect {

struct LogitAttribution {
  // "embed", then per layer l "layers.<l>.self_attn.head<h>" for each head,
  // "layers.<l>.self_attn.bias" (b_o) and "layers.<l>.mlp", then "norm.bias" (beta).
  std::vector<std::string> labels;
  std::vector<double> values;  // each component's mean direct contribution
  // values[k] for the heads as (layer, head).
  std::vector<std::vector<double>> heads;
  double logit_difference = 0;  // the model's own mean logit difference
  double sum() const;           // of values: equals logit_difference up to rounding
};

// tokens (N, T) (or the model's float input); position, answer, wrong (N) int64. The model
// runs in its current mode (call eval()). ValueError for a post-norm GPT (norm_first
// false), whose layers normalise the residual stream inside the sum.
LogitAttribution direct_logit_attribution(const nn::GPT& model, const Tensor& input,
                                          const Tensor& position, const Tensor& answer,
                                          const Tensor& wrong);

struct LogitLens {
  std::vector<std::string> stages;  // "embed", "layers.0", ..., the last is the model's output
  std::vector<Tensor> logits;       // (N, T, V) per stage: lm_head(norm(residual))
};

// The residual stream after the embedding and after each layer, decoded through the final
// norm (when the model has one) and lm_head. The last stage equals the model's logits.
LogitLens logit_lens(const nn::GPT& model, const Tensor& input);

}  // namespace headgrad::inspect
