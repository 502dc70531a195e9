// The cost of captures at the attention hook points (inspect/capture.hpp) and of head gates
// on a toy GPT training step (forward + backward, float32, one thread): the GPT of
// heads_compare's default (d_model 64, 2 layers, 4 heads, batch 32, associative_recall
// with length 8: T = 19).
//
//   taps_off        no capture active: the default, what every model pays
//   capture_z       a capture of z with gradients (what heads_compare keeps while training)
//   capture_all     every attention point with gradients (result switches the projection
//                   to per-head products)
//   gates_ones      head gates of ones set on every layer (one extra multiply per layer)
//
// The file also builds against a headgrad without taps (the capture cases drop out), so
// `taps_off` can be compared with the code before taps existed; docs/research/heads.md
// has the measured numbers and the commands.
#include <benchmark/benchmark.h>

#include "headgrad/headgrad.hpp"
#include "headgrad/ops/loss.hpp"
#include "headgrad/train/tasks.hpp"

#if __has_include("headgrad/inspect/capture.hpp")
#include "headgrad/inspect/capture.hpp"
#include "headgrad/inspect/heads.hpp"
#define HEADGRAD_BENCH_HAS_TAPS 1
#endif

namespace {

using namespace headgrad;

struct Setup {
  std::unique_ptr<train::Task> task;
  std::shared_ptr<nn::GPT> model;
  train::Batch batch;

  Setup() {
    set_num_threads(1);
    train::TaskOptions o;
    o.length = 8;
    task = train::make_task("associative_recall", o);
    nn::GPTOptions g;
    g.vocab_size = task->vocab_size();
    g.max_len = task->max_len();
    g.d_model = 64;
    g.nhead = 4;
    g.num_layers = 2;
    Generator gen(1);
    model = std::make_shared<nn::GPT>(g, &gen);
    batch = task->batch(train::Split::train, 0, 32);
  }

  void step() {
    Tensor logits = model->forward(batch.tokens, batch.key_padding_mask);
    const std::int64_t n = logits.size(0) * logits.size(1);
    Tensor loss = cross_entropy(reshape(logits, {n, logits.size(2)}), reshape(batch.targets, {n}),
                                Reduction::mean, -100);
    model->zero_grad();
    loss.backward();
  }
};

void BM_gpt_step_taps_off(benchmark::State& state) {
  Setup s;
  for (auto _ : state) s.step();
}
BENCHMARK(BM_gpt_step_taps_off)->Unit(benchmark::kMillisecond)->MinTime(2.0);

#ifdef HEADGRAD_BENCH_HAS_TAPS
void BM_gpt_step_capture_z(benchmark::State& state) {
  Setup s;
  inspect::Capture capture(*s.model, {"z"});
  for (auto _ : state) {
    auto scope = capture.activate();
    s.step();
  }
}
BENCHMARK(BM_gpt_step_capture_z)->Unit(benchmark::kMillisecond)->MinTime(2.0);

void BM_gpt_step_capture_all(benchmark::State& state) {
  Setup s;
  inspect::Capture capture(*s.model);
  for (auto _ : state) {
    auto scope = capture.activate();
    s.step();
  }
}
BENCHMARK(BM_gpt_step_capture_all)->Unit(benchmark::kMillisecond)->MinTime(2.0);

void BM_gpt_step_gates_ones(benchmark::State& state) {
  Setup s;
  for (const auto& layer : inspect::attention_layers(*s.model))
    layer.layer->set_head_gates(ones({layer.layer->options().num_heads}));
  for (auto _ : state) s.step();
}
BENCHMARK(BM_gpt_step_gates_ones)->Unit(benchmark::kMillisecond)->MinTime(2.0);

// head_grad_norms after the step, as heads_compare logs it every step.
void BM_gpt_step_grad_norms(benchmark::State& state) {
  Setup s;
  inspect::Capture capture(*s.model, {"z"});
  for (auto _ : state) {
    {
      auto scope = capture.activate();
      s.step();
    }
    benchmark::DoNotOptimize(inspect::head_grad_norms(*s.model, &capture));
  }
}
BENCHMARK(BM_gpt_step_grad_norms)->Unit(benchmark::kMillisecond)->MinTime(2.0);
#endif

}  // namespace

BENCHMARK_MAIN();
