// The one tap-reporting routine of both attention layers (nn/attention_observer.hpp):
// MultiheadAttention hands its taps as (N, H, ...) tensors, HeadwiseMultiheadAttention as
// H per-head (N, ...) tensors; everything else (which taps, the contribution route
// through the output projection) is shared.
#pragma once

#include <vector>

#include "headgrad/core/tensor.hpp"
#include "headgrad/nn/attention_observer.hpp"
#include "headgrad/nn/linear.hpp"
#include "headgrad/nn/module.hpp"

namespace headgrad::nn::detail {

// One tap's tensors: one (N, H, ...) tensor, or H per-head (N, ...) tensors.
struct HeadValues {
  std::vector<Tensor> parts;
  bool per_head = false;
};

struct AttentionTapValues {
  HeadValues q, k, v, scores, pattern, z;
};

// The observer for `layer` this forward: the active one if it wants any tap of the
// layer, else null (and the layer runs its untapped path).
AttentionObserver* observer_for(const Module* layer);

// Reports the wanted taps to `observer`. When the contribution tap is wanted, computes
// contribution (N, H, L, E) = z_h W_o,h^T from z (W_o = out_proj.weight, head h's columns
// [h*d, (h+1)*d)), reports it and returns the projection as its sum over heads plus
// out_proj.bias: (N, L, E). Otherwise returns an undefined tensor and the layer projects
// as usual. (Summing per-head products rounds differently from one GEMM; same value.)
Tensor report_attention_taps(AttentionObserver& observer, const Module* layer,
                             const AttentionTapValues& values, const Linear& out_proj);

}  // namespace headgrad::nn::detail
