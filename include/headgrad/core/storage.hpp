// A device-agnostic, reference-counted byte buffer. CPU storage is a 64-byte aligned block
// from the CPU block cache below; kernels read it through raw pointers or xt::adapt views.
// CUDA storage is device memory from the caching allocator (headgrad/core/cuda.hpp); its
// data() is a device pointer that only kernels may dereference.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include "headgrad/core/device.hpp"

namespace headgrad {

class Storage {
 public:
  // Uninitialized storage of `nbytes` on `device`. (Debug and AddressSanitizer builds fill
  // it with 0xFF bytes, NaN as floats, so that reading unwritten memory shows in tests.)
  Storage(std::size_t nbytes, Device device);
  // CPU memory owned by someone else (a NumPy array, a memory map): `data` is used as is
  // (any alignment), and `release` runs when the last tensor using it is gone, where the
  // owner lets it go. What from_blob (core/tensor.hpp) builds tensors over.
  Storage(void* data, std::size_t nbytes, std::function<void()> release);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() { return data_; }
  const void* data() const { return data_; }
  std::size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }

  // Bumped by every in-place write; autograd uses it to detect that a value saved for
  // backward was overwritten.
  std::uint64_t version() const { return version_; }
  void bump_version() { ++version_; }

 private:
  void* data_ = nullptr;
  std::size_t nbytes_ = 0;
  std::size_t capacity_ = 0;  // bytes of the block actually held (nbytes rounded up)
  Device device_;
  std::uint64_t version_ = 0;
  std::function<void()> release_;  // borrowed memory: its owner's release, else empty
};

// The CPU block cache. A training step allocates the same buffer sizes every step; a
// freed block of at least 64 KiB is kept, keyed by its size rounded up (by at most 1/8),
// and handed to the next allocation of that size, instead of returning it to the OS and
// taking fresh zeroed pages (page faults) next time. Blocks of at most 4 KiB are kept per
// thread instead (eight of each size, without a lock; a thread's are freed when it exits,
// and empty_cpu_cache frees the calling thread's): a small op's result is freed and
// allocated again at once. The shared cache never holds more than its limit; a block
// freed beyond it goes back to the OS. Thread-safe. Disabled in AddressSanitizer builds,
// so that use-after-free of a tensor's memory stays detectable.
struct CpuCacheStats {
  std::size_t cached_bytes = 0;  // free blocks held now
  std::size_t limit_bytes = 0;
  std::uint64_t hits = 0;    // allocations served from the cache
  std::uint64_t misses = 0;  // cacheable allocations that had to allocate
};
CpuCacheStats cpu_cache_stats();
// Default 1 GiB; 0 disables caching (and empties the cache).
void set_cpu_cache_limit(std::size_t bytes);
// Returns every cached block to the OS (as torch.cuda.empty_cache does for the GPU).
void empty_cpu_cache();

// Allocation limits. Every new tensor's size is checked before anything is allocated: a
// shape whose bytes overflow is a ShapeError, and a CPU tensor larger than
// max_tensor_bytes(), or (from 64 MiB up) larger than the memory the system has available
// now, is a MemoryError naming the shape, not a crash or a kill by the OOM killer later.
// The limit defaults to the machine's physical memory; set_max_tensor_bytes(0) restores
// that default.
void set_max_tensor_bytes(std::size_t bytes);
std::size_t max_tensor_bytes();
// Memory this process could still take, in bytes: MemAvailable plus free swap from
// /proc/meminfo, capped by the cgroup's memory.max less memory.current where one is set,
// plus the blocks the CPU cache holds. std::nullopt where /proc/meminfo cannot be read.
std::optional<std::size_t> available_cpu_memory();

}  // namespace headgrad
