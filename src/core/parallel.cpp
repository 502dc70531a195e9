// The thread pool behind parallel_for (parallel.hpp) and set_num_threads (threads.hpp).
//
// A job is published as one atomic word, generation and chunk count together. The caller
// runs chunk 0, then it and the woken workers claim the other chunks one at a time (an
// atomic counter tagged with the generation), so nobody waits on a thread the system has
// not scheduled: a descheduled worker's chunks are run by whoever is free. Chunk bounds
// still depend only on the sizes and set_num_threads, never on who runs a chunk.
//
// Threads: set_num_threads(n) makes n chunks, but at most as many threads as this process
// has usable CPUs (affinity mask, cgroup quota: cpus.hpp) ever run them; more would only
// take CPUs from each other. Idle workers wait for a new generation: they spin briefly
// (consecutive ops of a step follow each other within microseconds), then sleep on their
// own condition variable, so an idle pool costs nothing, and the caller wakes only the
// workers a job can use. When other processes compete for the CPUs, a spinning worker
// takes this process's share of them from the threads with work (Linux shares CPUs between
// process groups, not threads), so every worker stops spinning for a while once a spinning
// worker finds it was descheduled or the caller finds it waited for a CPU; afterwards a
// worker lengthens its window again while jobs keep arriving soon after it fell asleep.
//
// OpenBLAS is kept at one thread: the GEMM wrappers split their products across this pool
// instead (two pools would fight over the cores).
#include "core/parallel.hpp"

#include <cblas.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/cpus.hpp"
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

