// The GEMMs of one toy GPT training step and nothing else, as direct cblas_sgemm calls
// on preallocated buffers: the time below which no framework on this OpenBLAS can run the
// step, printed by the side-by-side runner next to the GPT rows.
#pragma once

#include <functional>

namespace bench {

// The step's shapes are those of bench_case --case gpt (batch 32, context 64, d_model
// 128, 4 heads, feed-forward 512, 2 layers, vocab 64): for every linear layer the forward
// x W^T, and in backward dx = dy W and dW = dy^T x; for every (example, head) the four
// attention products of the forward and backward (full L x L, no causal skipping).
// Returns a callable that runs them once.
std::function<void()> gpt_gemm_step();

}  // namespace bench
