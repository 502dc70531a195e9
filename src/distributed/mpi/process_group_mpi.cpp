// The MPI process group (libheadgrad_mpi.so): ProcessGroup's primitives over Open MPI's
// MPI_COMM_WORLD. Non-blocking reductions (MPI_Iallreduce) advance when test() or wait()
// calls MPI_Test, which is how DistributedDataParallel overlaps them with backward. Open
// MPI picks its reduction algorithm from the message size and the rank layout alone, so a
// fixed world size gives bitwise identical results, the same on every rank.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

#include "distributed/mpi_backend.hpp"

namespace headgrad::distributed {
namespace {

void check(int code, const char* call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw DistributedError(std::string("MPI process group: ") + call +
                         " failed: " + std::string(text, static_cast<std::size_t>(length)));
}

MPI_Datatype mpi_type(DType dtype) {
  switch (dtype) {
    case DType::float32:
      return MPI_FLOAT;
    case DType::float64:
      return MPI_DOUBLE;
    case DType::int64:
      return MPI_INT64_T;
    default:
      throw DTypeError("MPI process group: cannot reduce " + to_string(dtype) + " tensors");
  }
}

MPI_Op mpi_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::max:
      return MPI_MAX;
    case ReduceOp::min:
      return MPI_MIN;
    default:
      return MPI_SUM;
  }
}

// Waits on `request`, polling MPI_Test (which also advances other non-blocking work) until
// it completes or `timeout_s` passes: a tight loop first (collectives of a training step
// complete in microseconds), then sleeps growing to 1 ms, so a rank waiting long for others
// (a study's last run) leaves its core to them.
void wait_for(MPI_Request& request, double timeout_s, const char* what) {
  using clock = std::chrono::steady_clock;
  const auto deadline = clock::now() + std::chrono::duration_cast<clock::duration>(
                                           std::chrono::duration<double>(timeout_s));
  std::chrono::microseconds nap{1};
  for (std::uint64_t spin = 0;; ++spin) {
    int done = 0;
    check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test");
    if (done) return;
    if (spin < 20000) continue;
    if (clock::now() > deadline)
      throw DistributedError(std::string("MPI process group: ") + what +
                             " did not complete within " + std::to_string(timeout_s) +
                             " s (a rank died or stopped taking part; see set_timeout_seconds)");
    std::this_thread::sleep_for(nap);
    nap = std::min(nap * 2, std::chrono::microseconds{1000});
  }
}

class MpiWork final : public Work {
 public:
  MpiWork(MPI_Request request, double timeout_s) : request_(request), timeout_s_(timeout_s) {}
  ~MpiWork() override {
    // A work dropped unfinished (an exception unwinding): wait, so MPI never writes into
    // freed memory; errors here cannot be reported.
    if (!done_) {
      try {
        wait_for(request_, timeout_s_, "all_reduce");
      } catch (...) {
      }
    }
  }
  bool test() override {
    if (done_) return true;
    int flag = 0;
    check(MPI_Test(&request_, &flag, MPI_STATUS_IGNORE), "MPI_Test");
    done_ = flag != 0;
    return done_;
  }
  void wait() override {
    if (done_) return;
    wait_for(request_, timeout_s_, "all_reduce");
    done_ = true;
  }

 private:
  MPI_Request request_;
  double timeout_s_;
  bool done_ = false;
};

class MpiProcessGroup final : public ProcessGroup {
 public:
  MpiProcessGroup(int rank, int size) : ProcessGroup(rank, size, "mpi") {}
  ~MpiProcessGroup() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
  }

 protected:
  void barrier_impl() override {
    MPI_Request request;
    check(MPI_Ibarrier(MPI_COMM_WORLD, &request), "MPI_Ibarrier");
    wait_for(request, timeout_seconds(), "barrier");
  }
  void broadcast_impl(void* data, std::size_t bytes, int root) override {
    // In pieces that fit MPI's int count.
    constexpr std::size_t kPiece = std::size_t{1} << 30;
    for (std::size_t offset = 0; offset < bytes; offset += kPiece) {
      MPI_Request request;
      const int count = static_cast<int>(std::min(kPiece, bytes - offset));
      check(MPI_Ibcast(static_cast<char*>(data) + offset, count, MPI_BYTE, root, MPI_COMM_WORLD,
                       &request),
            "MPI_Ibcast");
      wait_for(request, timeout_seconds(), "broadcast");
    }
  }
  std::unique_ptr<Work> all_reduce_impl(void* data, std::int64_t count, DType dtype,
                                        ReduceOp op) override {
    if (count > INT32_MAX)
      throw DistributedError("MPI process group: all_reduce of " + std::to_string(count) +
                             " elements; at most 2^31 - 1 at a time");
    MPI_Request request;
    check(MPI_Iallreduce(MPI_IN_PLACE, data, static_cast<int>(count), mpi_type(dtype), mpi_op(op),
                         MPI_COMM_WORLD, &request),
          "MPI_Iallreduce");
    return std::make_unique<MpiWork>(request, timeout_seconds());
  }
  void all_gather_impl(const void* in, std::size_t bytes, void* out) override {
    if (bytes > INT32_MAX)
      throw DistributedError("MPI process group: all_gather of " + std::to_string(bytes) +
                             " bytes per rank; at most 2^31 - 1");
    MPI_Request request;
    check(MPI_Iallgather(in, static_cast<int>(bytes), MPI_BYTE, out, static_cast<int>(bytes),
                         MPI_BYTE, MPI_COMM_WORLD, &request),
          "MPI_Iallgather");
    wait_for(request, timeout_seconds(), "all_gather");
  }
};

}  // namespace
}  // namespace headgrad::distributed

extern "C" __attribute__((visibility("default"))) int headgrad_mpi_backend_abi() {
  return headgrad::distributed::kMpiBackendAbiVersion;
}

extern "C" __attribute__((visibility("default"))) headgrad::distributed::ProcessGroup*
headgrad_mpi_process_group(std::string* why) {
  try {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      int provided = 0;
      // Only the calling thread uses MPI.
      if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
        *why = "MPI_Init_thread failed";
        return nullptr;
      }
    }
    // Errors come back as codes (headgrad turns them into exceptions), not as aborts.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    return new headgrad::distributed::MpiProcessGroup(rank, size);
  } catch (const std::exception& e) {
    *why = e.what();
    return nullptr;
  }
}
