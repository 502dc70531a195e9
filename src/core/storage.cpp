// CPU storage and its block cache (see core/storage.hpp).
#include "headgrad/core/storage.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <mutex>
#include <new>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/cuda_backend.hpp"
#include "headgrad/core/error.hpp"

#if defined(__SANITIZE_ADDRESS__)
#define HEADGRAD_CPU_CACHE_DEFAULT_LIMIT 0
#else
#define HEADGRAD_CPU_CACHE_DEFAULT_LIMIT (std::size_t{1} << 30)
#endif

// Sanitizer and debug builds fill every new block with 0xFF bytes (NaN as float32 and
// float64), so that a kernel that leaves part of its output unwritten shows up as NaN in
// the tests instead of passing on memory that happened to be zero.
#if defined(__SANITIZE_ADDRESS__) || !defined(NDEBUG)
#define HEADGRAD_POISON_NEW_STORAGE 1
#else
#define HEADGRAD_POISON_NEW_STORAGE 0
#endif

namespace headgrad {

namespace {

constexpr std::size_t kAlignment = 64;
constexpr std::size_t kMinCached = 64 * 1024;

// n rounded up to a multiple of 64 below kMinCached, else to a multiple of 1/8 of the
// largest power of two <= n (so a cached block wastes at most 12.5%).
std::size_t block_size(std::size_t n) {
  if (n < kMinCached) return (n + kAlignment - 1) / kAlignment * kAlignment;
  const std::size_t step = std::bit_floor(n) / 8;
  return (n + step - 1) / step * step;
}

struct BlockCache {
  std::mutex mutex;
  std::unordered_map<std::size_t, std::vector<void*>> free_blocks;  // by block size
  std::size_t cached_bytes = 0;
  std::size_t limit_bytes = HEADGRAD_CPU_CACHE_DEFAULT_LIMIT;
  std::uint64_t hits = 0, misses = 0;

