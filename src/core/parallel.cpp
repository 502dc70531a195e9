// The thread pool behind parallel_for (parallel.hpp) and set_num_threads (threads.hpp).
//
// Workers wait for a new generation number: they spin briefly (consecutive ops of a step
// follow each other within microseconds), then sleep on a condition variable, so an idle
// pool costs nothing. The caller publishes the job, bumps the generation, runs chunk 0 and
// spins until the other chunks are done. OpenBLAS is kept at one thread: the GEMM wrappers
// split their products across this pool instead (two pools would fight over the cores).
#include "core/parallel.hpp"

#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "headgrad/core/error.hpp"
#include "headgrad/core/threads.hpp"

namespace headgrad::detail {

namespace {

thread_local bool t_in_region = false;

// Iterations the waiting caller polls before it yields.
constexpr int kSpins = 1 << 14;

// How long an idle worker polls for the next job before it sleeps. Long enough to span the
// serial stretches between parallel ops of a training step (the optimizer's bookkeeping,
// small ops, the autograd engine): waking a sleeping thread costs tens of microseconds, and
// on a virtual machine whose idle vCPU halted, far more until the host's halt polling adapts
// (the first steps at 2 threads ran at half speed with a 0.3 ms window). Settable for
// experiments with HEADGRAD_SPIN_US.
std::chrono::microseconds spin_window() {
  static const std::chrono::microseconds window{[] {
    const char* text = std::getenv("HEADGRAD_SPIN_US");
    if (text != nullptr && *text != '\0') {
      char* end = nullptr;
      const long us = std::strtol(text, &end, 10);
      if (*end == '\0' && us >= 0 && us <= 1000000) return us;
    }
    return 2000L;
  }()};
  return window;
}

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// A positive integer from the environment variable, or 0.
long env_count(const char* var) {
  const char* text = std::getenv(var);
  if (text == nullptr || *text == '\0') return 0;
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  return *end == '\0' && value >= 1 && value <= 1024 ? value : 0;
}

// The default size: OMP_NUM_THREADS, else OPENBLAS_NUM_THREADS, else the cores divided
// among the processes an MPI launcher started on this machine (so ranks do not
// oversubscribe the cores), at least 1.
int default_threads() {
  for (const char* var : {"OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"})
    if (const long n = env_count(var)) return static_cast<int>(n);
  long local_ranks = 1;
  for (const char* var : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"})
    if (const long n = env_count(var)) {
      local_ranks = n;
      break;
    }
  const long cores = std::max(1u, std::thread::hardware_concurrency());
  return static_cast<int>(std::max(1L, cores / local_ranks));
}

class Pool {
 public:
  static Pool& instance() {
    static Pool pool;
    return pool;
  }

  int size() {
    std::call_once(init_, [this] { start(default_threads()); });
    return size_.load(std::memory_order_relaxed);
  }

  void resize(int n) {
    size();  // the default first, so a later first call does not override n
    if (t_in_region)
      throw ValueError("set_num_threads: called from inside a parallel region (" +
                       std::to_string(n) + " threads asked)");
    std::lock_guard<std::mutex> run(run_mutex_);
    if (n == size_.load()) return;
    stop();
    start(n);
  }

  // Runs chunk(i) for i in [0, chunks); chunk 0 in the calling thread.
  void run(std::int64_t chunks, const std::function<void(std::int64_t)>& chunk) {
    std::unique_lock<std::mutex> run(run_mutex_, std::try_to_lock);
    if (!run.owns_lock() || chunks > static_cast<std::int64_t>(workers_.size()) + 1) {
      run_serially(chunks, chunk);  // another user thread holds the pool
      return;
    }
    for (std::int64_t i = 0; i < chunks; ++i) errors_[static_cast<std::size_t>(i)] = nullptr;
    job_ = &chunk;
    job_chunks_ = chunks;
    // Every worker acknowledges every job, idle ones too, so none can lag into the next.
    remaining_.store(static_cast<std::int64_t>(workers_.size()), std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_release);
    { std::lock_guard<std::mutex> lock(sleep_mutex_); }
    wake_.notify_all();
    run_chunk(0);
    for (int spins = 0; remaining_.load(std::memory_order_acquire) != 0; ++spins) {
      if (spins < kSpins)
        cpu_relax();
      else
        std::this_thread::yield();
    }
    job_ = nullptr;
    for (std::int64_t i = 0; i < chunks; ++i)
      if (auto error = errors_[static_cast<std::size_t>(i)]) std::rethrow_exception(error);
  }

  static void run_serially(std::int64_t chunks, const std::function<void(std::int64_t)>& chunk) {
    const bool outer = t_in_region;
    t_in_region = true;
    try {
      for (std::int64_t i = 0; i < chunks; ++i) chunk(i);
    } catch (...) {
      t_in_region = outer;
      throw;
    }
    t_in_region = outer;
  }

 private:
  Pool() = default;
  ~Pool() { stop(); }

  void start(int n) {
    size_.store(n);
    openblas_set_num_threads(1);
    errors_.assign(static_cast<std::size_t>(n), nullptr);
    stopping_.store(false);
    // A worker waits for generations after the current one; read here, not in the new
    // thread, so a stop() right after start() cannot slip in before the worker looks.
    const std::uint64_t current = generation_.load(std::memory_order_acquire);
    for (int i = 1; i < n; ++i) workers_.emplace_back([this, i, current] { work(i, current); });
  }

  void stop() {
    stopping_.store(true);
    generation_.fetch_add(1, std::memory_order_release);
    { std::lock_guard<std::mutex> lock(sleep_mutex_); }
    wake_.notify_all();
    for (std::thread& t : workers_) t.join();
    workers_.clear();
  }

  void run_chunk(std::int64_t i) {
    t_in_region = true;
    try {
      (*job_)(i);
    } catch (...) {
      errors_[static_cast<std::size_t>(i)] = std::current_exception();
    }
    t_in_region = false;
  }

  void work(int index, std::uint64_t seen) {
    for (;;) {
      std::uint64_t now = generation_.load(std::memory_order_acquire);
      if (now == seen) {
        const auto until = std::chrono::steady_clock::now() + spin_window();
        for (int spins = 1; now == seen; ++spins) {
          cpu_relax();
          now = generation_.load(std::memory_order_acquire);
          if (spins % 256 == 0 && std::chrono::steady_clock::now() >= until) break;
        }
      }
      if (now == seen) {
        std::unique_lock<std::mutex> lock(sleep_mutex_);
        wake_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
        now = generation_.load(std::memory_order_acquire);
      }
      seen = now;
      if (stopping_.load()) return;
      if (index < job_chunks_) run_chunk(index);
      remaining_.fetch_sub(1, std::memory_order_release);
    }
  }

  std::once_flag init_;
  std::atomic<int> size_{1};
  std::vector<std::thread> workers_;
  std::mutex run_mutex_;  // one parallel_for at a time uses the workers
  std::mutex sleep_mutex_;
  std::condition_variable wake_;
  std::atomic<std::uint64_t> generation_{0};
  std::atomic<std::int64_t> remaining_{0};
  std::atomic<bool> stopping_{false};
  const std::function<void(std::int64_t)>* job_ = nullptr;
  std::int64_t job_chunks_ = 0;
  std::vector<std::exception_ptr> errors_;
};

}  // namespace

int pool_threads() { return Pool::instance().size(); }

bool in_parallel_region() { return t_in_region; }

std::int64_t parallel_chunks(std::int64_t n, std::int64_t grain) {
  if (n <= 0) return 0;
  if (t_in_region) return 1;
  const std::int64_t g = std::max<std::int64_t>(grain, 1);
  return std::max<std::int64_t>(1, std::min<std::int64_t>(pool_threads(), (n + g - 1) / g));
}

std::int64_t chunk_begin(std::int64_t n, std::int64_t chunks, std::int64_t i) {
  return n / chunks * i + std::min(i, n % chunks);
}

void parallel_for(std::int64_t n, std::int64_t grain,
                  const std::function<void(std::int64_t, std::int64_t)>& body) {
  const std::int64_t chunks = parallel_chunks(n, grain);
  if (chunks == 0) return;
  if (chunks == 1) {
    if (t_in_region) {
      body(0, n);
    } else {
      Pool::run_serially(1, [&](std::int64_t) { body(0, n); });
    }
    return;
  }
  Pool::instance().run(chunks, [&](std::int64_t i) {
    body(chunk_begin(n, chunks, i), chunk_begin(n, chunks, i + 1));
  });
}

void parallel_for_aligned(std::int64_t n, std::int64_t align, std::int64_t grain_elements,
                          const std::function<void(std::int64_t, std::int64_t)>& body) {
  const std::int64_t pieces = n > 0 ? (n + align - 1) / align : 0;
  parallel_for(pieces, std::max<std::int64_t>(1, grain_elements / align),
               [&](std::int64_t first, std::int64_t last) {
                 body(first * align, std::min(n, last * align));
               });
}

}  // namespace headgrad::detail

namespace headgrad {

void set_num_threads(int n) {
  if (n < 1 || n > 1024)
    throw ValueError("set_num_threads: expected 1 <= n <= 1024, got " + std::to_string(n));
  detail::Pool::instance().resize(n);
}

int get_num_threads() { return detail::pool_threads(); }

}  // namespace headgrad
