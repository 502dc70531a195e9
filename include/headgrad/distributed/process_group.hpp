// distributed::ProcessGroup: the processes of one job and the collectives between them,
// as torch.distributed's process group: rank, world size, barrier, broadcast, all_reduce
// and all_gather on tensors.
//
//   auto& group = distributed::world();     // mpirun -np 4 ./prog: 4 ranks; ./prog: 1
//   Tensor g = ...;
//   group.all_reduce(g, distributed::ReduceOp::mean);   // every rank now holds the mean
//
// Backends. world() is the single-process group (rank 0 of 1, every collective a no-op)
// unless the program was started by an MPI launcher (mpirun or mpiexec; it sets
// OMPI_COMM_WORLD_SIZE, PMI_SIZE or PMIX_RANK). Then it is the MPI group, from the backend
// library libheadgrad_mpi.so (Open MPI), loaded at that moment: a program that is not
// launched by MPI never loads MPI. A launched program whose backend cannot be loaded is an
// error (DistributedError naming what is missing), never N copies each believing it is
// rank 0. A group for GPU tensors (NCCL) is a subclass of the same interface: the
// primitives below on device pointers; docs/distributed.md describes the slot.
//
// Agreement. broadcast, all_reduce and all_gather first compare every rank's tensor (dtype,
// shape) with one small all_gather; if any differs, every rank throws the same
// DistributedError naming each rank's tensor, instead of hanging or summing mismatched
// buffers. all_reduce_async skips that check: it is for callers that fixed their layout
// once (DistributedDataParallel's buckets).
//
// Waits. A collective that does not complete within timeout_seconds() (default 300 s; a
// rank died or stopped calling) throws DistributedError on the ranks still waiting.
//
// Tensors must be on the CPU and contiguous (every headgrad tensor is); bool tensors can
// be broadcast and gathered, not reduced. Results are deterministic for a fixed world
// size: the reduction order depends on the rank layout only, never on timing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "headgrad/core/error.hpp"
#include "headgrad/core/tensor.hpp"

namespace headgrad::distributed {

// A collective failed: ranks disagree on a tensor, a wait timed out, or the backend failed.
class DistributedError : public Error {
 public:
  using Error::Error;
};

enum class ReduceOp { sum, mean, max, min };
std::string to_string(ReduceOp op);  // "sum", "mean", "max", "min"

// An asynchronous collective in flight (all_reduce_async).
class Work {
 public:
  virtual ~Work() = default;
  // Lets the collective advance; true once it has completed. Cheap: call it often while
  // computing, so communication overlaps the computation.
  virtual bool test() = 0;
  // Blocks until complete (DistributedError after the group's timeout).
  virtual void wait() = 0;
};

class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  const std::string& backend() const { return backend_; }  // "single", "mpi"

  double timeout_seconds() const { return timeout_s_; }
  void set_timeout_seconds(double seconds);  // ValueError unless finite and > 0

  void barrier();
  // Every rank's `t` takes root's values, in place.
  void broadcast(Tensor& t, int root = 0);
  // Every rank's `t` becomes the reduction over ranks of the ranks' `t`, in place (mean:
  // the sum divided by size(); floating tensors only).
  void all_reduce(Tensor& t, ReduceOp op = ReduceOp::sum);
  // Every rank's `t`, in rank order (size() tensors of t's shape and dtype).
  std::vector<Tensor> all_gather(const Tensor& t);
  // all_reduce without the agreement check, returning at once; `t` must stay alive and
  // unchanged until the work completes (mean divides when wait() or test() sees it done).
  std::unique_ptr<Work> all_reduce_async(Tensor& t, ReduceOp op = ReduceOp::sum);

 protected:
  ProcessGroup(int rank, int size, std::string backend);

  // The backend's primitives, on contiguous CPU buffers; every rank calls them in the
  // same order with the same sizes.
  virtual void barrier_impl() = 0;
  virtual void broadcast_impl(void* data, std::size_t bytes, int root) = 0;
  // In-place reduction of `count` elements of `dtype` (float32, float64 or int64) with op
  // sum, max or min.
  virtual std::unique_ptr<Work> all_reduce_impl(void* data, std::int64_t count, DType dtype,
                                                ReduceOp op) = 0;
  // `bytes` from every rank into `out` (size() * bytes), in rank order.
  virtual void all_gather_impl(const void* in, std::size_t bytes, void* out) = 0;

 private:
  // Throws the same DistributedError on every rank unless all agree on t's dtype and shape.
  void check_agreement(const Tensor& t, const char* op);

  int rank_, size_;
  std::string backend_;
  double timeout_s_ = 300.0;
};

// The job's group: created on the first call (see the file comment), then the same object.
ProcessGroup& world();

// Whether an MPI launcher started this process (what world() looks at).
bool launched_by_mpi();

}  // namespace headgrad::distributed