// The default size: OMP_NUM_THREADS, else OPENBLAS_NUM_THREADS, else the CPUs this process
// may use (affinity mask and cgroup quota, not the machine's core count) divided among the
// processes an MPI launcher started on this machine (so ranks do not oversubscribe the
// cores), at least 1.
int default_threads() {
  for (const char* var : {"OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"})
    if (const long n = env_count(var)) return static_cast<int>(n);
  long local_ranks = 1;
  for (const char* var : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"})
    if (const long n = env_count(var)) {
      local_ranks = n;
      break;
    }
  return static_cast<int>(std::max(1L, available_cpus() / local_ranks));
}

// A job's words: generation in the high bits, a chunk count or index in the low ones.
constexpr int kIndexBits = 16;
std::uint64_t job_generation(std::uint64_t word) { return word >> kIndexBits; }
std::int64_t job_index(std::uint64_t word) {
  return static_cast<std::int64_t>(word & ((std::uint64_t{1} << kIndexBits) - 1));
}

// Signs that other processes compete for the CPUs: a gap this long between two looks at
// the clock while a worker spins (it was descheduled), or a caller that waited runnable
// for over a tenth of a kSample period. Workers then stop spinning for kCalm; after that a
// worker's window grows back from kShortestSpin, doubling while jobs keep arriving soon
// after it fell asleep.
constexpr std::chrono::microseconds kPreempted{150};
constexpr std::chrono::milliseconds kSample{10};
constexpr std::chrono::milliseconds kCalm{100};
constexpr std::chrono::microseconds kShortestSpin{20};

using Clock = std::chrono::steady_clock;

std::int64_t ticks(Clock::time_point t) { return t.time_since_epoch().count(); }

// The calling thread's time spent runnable but waiting for a CPU, in nanoseconds (the
// second field of /proc/thread-self/schedstat), or -1 where the kernel does not say.
std::int64_t run_delay_ns() {
  const int fd = ::open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char text[128];
  const ssize_t n = ::read(fd, text, sizeof text - 1);
  ::close(fd);
  if (n <= 0) return -1;
  text[n] = '\0';
  unsigned long long on_cpu = 0, waiting = 0;
  if (std::sscanf(text, "%llu %llu", &on_cpu, &waiting) != 2) return -1;
  return static_cast<std::int64_t>(waiting);
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

  // Runs chunk(i) for i in [0, chunks): the caller runs chunk 0, then it and the woken
  // workers claim the others one at a time.
  void run(std::int64_t chunks, const std::function<void(std::int64_t)>& chunk) {
    std::unique_lock<std::mutex> run(run_mutex_, std::try_to_lock);
    if (!run.owns_lock() || chunks > size_.load(std::memory_order_relaxed)) {
      run_serially(chunks, chunk);  // another user thread holds the pool
      return;
    }
    watch_contention();
    for (std::int64_t i = 0; i < chunks; ++i) errors_[static_cast<std::size_t>(i)] = nullptr;
    job_ = &chunk;
    remaining_.store(chunks, std::memory_order_relaxed);
    const std::uint64_t generation = job_generation(word_.load(std::memory_order_relaxed)) + 1;
    claim_.store(generation << kIndexBits | 1, std::memory_order_relaxed);  // 0 is ours
    word_.store(generation << kIndexBits | static_cast<std::uint64_t>(chunks));
    const std::size_t helpers = std::min(static_cast<std::size_t>(chunks) - 1, workers_.size());
    for (std::size_t i = 1; i <= helpers; ++i) {
      Slot& slot = *slots_[i];
      if (slot.sleeping.load()) {
        { std::lock_guard<std::mutex> lock(slot.mutex); }
        slot.wake.notify_one();
      }
    }
    run_chunk(0);
    claim_and_run(generation, chunks);
    // The chunks other threads took: spin for them, or yield at once while calmed.
    const int spins_before_yield = calm(Clock::now()) ? 0 : kSpins;
    for (int spins = 0; remaining_.load(std::memory_order_acquire) != 0; ++spins) {
      if (spins < spins_before_yield)
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
  // A worker's own place to sleep: the caller wakes only the workers a job can use.
  struct alignas(64) Slot {
    std::mutex mutex;
    std::condition_variable wake;
    std::atomic<bool> sleeping{false};
  };

  Pool() = default;
  ~Pool() { stop(); }

  // n threads' worth of chunks; min(n, usable CPUs) threads to run them.
  void start(int n) {
    size_.store(n);
    openblas_set_num_threads(1);
    errors_.assign(static_cast<std::size_t>(n), nullptr);
    stopping_.store(false);
    const int threads = std::min(n, available_cpus());
    slots_.clear();
    for (int i = 0; i < threads; ++i) slots_.push_back(std::make_unique<Slot>());
    // A worker waits for generations after the current one; read here, not in the new
    // thread, so a stop() right after start() cannot slip in before the worker looks.
    const std::uint64_t current = job_generation(word_.load(std::memory_order_acquire));
    for (int i = 1; i < threads; ++i)
      workers_.emplace_back([this, i, current] { work(i, current); });
  }

  void stop() {
    stopping_.store(true);
    word_.store((job_generation(word_.load()) + 1) << kIndexBits);
    for (auto& slot : slots_) {
      { std::lock_guard<std::mutex> lock(slot->mutex); }
      slot->wake.notify_one();
    }
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
    remaining_.fetch_sub(1, std::memory_order_acq_rel);
  }

  // Claims and runs chunks of job `generation` until none is left. A chunk is claimed by
  // whoever comes first, so nobody waits on a thread the system has not scheduled yet;
  // job_ stays valid while a claimed chunk of its generation is unfinished.
  void claim_and_run(std::uint64_t generation, std::int64_t chunks) {
    std::uint64_t claim = claim_.load(std::memory_order_acquire);
    while (job_generation(claim) == generation && job_index(claim) < chunks) {
      if (claim_.compare_exchange_weak(claim, claim + 1, std::memory_order_acq_rel,
                                       std::memory_order_acquire)) {
        run_chunk(job_index(claim));
        claim = claim_.load(std::memory_order_acquire);
      }
    }
  }

  // Every kSample, the caller looks at how long it waited for a CPU meanwhile. Over a tenth
  // of the time: other processes want the CPUs, and a spinning worker would take this
  // process's share of them (the scheduler shares CPUs between process groups, not threads)
  // from the caller, who holds the serial work. The workers stop spinning for kCalm.
  void watch_contention() {
    const auto now = Clock::now();
    if (now < next_sample_) return;
    const std::int64_t delay = run_delay_ns();
    if (delay >= 0 && sampled_thread_ == std::this_thread::get_id() &&
        std::chrono::nanoseconds(delay - sampled_delay_) * 10 > now - sampled_at_)
      calm_until_.store(ticks(now + kCalm), std::memory_order_relaxed);
    sampled_thread_ = std::this_thread::get_id();
    sampled_delay_ = delay;
    sampled_at_ = now;
    next_sample_ = now + kSample;
  }

  bool calm(Clock::time_point now) const {
    return ticks(now) < calm_until_.load(std::memory_order_relaxed);
  }

  // Polls for a generation after `seen` for up to `window`. When the thread was descheduled
  // meanwhile (another thread wanted this CPU), sets the window to 0 and calms every worker
  // for kCalm. Returns the last word read.
  std::uint64_t spin(std::uint64_t seen, std::chrono::microseconds& window) {
    using clock = Clock;
    auto last = clock::now();
    const auto until = last + window;
    std::uint64_t word = word_.load(std::memory_order_acquire);
    for (int spins = 1; job_generation(word) == seen; ++spins) {
      cpu_relax();
      word = word_.load(std::memory_order_acquire);
      if (spins % 64 != 0) continue;
      const auto now = clock::now();
      if (now - last > kPreempted) {
        window = std::chrono::microseconds(0);
        calm_until_.store(ticks(now + kCalm), std::memory_order_relaxed);
        break;
      }
      if (now >= until) break;
      last = now;
    }
    return word;
  }

  void work(int index, std::uint64_t seen) {
    Slot& slot = *slots_[static_cast<std::size_t>(index)];
    const std::chrono::microseconds longest = spin_window();
    std::chrono::microseconds window = longest;
    for (;;) {
      std::uint64_t word = word_.load(std::memory_order_acquire);
      if (job_generation(word) == seen && window.count() > 0) {
        if (calm(Clock::now()))
          window = std::chrono::microseconds(0);
        else
          word = spin(seen, window);
      }
      if (job_generation(word) == seen) {
        const auto asleep = std::chrono::steady_clock::now();
        {
          std::unique_lock<std::mutex> lock(slot.mutex);
          slot.sleeping.store(true);
          slot.wake.wait(lock, [&] { return job_generation(word_.load()) != seen; });
          slot.sleeping.store(false, std::memory_order_relaxed);
        }
        word = word_.load(std::memory_order_acquire);
        // Woken soon after falling asleep: a spin would have caught this job. Lengthen the
        // window again, once the calm period after a preemption is over.
        const auto now = Clock::now();
        if (window < longest && now - asleep < longest && !calm(now))
          window = std::min(longest, std::max(kShortestSpin, window * 2));
      }
      seen = job_generation(word);
      if (stopping_.load()) return;
      claim_and_run(seen, job_index(word));
    }
  }

  std::once_flag init_;
  std::atomic<int> size_{1};
  std::vector<std::thread> workers_;
  std::vector<std::unique_ptr<Slot>> slots_;  // one per thread; slot 0 (the caller) unused
  std::mutex run_mutex_;                      // one parallel_for at a time uses the workers
  std::atomic<std::uint64_t> word_{0};        // the job: generation, chunk count
  std::atomic<std::uint64_t> claim_{0};       // generation, next chunk to claim
  std::atomic<std::int64_t> remaining_{0};    // chunks not finished
  std::atomic<bool> stopping_{false};
  std::atomic<std::int64_t> calm_until_{0};  // Clock ticks: no worker spins before then
  // The caller's last look at its wait for a CPU (watch_contention; under run_mutex_).
  Clock::time_point next_sample_{}, sampled_at_{};
  std::int64_t sampled_delay_ = 0;
  std::thread::id sampled_thread_{};
  const std::function<void(std::int64_t)>* job_ = nullptr;
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
