// bench_case: times one benchmark configuration with headgrad and prints one JSON line,
// the headgrad half of the side-by-side runner (bench/side_by_side/run.py runs the
// PyTorch half with the same configuration and interleaves the two).
//
//   bench_case --case mha --batch 64 --len 16 --embed 64 --heads 4 --mask causal --mode train
//   bench_case --case gpt --steps 20          # toy GPT training steps (+ peak RSS)
//   bench_case --case sgemm --size 1024       # the sgemm reference (GFLOP/s)
//   bench_case --case add --size 16           # one a + b on (16,): the per-call cost
//   bench_case --case gpt_gemms               # only the GEMMs of a GPT step (gemm_floor.hpp)
//   bench_case --case ensemble --members 10 --vocab 22 --context 19 --d-model 64 --heads 8
//              --clip 1    # one training step of 10 such GPTs as an nn::GPTEnsemble
//   bench_case --case patching --vocab 22 --context 19 --d-model 64 --heads 8 --batch 128
//              # a full (layer, head, position) z patching sweep of a study model
//   bench_case --case mha ... --device cuda:0 [--tf32]   # on a GPU (run.py --device cuda)
//   bench_case --case gpt --device cuda --d-model 512 --heads 8 --layers 6 --context 256
//              --batch 64                      # a bigger GPT (defaults: the toy GPT below)
//
// Output: {"case": ..., "times_ms": [one per timed iteration], "peak_rss_kb": ...}; on a
// GPU also "device", "device_name" and "peak_allocated_bytes" (cuda_memory_stats' peak
// over the case, warm-up included). On a GPU every timed iteration ends with
// cuda_synchronize, so the times include the device's work, not just the launches; inputs
// and weights are made on the CPU from the same seeds and copied, as on the PyTorch side.
// --tf32 allows TF32 tensor cores for float32 matmuls (set_cuda_allow_tf32; off by default).
// Configurations (float32, self-attention, batch_first, need_weights=false):
//   mha   MultiheadAttention(E, H); mask none, causal (attn_mask (L, L)), or padding
//         (key_padding_mask (B, L), the last L/4 keys of every other example); mode
//         forward (no graph) or train (forward, sum of the output, backward)
//   gpt   nn::GPT vocab 64, d_model 128, 4 heads, 2 layers, context 64, batch 32 (unless
//         --vocab, --d-model, --heads, --layers, --context, --batch say otherwise),
//         pre-norm, GELU, AdamW: forward, cross-entropy, zero_grad, backward, step;
//         --clip N clips the gradient norm to N before the step (the study's models:
//         run.py's study rows, vocab 22, context 19, d_model 64, heads 1 or 8, --clip 1)
//   ensemble  --members K GPTs of gpt's size (each from its own Generator seed, with its own
//         tokens and targets and its own learning rate) as one nn::GPTEnsemble with
//         optim::EnsembleAdamW: forward, each member's cross-entropy, backward of their sum,
//         each member's gradients clipped to --clip (when > 0), step. The PyTorch side is
//         functorch's vmap over combine_state_for_ensemble (run.py's ensemble rows).
#include <fstream>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "../../examples/common/cli_checks.hpp"
#include "../../examples/common/device.hpp"
#include "gemm_floor.hpp"
#include "headgrad/core/cuda.hpp"
#include "headgrad/headgrad.hpp"
#include "headgrad/ops/loss.hpp"
#include "headgrad/ops/mask.hpp"
#include "headgrad/optim/adam.hpp"
#include "headgrad/optim/clip.hpp"
#include "headgrad/optim/ensemble_adamw.hpp"

