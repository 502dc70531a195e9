// The data-parallel GPT training step: run alone (1 rank) or under mpirun -np N, it times
// N ranks training one GPT on shards of each global batch (DistributedDataParallel) and
// prints, from rank 0, one JSON line: world size, median step time, the bytes all-reduced
// per step, the buckets, how many were launched while backward still ran, and the time
// backward's end waited for the all-reduce. docs/distributed.md's table is made with it:
//
//   bench_ddp_step --steps 30                        # 1 rank
//   mpirun -np 2 bench_ddp_step --steps 30           # 2 ranks, buckets overlapping backward
//   mpirun -np 2 bench_ddp_step --steps 30 --no-overlap   # one bucket, reduced after backward
#include <CLI/CLI.hpp>
#include <headgrad/headgrad.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <vector>

using namespace headgrad;

namespace {

// The command-line options.
struct Options {
  std::int64_t vocab = 64, context = 64, batch = 32, d_model = 128, heads = 4, layers = 2;
  int steps = 30, warmup = 3, threads = 1;
  double bucket_mb = 25;
  bool no_overlap = false;
};

// Declares the command-line options, filling `o`.
void add_options(CLI::App& app, Options& o) {
  app.add_option("--vocab", o.vocab, "vocabulary")->check(CLI::Range(2, 1 << 20));
  app.add_option("--context", o.context, "context length")->check(CLI::Range(1, 1 << 16));
  app.add_option("--batch", o.batch, "global batch (split over the ranks)")
      ->check(CLI::Range(1, 1 << 16));
  app.add_option("--d-model", o.d_model, "model width")->check(CLI::Range(1, 1 << 16));
  app.add_option("--heads", o.heads, "heads")->check(CLI::Range(1, 1 << 10));
  app.add_option("--layers", o.layers, "layers")->check(CLI::Range(1, 1 << 10));
  app.add_option("--steps", o.steps, "timed steps")->check(CLI::Range(1, 1 << 20));
  app.add_option("--warmup", o.warmup, "untimed steps first")->check(CLI::Range(0, 1 << 20));
  app.add_option("--threads", o.threads, "OpenBLAS threads per rank")->check(CLI::Range(1, 1024));
  app.add_option("--bucket-mb", o.bucket_mb, "bucket size in MiB")->check(CLI::Range(0.001, 1e6));
  app.add_flag("--no-overlap", o.no_overlap,
               "one bucket for every parameter: all-reduced after backward");
}

// The GPT of the options' size.
nn::GPTOptions gpt_options(const Options& o) {
  nn::GPTOptions g;
  g.vocab_size = o.vocab;
  g.max_len = o.context;
  g.d_model = o.d_model;
  g.nhead = o.heads;
  g.num_layers = o.layers;
  return g;
}

// This rank's rows of the global batch of random tokens and targets (targets flattened).
struct Shard {
  std::int64_t rows = 0;
  Tensor tokens, targets;
};

// Draws the global batch and keeps this rank's share of it.
Shard shard_of(const Options& o, const distributed::ProcessGroup& group) {
  Shard s;
  s.rows = o.batch / group.size();
  Generator data(2);
  s.tokens = randint(0, o.vocab, {o.batch, o.context}, kInt64, &data)
                 .narrow(0, group.rank() * s.rows, s.rows);
  s.targets = randint(0, o.vocab, {o.batch, o.context}, kInt64, &data)
                  .narrow(0, group.rank() * s.rows, s.rows)
                  .reshape({s.rows * o.context});
  return s;
}

// The timed steps' times in ms (sorted), and the sum of the ms backward's end waited.
struct Timings {
  std::vector<double> times;
  double waited = 0;
};

// Runs --warmup untimed then --steps timed steps, each timed from a barrier of the group.
Timings time_steps(const Options& o, distributed::DistributedDataParallel& ddp,
                   const std::function<void()>& step) {
  Timings t;
  for (int i = 0; i < o.warmup + o.steps; ++i) {
    ddp.group().barrier();
    const auto start = std::chrono::steady_clock::now();
    step();
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (i >= o.warmup) {
      t.times.push_back(ms);
      t.waited += ddp.stats().wait_seconds * 1e3;
    }
  }
  std::sort(t.times.begin(), t.times.end());
  return t;
}

// Prints the JSON line of the results (see the header comment).
void print_result(const Options& o, const distributed::DistributedDataParallel& ddp,
                  const Timings& t) {
  std::printf(
      "{\"ranks\": %d, \"threads\": %d, \"global_batch\": %lld, \"overlap\": %s, "
      "\"step_ms_median\": %.3f, \"step_ms_min\": %.3f, \"steps\": %d, \"bytes_per_step\": "
      "%lld, "
      "\"buckets\": %lld, \"launched_in_backward\": %lld, \"end_wait_ms_mean\": %.3f}\n",
      ddp.group().size(), o.threads, static_cast<long long>(o.batch),
      o.no_overlap ? "false" : "true", t.times[t.times.size() / 2], t.times.front(), o.steps,
      static_cast<long long>(ddp.stats().bytes_per_step),
      static_cast<long long>(ddp.stats().buckets),
      static_cast<long long>(ddp.stats().launched_in_backward), t.waited / o.steps);
}

// Trains the GPT data-parallel over the world's ranks and prints the timings from rank 0.
void run_benchmark(const Options& o) {
  auto& group = distributed::world();
  if (o.batch % group.size() != 0)
    throw ValueError("--batch " + std::to_string(o.batch) + " does not divide over " +
                     std::to_string(group.size()) + " ranks");
  set_num_threads(o.threads);
  Generator gen(1);
  nn::GPT model(gpt_options(o), &gen);
  const auto bucket_bytes =
      o.no_overlap ? (std::int64_t{1} << 62) : static_cast<std::int64_t>(o.bucket_mb * (1 << 20));
  distributed::DistributedDataParallel ddp(
      model, group, distributed::DataParallelOptions().with_bucket_bytes(bucket_bytes));
  optim::AdamW optimizer(model.parameters(), optim::AdamWOptions().with_lr(1e-3));
  const Shard shard = shard_of(o, group);
  const Timings t = time_steps(o, ddp, [&] {
    const Tensor logits = model(shard.tokens);
    const Tensor loss =
        cross_entropy(logits.reshape({shard.rows * o.context, o.vocab}), shard.targets);
    optimizer.zero_grad();
    loss.backward();
    optimizer.step();
  });
  if (group.rank() == 0) print_result(o, ddp, t);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Time the data-parallel GPT training step (docs/distributed.md)."};
  Options o;
  add_options(app, o);
  CLI11_PARSE(app, argc, argv);
  try {
    run_benchmark(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_ddp_step: %s\n", e.what());
    return 1;
  }
  return 0;
}