  // Frees every cached block; the caller holds the mutex.
  void drain() {
    for (auto& [size, blocks] : free_blocks)
      for (void* p : blocks) std::free(p);
    free_blocks.clear();
    cached_bytes = 0;
  }
};

// Never destroyed: storages freed during static destruction still return here.
BlockCache& cache() {
  static BlockCache* c = new BlockCache;
  return *c;
}

// Small blocks (up to kSmallMax bytes, one class per multiple of kAlignment) are kept per
// thread, without a lock: a small op's result, freed a moment later, is the next op's.
// The lists are plain data, valid until the thread's storage goes; a guard object drains
// them into free() when the thread exits and marks them closed, so that a block freed later
// on that thread (a static destructor's) goes to free() directly.
constexpr std::size_t kSmallMax = 4096;
constexpr std::size_t kSmallClasses = kSmallMax / kAlignment;
constexpr std::size_t kSmallPerClass = 8;  // at most 1 MiB held per thread

struct SmallBlocks {
  void* blocks[kSmallClasses][kSmallPerClass];
  std::uint8_t count[kSmallClasses];
  bool guarded, closed;
};
thread_local SmallBlocks small_blocks{};  // trivially destructible: never destroyed

void drain_small_blocks() {
  for (std::size_t c = 0; c < kSmallClasses; ++c) {
    for (std::size_t i = 0; i < small_blocks.count[c]; ++i) std::free(small_blocks.blocks[c][i]);
    small_blocks.count[c] = 0;
  }
}

struct SmallBlocksGuard {
  ~SmallBlocksGuard() {
    drain_small_blocks();
    small_blocks.closed = true;
  }
};
thread_local SmallBlocksGuard small_blocks_guard;

// Small blocks are cached while the block cache is on (a limit above 0; never under
// AddressSanitizer, whose use-after-free checks need every block freed).
std::atomic<bool> small_cache_on{HEADGRAD_CPU_CACHE_DEFAULT_LIMIT > 0};

// The class of a small block size (a multiple of kAlignment up to kSmallMax), or -1.
std::ptrdiff_t small_class(std::size_t size) {
  if (size > kSmallMax || !small_cache_on.load(std::memory_order_relaxed)) return -1;
  return static_cast<std::ptrdiff_t>(size / kAlignment - 1);
}

void* take_small_block(std::size_t cls) {
  std::uint8_t& n = small_blocks.count[cls];
  return n == 0 ? nullptr : small_blocks.blocks[cls][--n];
}

// Keeps `p` in its class's list; false when the list is full or the thread is exiting.
bool keep_small_block(void* p, std::size_t cls) {
  if (small_blocks.closed) return false;
  if (!small_blocks.guarded) {
    (void)&small_blocks_guard;  // constructs the guard: it drains the lists at thread exit
    small_blocks.guarded = true;
  }
  std::uint8_t& n = small_blocks.count[cls];
  if (n == kSmallPerClass) return false;
  small_blocks.blocks[cls][n++] = p;
  return true;
}

void* allocate_block(std::size_t size) {
  if (const std::ptrdiff_t cls = small_class(size); cls >= 0)
    if (void* p = take_small_block(static_cast<std::size_t>(cls))) return p;
  if (size >= kMinCached) {
    BlockCache& c = cache();
    std::lock_guard lock(c.mutex);
    auto it = c.free_blocks.find(size);
    if (it != c.free_blocks.end() && !it->second.empty()) {
      void* p = it->second.back();
      it->second.pop_back();
      c.cached_bytes -= size;
      ++c.hits;
      return p;
    }
    ++c.misses;
  }
  void* p = std::aligned_alloc(kAlignment, size);
  if (p == nullptr)
    throw MemoryError("cannot allocate " + std::to_string(size) +
                      " bytes of CPU memory: the allocator refused");
  return p;
}

std::atomic<std::size_t> max_tensor_bytes_setting{0};

// The decimal number `text` starts with, if it does ("max" in a cgroup file does not).
std::optional<std::size_t> leading_number(const std::string& text) {
  std::size_t n = 0, i = 0;
  for (; i < text.size() && i < 20 && text[i] >= '0' && text[i] <= '9'; ++i)
    n = n * 10 + static_cast<std::size_t>(text[i] - '0');
  if (i == 0) return std::nullopt;
  return n;
}

// The first number on the line of /proc/meminfo that starts with `key`, in bytes.
std::optional<std::size_t> meminfo_bytes(const std::string& text, const std::string& key) {
  const std::size_t at = text.find("\n" + key);
  if (at == std::string::npos) return std::nullopt;
  const std::size_t digits = text.find_first_of("0123456789", at + key.size() + 1);
  if (digits == std::string::npos) return std::nullopt;
  const auto kib = leading_number(text.substr(digits, 20));
  if (!kib) return std::nullopt;
  return *kib * 1024;
}

// The whole of a small text file, or "" when it cannot be read.
std::string read_text(const char* path) {
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return text;
}

void free_block(void* p, std::size_t size) {
  if (const std::ptrdiff_t cls = small_class(size);
      cls >= 0 && keep_small_block(p, static_cast<std::size_t>(cls)))
    return;
  if (size >= kMinCached) {
    BlockCache& c = cache();
    std::lock_guard lock(c.mutex);
    if (c.cached_bytes + size <= c.limit_bytes) {
      c.free_blocks[size].push_back(p);
      c.cached_bytes += size;
      return;
    }
  }
  std::free(p);
}

}  // namespace

Storage::Storage(std::size_t nbytes, Device device) : nbytes_(nbytes), device_(device) {
  if (device.is_cuda()) {
    // Names the device and why it is missing (no backend library, driver or GPU).
    cuda::check_device(device.index(), "new tensor");
    capacity_ = nbytes;
    data_ = cuda::backend().allocate(nbytes, device.index());
    if constexpr (HEADGRAD_POISON_NEW_STORAGE)
      cuda::backend().memset_device(data_, 0xFF, nbytes, device.index());
    return;
  }
  // Never zero bytes, so that data() is a valid aligned pointer even for empty tensors.
  capacity_ = block_size(nbytes == 0 ? kAlignment : nbytes);
  data_ = allocate_block(capacity_);
  if constexpr (HEADGRAD_POISON_NEW_STORAGE) std::memset(data_, 0xFF, capacity_);
}

Storage::Storage(void* data, std::size_t nbytes, std::function<void()> release)
    : data_(data), nbytes_(nbytes), device_(Device::cpu()), release_(std::move(release)) {
  if (data == nullptr && nbytes > 0)
    throw ValueError("from_blob: a null pointer for " + std::to_string(nbytes) + " bytes");
  if (!release_) release_ = [] {};
}

Storage::~Storage() {
  if (release_)
    release_();
  else if (device_.is_cuda())
    cuda::backend().deallocate(data_, device_.index());
  else
    free_block(data_, capacity_);
}

CpuCacheStats cpu_cache_stats() {
  BlockCache& c = cache();
  std::lock_guard lock(c.mutex);
  return {c.cached_bytes, c.limit_bytes, c.hits, c.misses};
}

void set_cpu_cache_limit(std::size_t bytes) {
  BlockCache& c = cache();
  std::lock_guard lock(c.mutex);
  c.limit_bytes = bytes;
  small_cache_on.store(bytes > 0);
  if (bytes == 0) drain_small_blocks();
  if (c.cached_bytes > bytes) c.drain();
}

void set_max_tensor_bytes(std::size_t bytes) { max_tensor_bytes_setting.store(bytes); }

std::size_t max_tensor_bytes() {
  if (const std::size_t set = max_tensor_bytes_setting.load(std::memory_order_relaxed); set != 0)
    return set;
  // The machine's memory, read once: glibc answers _SC_PHYS_PAGES with a sysinfo system call,
  // which cost a quarter of a small op's time when every allocation asked.
  static const std::size_t physical = [] {
    const long pages = ::sysconf(_SC_PHYS_PAGES), page_size = ::sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page_size <= 0) return SIZE_MAX;
    return static_cast<std::size_t>(pages) * static_cast<std::size_t>(page_size);
  }();
  return physical;
}

std::optional<std::size_t> available_cpu_memory() {
  std::string meminfo = "\n";  // so that every key, the first too, follows a newline
  meminfo += read_text("/proc/meminfo");
  const auto available = meminfo_bytes(meminfo, "MemAvailable:");
  if (!available) return std::nullopt;
  std::size_t bytes = *available + meminfo_bytes(meminfo, "SwapFree:").value_or(0);
  const std::string max = read_text("/sys/fs/cgroup/memory.max");
  const std::string current = read_text("/sys/fs/cgroup/memory.current");
  const auto limit = leading_number(max), used = leading_number(current);
  if (limit && used) bytes = std::min(bytes, *limit > *used ? *limit - *used : 0);
  return bytes + cpu_cache_stats().cached_bytes;
}

void empty_cpu_cache() {
  drain_small_blocks();
  BlockCache& c = cache();
  std::lock_guard lock(c.mutex);
  c.drain();
}

}  // namespace headgrad
