// The intra-op thread pool (src/core/parallel.hpp) and the kernels that use it: chunks
// cover the range once, errors come back to the caller, nested and concurrent calls work,
// elementwise and row kernels give the same bits at 1 and 2 threads, GEMM-based ops agree
// to rounding, a training step repeats bitwise at a fixed thread count, and with more
// threads than usable CPUs the chunks stay the same while fewer threads run them.
#include <doctest/doctest.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "core/cpus.hpp"
#include "core/parallel.hpp"
#include "headgrad/headgrad.hpp"
#include "headgrad/ops/loss.hpp"
#include "headgrad/optim/adam.hpp"

namespace hg = headgrad;
using hg::detail::parallel_for;

namespace {

// Sets the thread count for one test and restores the previous one.
struct ThreadsGuard {
  int saved = hg::get_num_threads();
  explicit ThreadsGuard(int n) { hg::set_num_threads(n); }
  ~ThreadsGuard() { hg::set_num_threads(saved); }
};

bool bitwise_equal(const hg::Tensor& a, const hg::Tensor& b) {
  const std::vector<float> x = a.to_vector<float>(), y = b.to_vector<float>();
  return a.shape() == b.shape() && x.size() == y.size() &&
         std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
}

double max_rel_diff(const hg::Tensor& a, const hg::Tensor& b) {
  const std::vector<float> x = a.to_vector<float>(), y = b.to_vector<float>();
  REQUIRE(x.size() == y.size());
  double worst = 0, scale = 1e-30;
  for (std::size_t i = 0; i < x.size(); ++i) {
    worst = std::max(worst, std::abs(static_cast<double>(x[i]) - y[i]));
    scale = std::max(scale, std::abs(static_cast<double>(y[i])));
  }
  return worst / scale;
}

}  // namespace

TEST_CASE("parallel_for covers every index exactly once in at most num_threads chunks") {
  for (int threads : {1, 2, 3}) {
    ThreadsGuard guard(threads);
    for (std::int64_t n : {0, 1, 7, 100, 10001}) {
      std::vector<std::atomic<int>> hits(static_cast<std::size_t>(n));
      std::atomic<int> chunks{0};
      parallel_for(n, 1, [&](std::int64_t begin, std::int64_t end) {
        ++chunks;
        for (std::int64_t i = begin; i < end; ++i) ++hits[static_cast<std::size_t>(i)];
      });
      for (const auto& h : hits) CHECK(h.load() == 1);
      CHECK(chunks.load() <= threads);
      CHECK(chunks.load() == hg::detail::parallel_chunks(n, 1));
    }
  }
}

TEST_CASE("parallel_for keeps small ranges on one thread: chunks hold at least `grain` items") {
  ThreadsGuard guard(2);
  CHECK(hg::detail::parallel_chunks(1000, 1000) == 1);
  CHECK(hg::detail::parallel_chunks(1001, 1000) == 2);
  CHECK(hg::detail::parallel_chunks(0, 1) == 0);
}

TEST_CASE("parallel_for_aligned splits at multiples of align and covers every element once") {
  for (int threads : {1, 2, 3}) {
    ThreadsGuard guard(threads);
    for (std::int64_t n : {0, 1, 63, 64, 65, 1000, 40000}) {
      std::vector<std::atomic<int>> hits(static_cast<std::size_t>(n));
      std::mutex mutex;
      std::vector<std::pair<std::int64_t, std::int64_t>> ranges;
      hg::detail::parallel_for_aligned(n, 64, 1024, [&](std::int64_t begin, std::int64_t end) {
        {
          std::lock_guard<std::mutex> lock(mutex);
          ranges.emplace_back(begin, end);
        }
        for (std::int64_t i = begin; i < end; ++i) ++hits[static_cast<std::size_t>(i)];
      });
      for (const auto& h : hits) CHECK(h.load() == 1);
      CAPTURE(threads);
      CAPTURE(n);
      CHECK(ranges.size() ==
            static_cast<std::size_t>(hg::detail::parallel_chunks((n + 63) / 64, 16)));
      for (const auto& [begin, end] : ranges) {
        CHECK(begin % 64 == 0);
        CHECK((end % 64 == 0 || end == n));
        if (ranges.size() > 1) CHECK(end - begin >= 1024);
      }
    }
  }
}

TEST_CASE("parallel_for runs the chunks on different threads") {
  if (hg::detail::available_cpus() < 2) return;  // one usable CPU: one thread runs them all
  ThreadsGuard guard(2);
  std::vector<std::thread::id> ids(2);
  std::atomic<bool> second_started{false};
  parallel_for(2, 1, [&](std::int64_t begin, std::int64_t) {
    ids[static_cast<std::size_t>(begin)] = std::this_thread::get_id();
    if (begin > 0) {
      second_started = true;
      return;
    }
    // Chunk 0 (the caller's) holds on until a worker has taken chunk 1: the caller claims
    // leftover chunks only after its own.
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!second_started && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::microseconds(100));
  });
  CHECK(second_started.load());
  CHECK(ids[0] == std::this_thread::get_id());
  CHECK(ids[1] != ids[0]);
}

