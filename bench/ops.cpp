// Micro benchmarks of the ops a transformer step is made of, forward and forward +
// backward, float32, one thread (Google Benchmark). The shapes are those of the attention
// benchmark configurations: tokens = batch x length rows of width E, scores (B, H, L, L).
//
//   bench_ops --benchmark_filter=softmax      # one family
//
// Each "_backward" case times forward + backward (a backward needs its graph); the
// difference with the forward case is the backward's cost.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "headgrad/headgrad.hpp"
#include "headgrad/nn/multihead_attention.hpp"
#include "headgrad/ops/loss.hpp"
#include "headgrad/ops/mask.hpp"
#include "headgrad/ops/norm.hpp"
#include "headgrad/ops/softmax.hpp"

namespace {

using namespace headgrad;

Tensor random_tensor(const Shape& shape, std::uint64_t seed, bool grad = false) {
  Generator gen(seed);
  Tensor t = randn(shape, kFloat32, &gen);
  if (grad) t.requires_grad_(true);
  return t;
}

// Runs `f` (which returns a tensor) per iteration; with backward, also sums the result and
// backpropagates.
template <typename F>
void run(benchmark::State& state, bool backward, F f) {
  set_num_threads(1);
  for (auto _ : state) {
    Tensor y = f();
    if (backward) sum(y).backward();
    benchmark::DoNotOptimize(y.raw_data());
  }
}

// (rows, in) @ (out, in)^T + bias: the attention in-projection of (B, L, E) = (64, 16, 64)
// and (32, 64, 256), as rows = B * L.
void BM_linear(benchmark::State& state, std::int64_t rows, std::int64_t in, std::int64_t out,
               bool backward) {
  Tensor x = random_tensor({rows, in}, 1, backward), w = random_tensor({out, in}, 2, backward),
         b = random_tensor({out}, 3, backward);
  run(state, backward, [&] { return linear(x, w, b); });
  state.counters["GFLOP/s"] = benchmark::Counter(
      static_cast<double>(2 * rows * in * out * (backward ? 3 : 1)) * state.iterations(),
      benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}
BENCHMARK_CAPTURE(BM_linear, in_proj_1024x64x192, 1024, 64, 192, false);
BENCHMARK_CAPTURE(BM_linear, in_proj_1024x64x192_backward, 1024, 64, 192, true);
BENCHMARK_CAPTURE(BM_linear, in_proj_2048x256x768, 2048, 256, 768, false);
BENCHMARK_CAPTURE(BM_linear, in_proj_2048x256x768_backward, 2048, 256, 768, true);

// Batched matmul (B*H, L, d) @ (B*H, d, L): attention scores.
void BM_matmul_scores(benchmark::State& state, std::int64_t bh, std::int64_t l, std::int64_t d,
                      bool backward) {
  Tensor q = random_tensor({bh, l, d}, 1, backward), k = random_tensor({bh, d, l}, 2, backward);
  run(state, backward, [&] { return matmul(q, k); });
}
BENCHMARK_CAPTURE(BM_matmul_scores, bh256_l16_d16, 256, 16, 16, false);
BENCHMARK_CAPTURE(BM_matmul_scores, bh256_l16_d16_backward, 256, 16, 16, true);
BENCHMARK_CAPTURE(BM_matmul_scores, bh256_l64_d32, 256, 64, 32, false);
BENCHMARK_CAPTURE(BM_matmul_scores, bh256_l64_d32_backward, 256, 64, 32, true);

// Softmax over the last dim of scores (B, H, L, L), plain and after a causal masked_fill.
void BM_softmax(benchmark::State& state, std::int64_t b, std::int64_t h, std::int64_t l,
                bool masked, bool backward) {
  Tensor scores = random_tensor({b, h, l, l}, 1, backward);
  const Tensor mask = causal_mask(l);
  run(state, backward, [&] {
    Tensor s =
        masked ? masked_fill(scores, mask, -std::numeric_limits<double>::infinity()) : scores;
    return softmax(s, -1, SoftmaxMode::safe);
  });
}
BENCHMARK_CAPTURE(BM_softmax, b32_h8_l64, 32, 8, 64, false, false);
BENCHMARK_CAPTURE(BM_softmax, b32_h8_l64_backward, 32, 8, 64, false, true);
BENCHMARK_CAPTURE(BM_softmax, causal_b32_h8_l64, 32, 8, 64, true, false);
BENCHMARK_CAPTURE(BM_softmax, causal_b32_h8_l64_backward, 32, 8, 64, true, true);

// LayerNorm over E of (rows, E).
void BM_layer_norm(benchmark::State& state, std::int64_t rows, std::int64_t e, bool backward) {
  Tensor x = random_tensor({rows, e}, 1, backward), w = random_tensor({e}, 2, backward),
         b = random_tensor({e}, 3, backward);
  run(state, backward, [&] { return layer_norm(x, {e}, w, b); });
}
BENCHMARK_CAPTURE(BM_layer_norm, rows2048_e128, 2048, 128, false);
BENCHMARK_CAPTURE(BM_layer_norm, rows2048_e128_backward, 2048, 128, true);

// Cross-entropy of (rows, V) logits, mean over rows (the toy GPT's head: 32 x 64 rows).
void BM_cross_entropy(benchmark::State& state, std::int64_t rows, std::int64_t v, bool backward) {
  Tensor logits = random_tensor({rows, v}, 1, backward);
  Generator gen(2);
  const Tensor targets = randint(0, v, {rows}, TensorOptions(kInt64), &gen);
  run(state, backward, [&] { return cross_entropy(logits, targets); });
}
BENCHMARK_CAPTURE(BM_cross_entropy, rows2048_v64, 2048, 64, false);
BENCHMARK_CAPTURE(BM_cross_entropy, rows2048_v64_backward, 2048, 64, true);

// nn::MultiheadAttention, self-attention, batch_first, need_weights=false, at the
// performance configurations (B, L, E, H).
void BM_mha(benchmark::State& state, std::int64_t b, std::int64_t l, std::int64_t e, std::int64_t h,
            bool backward) {
  Generator gen(1);
  nn::MultiheadAttention mha(nn::MultiheadAttentionOptions(e, h).with_batch_first(true), &gen);
  Tensor x = random_tensor({b, l, e}, 2, backward);
  const auto args = nn::MultiheadAttentionArgs().with_need_weights(false);
  run(state, backward, [&] { return mha(x, x, x, args).output; });
}
BENCHMARK_CAPTURE(BM_mha, b64_l16_e64_h4, 64, 16, 64, 4, false);
BENCHMARK_CAPTURE(BM_mha, b64_l16_e64_h4_backward, 64, 16, 64, 4, true);
BENCHMARK_CAPTURE(BM_mha, b32_l64_e256_h8, 32, 64, 256, 8, false);
BENCHMARK_CAPTURE(BM_mha, b32_l64_e256_h8_backward, 32, 64, 256, 8, true);
BENCHMARK_CAPTURE(BM_mha, b8_l128_e512_h8, 8, 128, 512, 8, false);
BENCHMARK_CAPTURE(BM_mha, b8_l128_e512_h8_backward, 8, 128, 512, 8, true);

}  // namespace

BENCHMARK_MAIN();