namespace {

using namespace headgrad;

// Where the case runs (set once in main): on a GPU every timer read waits for its queue.
Device g_device = Device::cpu();

void synchronize() {
  if (g_device.is_cuda()) cuda_synchronize(g_device.index());
}

template <typename F>
std::vector<double> time_iterations(int warmup, int iterations, F f) {
  for (int i = 0; i < warmup; ++i) f();
  synchronize();
  std::vector<double> times;
  for (int i = 0; i < iterations; ++i) {
    const auto start = std::chrono::steady_clock::now();
    f();
    synchronize();
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
  mha.to(g_device);
  Tensor x = randn({b, l, e}, kFloat32, &gen).to(g_device);
  if (train) x.requires_grad_(true);
  auto args = nn::MultiheadAttentionArgs().with_need_weights(false);
  if (mask == "causal") {
    args.with_attn_mask(causal_mask(l).to(g_device));
  } else if (mask == "padding") {
    std::vector<bool> padding(static_cast<std::size_t>(b * l), false);
    for (std::int64_t n = 0; n < b; n += 2)
      for (std::int64_t s = l - l / 4; s < l; ++s)
        padding[static_cast<std::size_t>(n * l + s)] = true;
    args.with_key_padding_mask(from_vector(padding, {b, l}).to(g_device));
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

struct GptSize {
  std::int64_t vocab = 64, context = 64, batch = 32, d_model = 128, heads = 4, layers = 2;
  double clip = 0.0;           // > 0: clip_grad_norm_ to this before the step (the study's 1.0)
  double weight_decay = 0.01;  // AdamW's (PyTorch's default 0.01, the study's too)
};

nn::GPTOptions options_of(const GptSize& size) {
  nn::GPTOptions o;
  o.vocab_size = size.vocab;
  o.max_len = size.context;
  o.d_model = size.d_model;
  o.nhead = size.heads;
  o.num_layers = size.layers;
  return o;
}

std::vector<double> gpt_case(const GptSize& size, int warmup, int iterations) {
  const std::int64_t vocab = size.vocab, context = size.context, batch = size.batch;
  const nn::GPTOptions o = options_of(size);
  Generator gen(1);
  nn::GPT model(o, &gen);
  model.to(g_device);  // before the optimizer takes the parameters
  const std::vector<Tensor> parameters = model.parameters();
  optim::AdamW optimizer(parameters,
                         optim::AdamWOptions().with_lr(1e-3).with_weight_decay(size.weight_decay));
  const Tensor tokens =
      randint(0, vocab, {batch, context}, TensorOptions(kInt64), &gen).to(g_device);
  const Tensor targets =
      randint(0, vocab, {batch * context}, TensorOptions(kInt64), &gen).to(g_device);
  return time_iterations(warmup, iterations, [&] {
    const Tensor logits = model(tokens);
    const Tensor loss = cross_entropy(reshape(logits, {batch * context, vocab}), targets);
    optimizer.zero_grad();
    loss.backward();
    if (size.clip > 0) optim::clip_grad_norm_(parameters, size.clip);
    optimizer.step();
  });
}

// One training step of `members` GPTs of `size` as an ensemble (see the header comment).
std::vector<double> ensemble_case(const GptSize& size, std::int64_t members, int warmup,
                                  int iterations) {
  const std::int64_t vocab = size.vocab, context = size.context, batch = size.batch;
  const nn::GPTOptions o = options_of(size);
  std::vector<std::shared_ptr<nn::GPT>> models;
  std::vector<const nn::GPT*> pointers;
  std::vector<optim::AdamWOptions> hyper;
  for (std::int64_t k = 0; k < members; ++k) {
    Generator gen(1 + static_cast<std::uint64_t>(k));
    models.push_back(std::make_shared<nn::GPT>(o, &gen));
    models.back()->to(g_device);
    pointers.push_back(models.back().get());
    hyper.push_back(optim::AdamWOptions()
                        .with_lr(k % 2 == 0 ? 1e-3 : 3e-3)
                        .with_weight_decay(size.weight_decay));
  }
  nn::GPTEnsemble ensemble(pointers);
  models.clear();
  const std::vector<Tensor> parameters = ensemble.parameters();
  optim::EnsembleAdamW optimizer(parameters, hyper);
  const std::vector<double> clip(static_cast<std::size_t>(members), size.clip);
  Generator gen(1);
  const Tensor tokens =
      randint(0, vocab, {members, batch, context}, TensorOptions(kInt64), &gen).to(g_device);
  const Tensor targets =
      randint(0, vocab, {members, batch * context}, TensorOptions(kInt64), &gen).to(g_device);
  const std::vector<Tensor> member_targets = unbind(targets, 0);
  return time_iterations(warmup, iterations, [&] {
    const std::vector<Tensor> logits = unbind(ensemble(tokens), 0);
    Tensor loss;
    for (std::int64_t k = 0; k < members; ++k) {
      const Tensor member_loss =
          cross_entropy(reshape(logits[k], {batch * context, vocab}), member_targets[k]);
      loss = loss.defined() ? loss + member_loss : member_loss;
    }
    optimizer.zero_grad();
    loss.backward();
    if (size.clip > 0) optim::clip_member_grad_norms_(parameters, clip);
    optimizer.step();
  });
}

// A full activation-patching sweep (inspect::Patching): the clean and corrupted runs cached,
// then every (layer, head, query position) of z patched from the clean run into the
// corrupted one, each a forward of the batch without gradients, and the normalised logit
// difference at the last position (tokens 3 against 7). The corrupted prompts differ at
// position context - 2 (the query of a recall prompt). Eval mode, no graph.
std::vector<double> patching_case(const GptSize& size, int warmup, int iterations) {
  const nn::GPTOptions o = options_of(size);
  Generator gen(1);
  auto model = std::make_shared<nn::GPT>(o, &gen);
  model->to(g_device);
  model->eval();
  const std::int64_t n = size.batch, t = size.context;
  const Tensor clean = randint(0, size.vocab, {n, t}, TensorOptions(kInt64), &gen);
  std::vector<std::int64_t> changed = clean.to_vector<std::int64_t>();
  for (std::int64_t i = 0; i < n; ++i) {
    auto& token = changed[static_cast<std::size_t>(i * t + t - 2)];
    token = (token + 1) % size.vocab;
  }
  const Tensor corrupted = from_vector<std::int64_t>(changed, {n, t}).to(g_device);
  const Tensor position = full({n}, static_cast<double>(t - 1), TensorOptions(kInt64)).to(g_device);
  const Tensor answer = full({n}, 3, TensorOptions(kInt64)).to(g_device);
  const Tensor wrong = full({n}, 7, TensorOptions(kInt64)).to(g_device);
  const Tensor clean_input = clean.to(g_device);
  return time_iterations(warmup, iterations, [&] {
    const inspect::Patching patching(*model, clean_input, corrupted, [&](const Tensor& logits) {
      return inspect::logit_difference(logits, position, answer, wrong);
    });
    patching.by_head_position("z");
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
  const Tensor a = randn({n, n}, kFloat32, &gen).to(g_device);
  const Tensor b = randn({n, n}, kFloat32, &gen).to(g_device);
  return time_iterations(warmup, iterations, [&] { matmul(a, b); });
}

// One small elementwise op, a + b on two (n) float32 tensors: the C++ side of the Python
// bindings' per-call overhead row.
// a + b on (n) float32 operands; with `graph` both require grad, so each call also records
// a graph node (freed with the result).
std::vector<double> add_case(std::int64_t n, bool graph, int warmup, int iterations) {
  Generator gen(1);
  const Tensor a = randn({n}, kFloat32, &gen).to(g_device).requires_grad_(graph);
  const Tensor b = randn({n}, kFloat32, &gen).to(g_device).requires_grad_(graph);
  return time_iterations(warmup, iterations, [&] { (void)(a + b); });
}

// The command-line options (gpt: the size of the gpt, ensemble and patching cases).
struct Options {
  std::string which = "mha", mask = "none", mode = "forward", device_text = "cpu";
  std::int64_t batch = 64, len = 16, embed = 64, heads = 4, size = 1024;
  GptSize gpt;
  int threads = 1, warmup = 3, iterations = 20;
  bool tf32 = false;
  std::int64_t members = 10;
};

// Declares the options of every case and of mha, sgemm and add, and the timing ones.
void add_case_options(CLI::App& app, Options& o) {
  app.add_option("--case", o.which,
                 "mha, gpt, ensemble, patching, gpt_gemms, sgemm, add or add_graph")
      ->capture_default_str();
  app.add_option("--batch", o.batch, "batch size (gpt: default 32)")
      ->check(examples::integer_in(1, 65536))
      ->capture_default_str();
  app.add_option("--len", o.len)->check(examples::integer_in(1, 65536))->capture_default_str();
  app.add_option("--embed", o.embed)->check(examples::integer_in(1, 65536))->capture_default_str();
  app.add_option("--heads", o.heads, "heads (gpt: default 4)")
      ->check(examples::integer_in(1, 65536))
      ->capture_default_str();
  app.add_option("--mask", o.mask, "none, causal or padding")->capture_default_str();
  app.add_option("--mode", o.mode, "forward or train")->capture_default_str();
  app.add_option("--size", o.size, "sgemm: n of the n x n product; add: n of the (n) operands")
      ->check(examples::integer_in(1, 65536))
      ->capture_default_str();
  app.add_option("--threads", o.threads)
      ->check(examples::integer_in(1, 1024))
      ->capture_default_str();
  app.add_option("--warmup", o.warmup)
      ->check(examples::integer_in(0, 1000000))
      ->capture_default_str();
  app.add_option("--iterations", o.iterations)
      ->check(examples::integer_in(1, 1000000))
      ->capture_default_str();
}

// Declares the options of the gpt, ensemble and patching cases, then the device ones.
void add_gpt_and_device_options(CLI::App& app, Options& o) {
  app.add_option("--vocab", o.gpt.vocab, "gpt: vocabulary")
      ->check(examples::integer_in(1, 1000000))
      ->capture_default_str();
  app.add_option("--context", o.gpt.context, "gpt: context length")
      ->check(examples::integer_in(1, 65536))
      ->capture_default_str();
  app.add_option("--d-model", o.gpt.d_model, "gpt: model width")
      ->check(examples::integer_in(1, 65536))
      ->capture_default_str();
  app.add_option("--layers", o.gpt.layers, "gpt: transformer layers")
      ->check(examples::integer_in(1, 1024))
      ->capture_default_str();
  app.add_option("--clip", o.gpt.clip, "gpt: clip_grad_norm_ max norm before each step (0 = off)")
      ->check(CLI::Range(0.0, 1e6))
      ->capture_default_str();
  app.add_option("--members", o.members, "ensemble: models trained as one")
      ->check(examples::integer_in(1, 100000))
      ->capture_default_str();
  examples::add_device_option(app, o.device_text);
  app.add_flag("--tf32", o.tf32, "allow TF32 tensor cores for float32 matmuls (cuda only)");
}

// Sets g_device from --device (with --tf32 and the peak memory counter on a GPU) and the
// CPU threads.
void set_up_device(const Options& o) {
  g_device = examples::parse_device(o.device_text);
  if (o.tf32 && !g_device.is_cuda()) throw ValueError("--tf32 needs --device cuda");
  if (g_device.is_cuda()) {
    set_cuda_allow_tf32(o.tf32);
    reset_cuda_peak_memory(g_device.index());
  }
  set_num_threads(o.threads);
}

// Runs the case --case names; the times of its timed iterations.
std::vector<double> run_case(const Options& o) {
  const std::string& which = o.which;
  const int warmup = o.warmup, iterations = o.iterations;
  if (which == "mha")
    return mha_case(o.batch, o.len, o.embed, o.heads, o.mask, o.mode == "train", warmup,
                    iterations);
  if (which == "gpt") return gpt_case(o.gpt, warmup, iterations);
  if (which == "ensemble") return ensemble_case(o.gpt, o.members, warmup, iterations);
  if (which == "patching") return patching_case(o.gpt, warmup, iterations);
  if (which == "gpt_gemms" && !g_device.is_cpu())
    throw ValueError("bench_case: --case gpt_gemms calls cblas_sgemm: cpu only");
  if (which == "gpt_gemms") return time_iterations(warmup, iterations, bench::gpt_gemm_step());
  if (which == "sgemm") return sgemm_case(o.size, warmup, iterations);
  if (which == "add") return add_case(o.size, false, warmup, iterations);
  if (which == "add_graph") return add_case(o.size, true, warmup, iterations);
  throw ValueError(
      "bench_case: --case must be mha, gpt, ensemble, patching, gpt_gemms, sgemm, add or "
      "add_graph, got " +
      which);
}

// Prints the JSON line of the case's times (see the header comment).
void print_result(const std::string& which, const std::vector<double>& times) {
  std::printf("{\"case\": \"%s\", \"times_ms\": [", which.c_str());
  for (std::size_t i = 0; i < times.size(); ++i) std::printf("%s%.6f", i ? ", " : "", times[i]);
  std::printf("], \"peak_rss_kb\": %ld", peak_rss_kb());
  if (g_device.is_cuda()) {
    std::string name = cuda_device_name(g_device.index());
    for (char& ch : name)
      if (ch == '"' || ch == '\\') ch = ' ';
    std::printf(", \"device\": \"%s\", \"device_name\": \"%s\", \"peak_allocated_bytes\": %zu",
                g_device.str().c_str(), name.c_str(),
                cuda_memory_stats(g_device.index()).peak_allocated_bytes);
  }
  std::printf("}\n");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Time one side-by-side benchmark configuration with headgrad."};
  Options o;
  add_case_options(app, o);
  add_gpt_and_device_options(app, o);
  CLI11_PARSE(app, argc, argv);
  if (app.count("--batch")) o.gpt.batch = o.batch;
  if (app.count("--heads")) o.gpt.heads = o.heads;
  try {
    set_up_device(o);
    const std::vector<double> times = run_case(o);
    print_result(o.which, times);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_case: %s\n", e.what());
    return 1;
  }
  return 0;
}
