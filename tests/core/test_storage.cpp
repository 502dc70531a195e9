// The CPU block cache (core/storage.hpp): a freed large block is handed to the next
// allocation of the same size, the cache stays within its limit, small blocks bypass it,
// and emptying or disabling it returns everything.
#include <doctest/doctest.h>

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