TEST_CASE("more threads than usable CPUs: the chunks stay, only as many threads run them") {
  // Pin this thread to one CPU: the pool it starts sees one usable CPU and starts no
  // worker, yet set_num_threads(5) still makes 5 chunks with the same bounds.
  cpu_set_t saved;
  REQUIRE(sched_getaffinity(0, sizeof saved, &saved) == 0);
  int first = 0;
  while (!CPU_ISSET(first, &saved)) ++first;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  const int threads_before = hg::get_num_threads();
  REQUIRE(sched_setaffinity(0, sizeof one, &one) == 0);
  CHECK(hg::detail::available_cpus() == 1);
  hg::set_num_threads(5);
  std::vector<std::thread::id> ids(5);
  parallel_for(5, 1, [&](std::int64_t begin, std::int64_t) {
    ids[static_cast<std::size_t>(begin)] = std::this_thread::get_id();
  });
  const std::int64_t chunks = hg::detail::parallel_chunks(5, 1);
  REQUIRE(sched_setaffinity(0, sizeof saved, &saved) == 0);
  hg::set_num_threads(threads_before);
  CHECK(chunks == 5);
  for (const auto& id : ids) CHECK(id == std::this_thread::get_id());
}

TEST_CASE("an exception thrown by a chunk reaches the caller and the pool stays usable") {
  ThreadsGuard guard(2);
  CHECK_THROWS_WITH_AS(parallel_for(100, 1,
                                    [](std::int64_t begin, std::int64_t) {
                                      if (begin > 0) throw hg::ValueError("second chunk failed");
                                    }),
                       "second chunk failed", hg::ValueError);
  std::atomic<std::int64_t> total{0};
  parallel_for(100, 1, [&](std::int64_t begin, std::int64_t end) { total += end - begin; });
  CHECK(total.load() == 100);
}

TEST_CASE("a parallel_for inside a chunk runs serially and completely") {
  ThreadsGuard guard(2);
  std::vector<int> out(64 * 64, 0);
  parallel_for(64, 1, [&](std::int64_t r0, std::int64_t r1) {
    CHECK(hg::detail::in_parallel_region());
    for (std::int64_t r = r0; r < r1; ++r)
      parallel_for(64, 1, [&](std::int64_t c0, std::int64_t c1) {
        CHECK(c0 == 0);
        CHECK(c1 == 64);
        for (std::int64_t c = c0; c < c1; ++c) out[static_cast<std::size_t>(r * 64 + c)] += 1;
      });
  });
  for (int v : out) CHECK(v == 1);
  CHECK_FALSE(hg::detail::in_parallel_region());
}

TEST_CASE("user threads calling parallel_for at once all get complete results") {
  ThreadsGuard guard(2);
  std::atomic<int> wrong{0};
  auto work = [&] {
    for (int round = 0; round < 200; ++round) {
      std::vector<int> hits(1000, 0);
      parallel_for(1000, 1, [&](std::int64_t begin, std::int64_t end) {
        for (std::int64_t i = begin; i < end; ++i) hits[static_cast<std::size_t>(i)] += 1;
      });
      for (int h : hits)
        if (h != 1) ++wrong;
    }
  };
  std::thread a(work), b(work);
  work();
  a.join();
  b.join();
  CHECK(wrong.load() == 0);
}

TEST_CASE("set_num_threads validates its argument and get_num_threads reports it") {
  ThreadsGuard guard(1);
  CHECK_THROWS_AS(hg::set_num_threads(0), hg::ValueError);
  CHECK_THROWS_AS(hg::set_num_threads(1025), hg::ValueError);
  hg::set_num_threads(3);
  CHECK(hg::get_num_threads() == 3);
  hg::set_num_threads(1);
  CHECK(hg::get_num_threads() == 1);
  hg::set_num_threads(2);
  std::atomic<int> refused{0};
  parallel_for(2, 1, [&](std::int64_t, std::int64_t) {
    try {
      hg::set_num_threads(1);
    } catch (const hg::ValueError&) {
      ++refused;
    }
  });
  CHECK(refused.load() == 2);
  CHECK(hg::get_num_threads() == 2);
}

