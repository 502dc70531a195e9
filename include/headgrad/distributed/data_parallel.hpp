// distributed::DistributedDataParallel: data-parallel training in the manner of PyTorch's
// DistributedDataParallel. Every rank holds the same model and feeds it its own shard of
// each global batch; backward averages the gradients over the ranks, so the optimizer
// steps that follow are the same on every rank.
//
//   auto& group = distributed::world();
//   nn::GPT model(options);                         // same seed or not: see below
//   distributed::DistributedDataParallel ddp(model, group);
//   Tensor loss = train::task_loss(model(shard.tokens), shard, kind);
//   loss.backward();                                // grads now hold the mean over ranks
//   optimizer.step();
//
// Construction checks that every rank has the same parameters (names, shapes, dtypes:
// DistributedError naming the ranks that differ otherwise), then broadcasts rank 0's values
// (parameters and buffers), so every rank starts from rank 0's model.
//
// Buckets. The trainable parameters are grouped, in reverse registration order (roughly
// the order backward produces their gradients), into buckets of at most bucket_bytes (one
// parameter larger than that gets a bucket of its own); parameters of different dtypes
// never share one. A post-accumulate-grad hook on each parameter copies its gradient into
// its bucket; when a bucket is full it is all-reduced with a non-blocking collective while
// backward goes on (every later hook also lets the collectives in flight advance). Buckets
// are launched in index order on every rank, whatever the order their gradients arrive in,
// so the collectives always match. At the end of backward (autograd::queue_callback) the
// remaining buckets are launched, all are awaited, and each parameter's grad() becomes the
// mean over ranks. A parameter that got no gradient on a rank counts its current grad()
// (zeros when undefined) there.
//
// no_sync(): while the returned guard lives, backward only accumulates locally (gradient
// accumulation); the first backward after it averages the accumulated gradients.
//
// Determinism: the bucket layout is fixed by the model and bucket_bytes, and reductions go
// through ProcessGroup::all_reduce_async, so the same world size gives bitwise identical
// runs. With one rank (no MPI launcher) nothing is communicated and nothing is copied.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "headgrad/core/options.hpp"
#include "headgrad/distributed/process_group.hpp"
#include "headgrad/nn/module.hpp"

namespace headgrad::distributed {

struct DataParallelOptions {
  // PyTorch's default bucket_cap_mb is 25 MiB.
  std::int64_t bucket_bytes = std::int64_t{25} << 20;
  HEADGRAD_WITH(bucket_bytes)
};

// What one step communicated, for measurements (docs/distributed.md).
struct DataParallelStats {
  std::int64_t buckets = 0;               // in the layout
  std::int64_t bytes_per_step = 0;        // all-reduced per synchronized backward
  std::int64_t launched_in_backward = 0;  // buckets started before backward ended (last step)
  double wait_seconds = 0;                // time spent waiting at the end of the last backward
};

class DistributedDataParallel {
 public:
  DistributedDataParallel(nn::Module& module, ProcessGroup& group,
                          DataParallelOptions options = {});
  ~DistributedDataParallel();
  DistributedDataParallel(const DistributedDataParallel&) = delete;
  DistributedDataParallel& operator=(const DistributedDataParallel&) = delete;

  nn::Module& module() const { return module_; }
  ProcessGroup& group() const { return group_; }

  // While the guard lives, backward passes accumulate gradients without communicating.
  class NoSync {
   public:
    explicit NoSync(DistributedDataParallel& ddp) : ddp_(&ddp) { ddp.sync_ = false; }
    ~NoSync() {
      if (ddp_) ddp_->sync_ = true;
    }
    NoSync(NoSync&& other) noexcept : ddp_(other.ddp_) { other.ddp_ = nullptr; }
    NoSync(const NoSync&) = delete;
    NoSync& operator=(const NoSync&) = delete;
    NoSync& operator=(NoSync&&) = delete;

   private:
    DistributedDataParallel* ddp_;
  };
  [[nodiscard]] NoSync no_sync() { return NoSync(*this); }

  // The parameter names of each bucket, in bucket order (what the layout is).
  std::vector<std::vector<std::string>> bucket_names() const;
  const DataParallelStats& stats() const { return stats_; }

 private:
  struct Bucket;
  void on_gradient(std::size_t param);
  void launch_ready();
  void finish();  // the end of backward: launch the rest, wait, write the means back

  nn::Module& module_;
  ProcessGroup& group_;
  DataParallelOptions options_;
  bool sync_ = true;
  std::vector<std::string> names_;
  std::vector<Tensor> params_;
  std::vector<std::size_t> hook_ids_;
  std::vector<std::unique_ptr<Bucket>> buckets_;
  std::vector<std::size_t> bucket_of_;   // parameter -> bucket
  std::vector<std::int64_t> offset_of_;  // parameter -> element offset in its bucket
  std::vector<bool> seen_;               // parameter got a gradient in this backward
  std::size_t next_launch_ = 0;
  bool in_backward_ = false;
  DataParallelStats stats_;
};

}  // namespace headgrad::distributed
