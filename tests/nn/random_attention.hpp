// Test fixtures for attention layers: a float64 fused layer with every parameter random and
// nonzero, and the same layer in either layout (fused or per-head).
#pragma once

#include <cstdint>
#include <memory>

#include "headgrad/headgrad.hpp"
#include "headgrad/nn/attention_head.hpp"
#include "headgrad/nn/multihead_attention.hpp"

namespace headgrad::testing {

// A float64 fused layer whose every parameter (biases included) is N(0, 0.25) from `seed`.
inline std::shared_ptr<nn::MultiheadAttention> random_fused(
    const nn::MultiheadAttentionOptions& options, std::uint64_t seed) {
  auto fused = std::make_shared<nn::MultiheadAttention>(options);
  fused->to(kFloat64);
  Generator gen(seed);
  NoGradGuard no_grad;
  for (auto& [name, p] : fused->named_parameters())
    p.copy_(mul(randn(p.shape(), kFloat64, &gen), 0.5));
  return fused;
}

// `fused` itself, or a per-head copy of it.
inline std::shared_ptr<nn::AttentionLayer> layout_of(
    const std::shared_ptr<nn::MultiheadAttention>& fused, bool per_head) {
  if (per_head) return nn::HeadwiseMultiheadAttention::from_fused(*fused);
  return fused;
}

}  // namespace headgrad::testing