TEST_CASE("elementwise and row kernels give the same bits at 1 and 2 threads") {
  hg::Generator gen(7);
  // Sizes that leave partial SIMD vectors and uneven chunks.
  hg::Tensor x = hg::randn({1031, 133}, hg::kFloat32, &gen).requires_grad_(true);
  const hg::Tensor bias = hg::randn({133}, hg::kFloat32, &gen);
  hg::Tensor w = hg::randn({133}, hg::kFloat32, &gen).requires_grad_(true);
  hg::Tensor b = hg::randn({133}, hg::kFloat32, &gen).requires_grad_(true);
  const hg::Tensor dy = hg::randn({1031, 133}, hg::kFloat32, &gen);
  auto run = [&](int threads) {
    ThreadsGuard guard(threads);
    x.zero_grad();
    w.zero_grad();
    b.zero_grad();
    const hg::Tensor g = hg::gelu(x);
    const hg::Tensor e = hg::exp(x * 0.1);
    const hg::Tensor sum = x + bias;
    const hg::Tensor n = hg::layer_norm(x, {133}, w, b, 1e-5);
    hg::sum(g * dy + n * dy + e).backward();
    return std::vector<hg::Tensor>{g, e, sum, n, x.grad(), w.grad(), b.grad()};
  };
  const auto one = run(1), two = run(2);
  for (std::size_t i = 0; i < one.size(); ++i) {
    CAPTURE(i);
    CHECK(bitwise_equal(one[i], two[i]));
  }
}

TEST_CASE("GEMM-based ops at 2 threads agree with 1 thread to rounding and repeat bitwise") {
  hg::Generator gen(11);
  hg::Tensor a = hg::randn({517, 96}, hg::kFloat32, &gen).requires_grad_(true);
  hg::Tensor b = hg::randn({96, 263}, hg::kFloat32, &gen).requires_grad_(true);
  const hg::Tensor batched = hg::randn({37, 64, 32}, hg::kFloat32, &gen);
  const hg::Tensor other = hg::randn({37, 32, 64}, hg::kFloat32, &gen);
  auto run = [&](int threads) {
    ThreadsGuard guard(threads);
    a.zero_grad();
    b.zero_grad();
    const hg::Tensor c = hg::matmul(a, b);
    hg::sum(c * c).backward();
    return std::vector<hg::Tensor>{c, a.grad(), b.grad(), hg::matmul(batched, other)};
  };
  const auto one = run(1), two = run(2), again = run(2);
  for (std::size_t i = 0; i < one.size(); ++i) {
    CAPTURE(i);
    CHECK(max_rel_diff(two[i], one[i]) < 1e-5);
    CHECK(bitwise_equal(two[i], again[i]));
  }
}

TEST_CASE("a GPT training step at 2 threads matches 1 thread and repeats bitwise") {
  hg::nn::GPTOptions o;
  o.vocab_size = 32;
  o.max_len = 48;
  o.d_model = 64;
  o.nhead = 4;
  o.num_layers = 2;
  hg::Generator data(5);
  const hg::Tensor tokens = hg::randint(0, 32, {16, 48}, hg::TensorOptions(hg::kInt64), &data);
  const hg::Tensor targets = hg::randint(0, 32, {16 * 48}, hg::TensorOptions(hg::kInt64), &data);
  // The gradients of one step, then the parameters after three AdamW steps.
  auto train = [&](int threads) {
    ThreadsGuard guard(threads);
    hg::Generator gen(3);
    hg::nn::GPT model(o, &gen);
    hg::optim::AdamW opt(model.parameters(), hg::optim::AdamWOptions().with_lr(1e-3));
    std::vector<hg::Tensor> grads;
    for (int step = 0; step < 3; ++step) {
      const hg::Tensor loss = hg::cross_entropy(hg::reshape(model(tokens), {16 * 48, 32}), targets);
      opt.zero_grad();
      loss.backward();
      if (step == 0)
        for (const hg::Tensor& p : model.parameters()) grads.push_back(p.grad().clone());
      opt.step();
    }
    return std::make_pair(grads, model.parameters());
  };
  const auto one = train(1), two = train(2), again = train(2);
  REQUIRE(one.first.size() == two.first.size());
  // Gradients agree to float rounding, measured against the largest gradient entry (the key
  // projection's bias has an exactly-zero gradient in theory, so only rounding noise, which
  // AdamW's normalized update then turns into lr-sized steps of either sign: parameters are
  // compared only between runs at the same thread count).
  double largest = 0;
  for (const hg::Tensor& g : one.first)
    for (float v : g.to_vector<float>())
      largest = std::max(largest, std::abs(static_cast<double>(v)));
  for (std::size_t i = 0; i < one.first.size(); ++i) {
    CAPTURE(i);
    const std::vector<float> a = one.first[i].to_vector<float>(),
                             b = two.first[i].to_vector<float>();
    double worst = 0;
    for (std::size_t j = 0; j < a.size(); ++j)
      worst = std::max(worst, std::abs(static_cast<double>(a[j]) - b[j]));
    CHECK(worst <= 1e-5 * largest);
    CHECK(bitwise_equal(two.first[i], again.first[i]));
    CHECK(bitwise_equal(two.second[i], again.second[i]));
  }
}
