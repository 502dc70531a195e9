// Plain-loop attention over std::vector<double>, written independently of headgrad's ops,
// as the expected values for the attention tests.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace headgrad::testing {

// One head: q (L, E), k (S, E), v (S, Ev), blocked (L, S) (true = blocked), additive (L, S)
// or empty. Returns {output (L, Ev), weights (L, S)} row-major; a fully blocked row gives
// zeros.
struct ReferenceAttention {
  std::vector<double> output, weights;
};

inline ReferenceAttention reference_attention(const std::vector<double>& q,
                                              const std::vector<double>& k,
                                              const std::vector<double>& v, std::int64_t L,
                                              std::int64_t S, std::int64_t E, std::int64_t Ev,
                                              double scale, const std::vector<bool>& blocked = {},
                                              const std::vector<double>& additive = {}) {
  ReferenceAttention r;
  r.output.assign(L * Ev, 0.0);
  r.weights.assign(L * S, 0.0);
  for (std::int64_t i = 0; i < L; ++i) {
    std::vector<double> score(S);
    double best = -std::numeric_limits<double>::infinity();
    for (std::int64_t j = 0; j < S; ++j) {
      double dot = 0;
      for (std::int64_t e = 0; e < E; ++e) dot += q[i * E + e] * k[j * E + e];
      score[j] = dot * scale;
      if (!additive.empty()) score[j] += additive[i * S + j];
      if (!blocked.empty() && blocked[i * S + j])
        score[j] = -std::numeric_limits<double>::infinity();
      best = std::max(best, score[j]);
    }
    if (std::isinf(best) && best < 0) continue;  // fully blocked: zeros
    double total = 0;
    for (std::int64_t j = 0; j < S; ++j) total += std::exp(score[j] - best);
    for (std::int64_t j = 0; j < S; ++j) {
      const double w = std::exp(score[j] - best) / total;
      r.weights[i * S + j] = w;
      for (std::int64_t e = 0; e < Ev; ++e) r.output[i * Ev + e] += w * v[j * Ev + e];
    }
  }
  return r;
}

}  // namespace headgrad::testing
