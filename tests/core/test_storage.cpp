// The CPU block cache (core/storage.hpp): a freed large block is handed to the next
// allocation of the same size, the cache stays within its limit, small blocks bypass it
// for the calling thread's own lists (reused at once, safe across thread exits), and
// emptying or disabling it returns everything.
#include <doctest/doctest.h>

#include <memory>
#include <thread>

#include "headgrad/headgrad.hpp"

namespace hg = headgrad;

namespace {

// Restores the limit a test changed (tests share the process-wide cache).
struct LimitGuard {
  std::size_t saved = hg::cpu_cache_stats().limit_bytes;
  ~LimitGuard() { hg::set_cpu_cache_limit(saved); }
};

}  // namespace

TEST_CASE("the CPU cache reuses a freed block for the next allocation of its size") {
  LimitGuard guard;
  hg::set_cpu_cache_limit(64 << 20);
  hg::empty_cpu_cache();
  const void* first = nullptr;
  {
    hg::Storage s(1 << 20, hg::Device::cpu());
    first = s.data();
  }
  CHECK(hg::cpu_cache_stats().cached_bytes == (1 << 20));
  const auto before = hg::cpu_cache_stats();
  hg::Storage again((1 << 20) - 100, hg::Device::cpu());  // rounds up to the same block
  CHECK(again.data() == first);
  CHECK(hg::cpu_cache_stats().hits == before.hits + 1);
  CHECK(hg::cpu_cache_stats().cached_bytes == 0);
}

TEST_CASE("the CPU cache stays within its limit and can be emptied or disabled") {
  LimitGuard guard;
  hg::set_cpu_cache_limit((5 << 20) / 2);  // room for two 1 MiB blocks
  hg::empty_cpu_cache();
  {
    hg::Storage a(1 << 20, hg::Device::cpu()), b(1 << 20, hg::Device::cpu()),
        c(1 << 20, hg::Device::cpu());
  }
  CHECK(hg::cpu_cache_stats().cached_bytes == (2 << 20));
  hg::empty_cpu_cache();
  CHECK(hg::cpu_cache_stats().cached_bytes == 0);
  { hg::Storage a(1 << 20, hg::Device::cpu()); }
  hg::set_cpu_cache_limit(0);
  CHECK(hg::cpu_cache_stats().cached_bytes == 0);
  { hg::Storage a(1 << 20, hg::Device::cpu()); }
  CHECK(hg::cpu_cache_stats().cached_bytes == 0);
}

TEST_CASE("small CPU blocks bypass the cache, and every block is 64-byte aligned") {
  LimitGuard guard;
  hg::set_cpu_cache_limit(64 << 20);
  hg::empty_cpu_cache();
  const auto before = hg::cpu_cache_stats();
  for (std::size_t n : {0, 1, 100, 4096, 65000}) {
    hg::Storage s(n, hg::Device::cpu());
    CHECK(reinterpret_cast<std::uintptr_t>(s.data()) % 64 == 0);
  }
  const auto after = hg::cpu_cache_stats();
  CHECK(after.cached_bytes == 0);
  CHECK(after.hits + after.misses == before.hits + before.misses);
  hg::Storage big(3 << 20, hg::Device::cpu());
  CHECK(reinterpret_cast<std::uintptr_t>(big.data()) % 64 == 0);
}

TEST_CASE("a freed small block is its thread's next of that size, and thread exits are safe") {
  LimitGuard guard;
  hg::set_cpu_cache_limit(64 << 20);
  const void* first = nullptr;
  {
    hg::Storage s(100, hg::Device::cpu());  // a 128-byte block
    first = s.data();
  }
  {
    hg::Storage again(128, hg::Device::cpu());
    CHECK(again.data() == first);
  }
  // A thread's lists are freed when it exits; a block it allocated and this thread frees
  // later joins this thread's lists.
  std::unique_ptr<hg::Storage> from_thread;
  std::thread worker([&from_thread] {
    { hg::Storage kept(256, hg::Device::cpu()); }  // into the worker's list
    from_thread = std::make_unique<hg::Storage>(512, hg::Device::cpu());
  });
  worker.join();
  const void* moved = from_thread->data();
  from_thread.reset();
  hg::Storage reused(512, hg::Device::cpu());
  CHECK(reused.data() == moved);
  // Disabling the cache frees this thread's small blocks too: nothing is reused after it.
  hg::set_cpu_cache_limit(0);
  { hg::Storage s(100, hg::Device::cpu()); }
  CHECK(hg::cpu_cache_stats().cached_bytes == 0);
}
