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
#include <vector>

using namespace headgrad;

int main(int argc, char** argv) {
  CLI::App app{"Time the data-parallel GPT training step (docs/distributed.md)."};
  std::int64_t vocab = 64, context = 64, batch = 32, d_model = 128, heads = 4, layers = 2;
  int steps = 30, warmup = 3, threads = 1;
  double bucket_mb = 25;
  bool no_overlap = false;
  app.add_option("--vocab", vocab, "vocabulary")->check(CLI::Range(2, 1 << 20));
  app.add_option("--context", context, "context length")->check(CLI::Range(1, 1 << 16));
  app.add_option("--batch", batch, "global batch (split over the ranks)")
      ->check(CLI::Range(1, 1 << 16));
  app.add_option("--d-model", d_model, "model width")->check(CLI::Range(1, 1 << 16));
  app.add_option("--heads", heads, "heads")->check(CLI::Range(1, 1 << 10));
  app.add_option("--layers", layers, "layers")->check(CLI::Range(1, 1 << 10));
  app.add_option("--steps", steps, "timed steps")->check(CLI::Range(1, 1 << 20));
  app.add_option("--warmup", warmup, "untimed steps first")->check(CLI::Range(0, 1 << 20));
  app.add_option("--threads", threads, "OpenBLAS threads per rank")->check(CLI::Range(1, 1024));
  app.add_option("--bucket-mb", bucket_mb, "bucket size in MiB")->check(CLI::Range(0.001, 1e6));
  app.add_flag("--no-overlap", no_overlap,
               "one bucket for every parameter: all-reduced after backward");
  CLI11_PARSE(app, argc, argv);
  try {
    auto& group = distributed::world();
    if (batch % group.size() != 0)
      throw ValueError("--batch " + std::to_string(batch) + " does not divide over " +
                       std::to_string(group.size()) + " ranks");
    set_num_threads(threads);
    nn::GPTOptions o;
    o.vocab_size = vocab;
    o.max_len = context;
    o.d_model = d_model;
    o.nhead = heads;
    o.num_layers = layers;
    Generator gen(1);
    nn::GPT model(o, &gen);
    const auto bucket_bytes =
        no_overlap ? (std::int64_t{1} << 62) : static_cast<std::int64_t>(bucket_mb * (1 << 20));
    distributed::DistributedDataParallel ddp(
        model, group, distributed::DataParallelOptions().with_bucket_bytes(bucket_bytes));
    optim::AdamW optimizer(model.parameters(), optim::AdamWOptions().with_lr(1e-3));
    const std::int64_t rows = batch / group.size();
    Generator data(2);
    const Tensor tokens =
        randint(0, vocab, {batch, context}, kInt64, &data).narrow(0, group.rank() * rows, rows);
    const Tensor targets = randint(0, vocab, {batch, context}, kInt64, &data)
                               .narrow(0, group.rank() * rows, rows)
                               .reshape({rows * context});
    std::vector<double> times;
    double waited = 0;
    for (int i = 0; i < warmup + steps; ++i) {
      group.barrier();
      const auto start = std::chrono::steady_clock::now();
      const Tensor logits = model(tokens);
      const Tensor loss = cross_entropy(logits.reshape({rows * context, vocab}), targets);
      optimizer.zero_grad();
      loss.backward();
      optimizer.step();
      const double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count();
      if (i >= warmup) {
        times.push_back(ms);
        waited += ddp.stats().wait_seconds * 1e3;
      }
    }
    std::sort(times.begin(), times.end());
    if (group.rank() == 0)
      std::printf(
          "{\"ranks\": %d, \"threads\": %d, \"global_batch\": %lld, \"overlap\": %s, "
          "\"step_ms_median\": %.3f, \"step_ms_min\": %.3f, \"steps\": %d, \"bytes_per_step\": "
          "%lld, "
          "\"buckets\": %lld, \"launched_in_backward\": %lld, \"end_wait_ms_mean\": %.3f}\n",
          group.size(), threads, static_cast<long long>(batch), no_overlap ? "false" : "true",
          times[times.size() / 2], times.front(), steps,
          static_cast<long long>(ddp.stats().bytes_per_step),
          static_cast<long long>(ddp.stats().buckets),
          static_cast<long long>(ddp.stats().launched_in_backward), waited / steps);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_ddp_step: %s\n", e.what());
    return 1;
  }
  return 0;
}
