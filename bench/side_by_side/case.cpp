// bench_case: times one benchmark configuration with headgrad and prints one JSON line,
// the headgrad half of the side-by-side runner (bench/side_by_side/run.py runs the
// PyTorch half with the same configuration and interleaves the two).
//
//   bench_case --case mha --batch 64 --len 16 --embed 64 --heads 4 --mask causal --mode train
//   bench_case --case gpt --steps 20          # toy GPT training steps (+ peak RSS)
//   bench_case --case sgemm --size 1024       # the sgemm reference (GFLOP/s)
//   bench_case --case gpt_gemms               # only the GEMMs of a GPT step (gemm_floor.hpp)
//
// Output: {"case": ..., "times_ms": [one per timed iteration], "peak_rss_kb": ...}.
// Configurations (float32, self-attention, batch_first, need_weights=false):
//   mha   MultiheadAttention(E, H); mask none, causal (attn_mask (L, L)), or padding
//         (key_padding_mask (B, L), the last L/4 keys of every other example); mode
//         forward (no graph) or train (forward, sum of the output, backward)
//   gpt   nn::GPT vocab 64, d_model 128, 4 heads, 2 layers, context 64, batch 32,
//         pre-norm, GELU, AdamW: forward, cross-entropy, zero_grad, backward, step
#include <fstream>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "gemm_floor.hpp"
#include "headgrad/headgrad.hpp"
#include "headgrad/ops/loss.hpp"
#include "headgrad/ops/mask.hpp"
#include "headgrad/optim/adam.hpp"

namespace {

using namespace headgrad;

template <typename F>
std::vector<double> time_iterations(int warmup, int iterations, F f) {
  for (int i = 0; i < warmup; ++i) f();
  std::vector<double> times;
  for (int i = 0; i < iterations; ++i) {
    const auto start = std::chrono::steady_clock::now();
    f();
    times.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count());
  }
  return times;
}

std::vector<double> mha_case(std::int64_t b, std::int64_t l, std::int64_t e, std::int64_t h,
                             const std::string& mask, bool train, int warmup, int iterations) {
  Generator gen(1);
  nn::MultiheadAttention mha(nn::MultiheadAttentionOptions(e, h).with_batch_first(true), &gen);
  Tensor x = randn({b, l, e}, kFloat32, &gen);
  if (train) x.requires_grad_(true);
  auto args = nn::MultiheadAttentionArgs().with_need_weights(false);
  if (mask == "causal") {
    args.with_attn_mask(causal_mask(l));
  } else if (mask == "padding") {
    std::vector<bool> padding(static_cast<std::size_t>(b * l), false);
    for (std::int64_t n = 0; n < b; n += 2)
      for (std::int64_t s = l - l / 4; s < l; ++s)
        padding[static_cast<std::size_t>(n * l + s)] = true;
    args.with_key_padding_mask(from_vector(padding, {b, l}));
  } else if (mask != "none") {
    throw ValueError("bench_case: --mask must be none, causal or padding, got " + mask);
  }
  return time_iterations(warmup, iterations, [&] {
    if (train) {
      mha.zero_grad();
      x.zero_grad();
      sum(mha(x, x, x, args).output).backward();
    } else {
      NoGradGuard no_grad;
      mha(x, x, x, args);
    }
  });
}

std::vector<double> gpt_case(int warmup, int iterations) {
  const std::int64_t vocab = 64, context = 64, batch = 32;
  nn::GPTOptions o;
  o.vocab_size = vocab;
  o.max_len = context;
  o.d_model = 128;
  o.nhead = 4;
  o.num_layers = 2;
  Generator gen(1);
  nn::GPT model(o, &gen);
  optim::AdamW optimizer(model.parameters(), optim::AdamWOptions().with_lr(1e-3));
  const Tensor tokens = randint(0, vocab, {batch, context}, TensorOptions(kInt64), &gen);
  const Tensor targets = randint(0, vocab, {batch * context}, TensorOptions(kInt64), &gen);
  return time_iterations(warmup, iterations, [&] {
    const Tensor logits = model(tokens);
    const Tensor loss = cross_entropy(reshape(logits, {batch * context, vocab}), targets);
    optimizer.zero_grad();
    loss.backward();
    optimizer.step();
  });
}

// The peak resident set of this process image, VmHWM in /proc/self/status. Not
// getrusage's ru_maxrss: Linux carries that over from the pre-exec image, which is a fork
// of the (possibly large) parent. -1 where /proc is unavailable.
long peak_rss_kb() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  return -1;
}

std::vector<double> sgemm_case(std::int64_t n, int warmup, int iterations) {
  Generator gen(1);
  const Tensor a = randn({n, n}, kFloat32, &gen), b = randn({n, n}, kFloat32, &gen);
  return time_iterations(warmup, iterations, [&] { matmul(a, b); });
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Time one side-by-side benchmark configuration with headgrad."};
  std::string which = "mha", mask = "none", mode = "forward";
  std::int64_t batch = 64, len = 16, embed = 64, heads = 4, size = 1024;
  int threads = 1, warmup = 3, iterations = 20;
  app.add_option("--case", which, "mha, gpt, gpt_gemms or sgemm")->capture_default_str();
  app.add_option("--batch", batch)->capture_default_str();
  app.add_option("--len", len)->capture_default_str();
  app.add_option("--embed", embed)->capture_default_str();
  app.add_option("--heads", heads)->capture_default_str();
  app.add_option("--mask", mask, "none, causal or padding")->capture_default_str();
  app.add_option("--mode", mode, "forward or train")->capture_default_str();
  app.add_option("--size", size, "sgemm: n of the n x n product")->capture_default_str();
  app.add_option("--threads", threads)->capture_default_str();
  app.add_option("--warmup", warmup)->capture_default_str();
  app.add_option("--iterations", iterations)->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    set_num_threads(threads);
    std::vector<double> times;
    if (which == "mha")
      times = mha_case(batch, len, embed, heads, mask, mode == "train", warmup, iterations);
    else if (which == "gpt")
      times = gpt_case(warmup, iterations);
    else if (which == "gpt_gemms")
      times = time_iterations(warmup, iterations, bench::gpt_gemm_step());
    else if (which == "sgemm")
      times = sgemm_case(size, warmup, iterations);
    else
      throw ValueError("bench_case: --case must be mha, gpt, gpt_gemms or sgemm, got " + which);
    std::printf("{\"case\": \"%s\", \"times_ms\": [", which.c_str());
    for (std::size_t i = 0; i < times.size(); ++i) std::printf("%s%.6f", i ? ", " : "", times[i]);
    std::printf("], \"peak_rss_kb\": %ld}\n", peak_rss_kb());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_case: %s\n", e.what());
    return 1;
  }
  return 0;
}
