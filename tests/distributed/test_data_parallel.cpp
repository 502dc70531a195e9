// DistributedDataParallel against one process training on the whole batch, on however
// many ranks run the binary (one in headgrad_tests, two under mpirun in
// headgrad_mpi_tests). Every rank builds the reference itself, so no rank needs another's
// answer to check its own.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "headgrad/distributed/data_parallel.hpp"
#include "headgrad/headgrad.hpp"

using namespace headgrad;

namespace {

constexpr std::int64_t kGlobalBatch = 8;

nn::GPTOptions tiny_gpt(const train::Task& task) {
  return nn::GPTOptions{.vocab_size = task.vocab_size(),
                        .max_len = task.max_len(),
                        .d_model = 16,
                        .nhead = 2,
                        .num_layers = 2};
}

// Rank `rank`'s rows of a global batch of the copy task (every example scores the same
// number of targets, so the shards' mean losses average to the global mean).
train::Batch shard(const train::Batch& global, int rank, int size) {
  const std::int64_t rows = global.size() / size;
  train::Batch out = global;
  out.tokens = global.tokens.narrow(0, rank * rows, rows);
  out.targets = global.targets.narrow(0, rank * rows, rows);
  return out;
}

Tensor loss_of(nn::GPT& model, const train::Batch& batch, const train::Task& task) {
  return train::task_loss(model(batch.tokens, batch.key_padding_mask), batch, task.kind());
}

// The largest |a - b| over every parameter, relative to the largest |a|.
double relative_difference(const nn::Module& a, const nn::Module& b) {
  double diff = 0, scale = 0;
  const auto pa = a.parameters(), pb = b.parameters();
  for (std::size_t i = 0; i < pa.size(); ++i) {
    diff = std::max(diff, (pa[i] - pb[i]).abs().max().item());
    scale = std::max(scale, pa[i].abs().max().item());
  }
  return diff / scale;
}

}  // namespace

TEST_CASE(
    "data-parallel training in float64 gives the parameters of one process on the whole batch") {
  auto& group = distributed::world();
  auto task = train::make_task("copy", train::TaskOptions().with_length(5).with_seed(3));
  Generator reference_init(11);
  nn::GPT reference(tiny_gpt(*task), &reference_init);
  reference.to(kFloat64);
  // Ranks other than 0 start from other weights: the wrapper must broadcast rank 0's.
  Generator own_init(11 + static_cast<std::uint64_t>(group.rank()) * 1000);
  nn::GPT model(tiny_gpt(*task), &own_init);
  model.to(kFloat64);
  distributed::DistributedDataParallel ddp(
      model, group, distributed::DataParallelOptions().with_bucket_bytes(4096));
  CHECK(relative_difference(reference, model) == 0.0);

  optim::AdamW ref_opt(reference.parameters(), optim::AdamWOptions(3e-3));
  optim::AdamW opt(model.parameters(), optim::AdamWOptions(3e-3));
  for (std::int64_t step = 0; step < 5; ++step) {
    const train::Batch global = task->batch(train::Split::train, step, kGlobalBatch);
    ref_opt.zero_grad();
    loss_of(reference, global, *task).backward();
    ref_opt.step();
    opt.zero_grad();
    loss_of(model, shard(global, group.rank(), group.size()), *task).backward();
    opt.step();
  }
  const double rel = relative_difference(reference, model);
  INFO("world size " << group.size() << ", relative difference " << rel);
  CHECK(rel <= 1e-12);
  if (group.size() > 1) CHECK(ddp.stats().launched_in_backward > 0);  // overlapped with backward
}

TEST_CASE("no_sync accumulates locally and the next backward averages the accumulated gradients") {
  auto& group = distributed::world();
  auto task = train::make_task("copy", train::TaskOptions().with_length(5).with_seed(4));
  Generator g1(21), g2(21);
  nn::GPT reference(tiny_gpt(*task), &g1), model(tiny_gpt(*task), &g2);
  reference.to(kFloat64);
  model.to(kFloat64);
  distributed::DistributedDataParallel ddp(model, group);
  const train::Batch first = task->batch(train::Split::train, 0, kGlobalBatch);
  const train::Batch second = task->batch(train::Split::train, 1, kGlobalBatch);
  loss_of(reference, first, *task).backward();
  loss_of(reference, second, *task).backward();
  {
    auto no_sync = ddp.no_sync();
    loss_of(model, shard(first, group.rank(), group.size()), *task).backward();
  }
  loss_of(model, shard(second, group.rank(), group.size()), *task).backward();
  const auto pr = reference.parameters(), pm = model.parameters();
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < pr.size(); ++i) {
    diff = std::max(diff, (pr[i].grad() - pm[i].grad()).abs().max().item());
    scale = std::max(scale, pr[i].grad().abs().max().item());
  }
  CHECK(diff / scale <= 1e-12);
}

TEST_CASE("data-parallel float32 training repeated from the same seed is bitwise identical") {
  auto& group = distributed::world();
  auto task = train::make_task("copy", train::TaskOptions().with_length(5).with_seed(5));
  auto run = [&] {
    Generator init(31);
    auto model = std::make_shared<nn::GPT>(tiny_gpt(*task), &init);
    distributed::DistributedDataParallel ddp(
        *model, group, distributed::DataParallelOptions().with_bucket_bytes(2048));
    optim::AdamW opt(model->parameters(), optim::AdamWOptions(1e-2));
    for (std::int64_t step = 0; step < 4; ++step) {
      opt.zero_grad();
      loss_of(
          *model,
          shard(task->batch(train::Split::train, step, kGlobalBatch), group.rank(), group.size()),
          *task)
          .backward();
      opt.step();
    }
    return model;
  };
  auto a = run();
  auto b = run();
  CHECK(relative_difference(*a, *b) == 0.0);
}

TEST_CASE("buckets hold parameters last first, split at bucket_bytes, one dtype each") {
  auto& group = distributed::world();
  manual_seed(0);
  nn::Sequential seq;
  seq.push_back(std::make_shared<nn::Linear>(8, 8));    // 0.weight 256 B, 0.bias 32 B
  seq.push_back(std::make_shared<nn::Linear>(8, 100));  // 1.weight 3200 B, 1.bias 400 B
  distributed::DistributedDataParallel ddp(
      seq, group, distributed::DataParallelOptions().with_bucket_bytes(512));
  const auto names = ddp.bucket_names();
  REQUIRE(names.size() == 3);
  CHECK(names[0] == std::vector<std::string>{"1.bias"});
  CHECK(names[1] == std::vector<std::string>{"1.weight"});  // larger than a bucket: alone
  CHECK(names[2] == std::vector<std::string>{"0.bias", "0.weight"});
  CHECK(ddp.stats().bytes_per_step == 4 * (64 + 8 + 800 + 100));
  CHECK_THROWS_AS(distributed::DistributedDataParallel(
                      seq, group, distributed::DataParallelOptions().with_bucket_bytes(0)),
                  ValueError);
}

TEST_CASE("ranks whose models differ are refused on every rank before anything is exchanged") {
  auto& group = distributed::world();
  if (group.size() == 1) return;
  nn::Linear model(4, group.rank() == 0 ? 2 : 3);
  CHECK_THROWS_AS(distributed::DistributedDataParallel(model, group),
                  distributed::DistributedError);
}
