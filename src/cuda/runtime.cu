// The CUDA runtime behind headgrad's GPU tensors: devices, the one stream per device, the
// caching allocator and copies (cuda::Backend's device and memory members), and the two C
// entry points through which libheadgrad loads this library.
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <map>
#include <mutex>
#include <vector>

#include "cuda/backend.hpp"
#include "cuda/common.cuh"
#include "headgrad/core/cuda.hpp"

namespace headgrad {
namespace cuda {

namespace {

constexpr int kMaxDevices = 64;

// Blocks of at least 1 MiB are rounded to a multiple of 1/8 of their power of two (at most
// 12.5% waste); smaller ones to 512 bytes, the alignment cudaMalloc gives anyway.
std::size_t block_size(std::size_t n) {
  if (n == 0) n = 1;
  if (n < (std::size_t{1} << 20)) return (n + 511) / 512 * 512;
  std::size_t p = 1;
  while (p * 2 <= n) p *= 2;
  const std::size_t step = p / 8;
  return (n + step - 1) / step * step;
}

// One device's allocator. All work runs on the device's one stream, so a block freed by a
// tensor can be handed out again immediately: every kernel that used it was queued before
// any kernel of the next owner.
struct DeviceAllocator {
  std::multimap<std::size_t, void*> free_blocks;  // by block size
  std::map<void*, std::size_t> live;              // pointer -> block size
  CudaMemoryStats stats;

  void release_cached() {
    for (auto& [size, p] : free_blocks) {
      cudaFree(p);
      stats.reserved_bytes -= size;
    }
    free_blocks.clear();
  }
};

struct Runtime {
  std::mutex mutex;
  std::array<DeviceAllocator, kMaxDevices> allocators;
  std::array<cudaStream_t, kMaxDevices> streams{};
};

// Never destroyed: tensors freed during static destruction still return their memory here.
Runtime& runtime() {
  static Runtime* r = new Runtime;
  return *r;
}

}  // namespace

void check(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return;
  cudaGetLastError();
  throw DeviceError(std::string(what) + ": CUDA error " + cudaGetErrorName(status) + " (" +
                    cudaGetErrorString(status) + ")");
}

cudaStream_t stream(int index) {
  Runtime& r = runtime();
  check(cudaSetDevice(index), "cudaSetDevice");
  std::lock_guard lock(r.mutex);
  if (r.streams[index] == nullptr) {
    check(cudaStreamCreateWithFlags(&r.streams[index], cudaStreamNonBlocking), "cudaStreamCreate");
  }
  return r.streams[index];
}

void* CudaBackend::allocate(std::size_t nbytes, int index) {
  check_device(index, "allocate");
  const std::size_t size = block_size(nbytes);
  Runtime& r = runtime();
  std::lock_guard lock(r.mutex);
  DeviceAllocator& a = r.allocators[index];
  void* p = nullptr;
  auto it = a.free_blocks.find(size);
  if (it != a.free_blocks.end()) {
    p = it->second;
    a.free_blocks.erase(it);
  } else {
    check(cudaSetDevice(index), "cudaSetDevice");
    cudaError_t status = cudaMalloc(&p, size);
    if (status == cudaErrorMemoryAllocation) {  // retry once without the cached blocks
      cudaGetLastError();
      a.release_cached();
      status = cudaMalloc(&p, size);
    }
    if (status != cudaSuccess) {
      cudaGetLastError();
      throw DeviceError("allocate: out of memory on cuda:" + std::to_string(index) +
                        " asking for " + std::to_string(size) + " bytes (" +
                        std::to_string(a.stats.allocated_bytes) + " allocated, " +
                        std::to_string(a.stats.reserved_bytes) +
                        " reserved): " + cudaGetErrorString(status));
    }
    ++a.stats.cuda_malloc_calls;
    a.stats.reserved_bytes += size;
  }
  a.live.emplace(p, size);
  a.stats.allocated_bytes += size;
  a.stats.peak_allocated_bytes = std::max(a.stats.peak_allocated_bytes, a.stats.allocated_bytes);
  return p;
}

void CudaBackend::deallocate(void* ptr, int index) {
  if (ptr == nullptr) return;
  Runtime& r = runtime();
  std::lock_guard lock(r.mutex);
  DeviceAllocator& a = r.allocators[index];
  auto it = a.live.find(ptr);
  if (it == a.live.end()) return;  // not ours; never happens
  a.stats.allocated_bytes -= it->second;
  a.free_blocks.emplace(it->second, ptr);
  a.live.erase(it);
}

void CudaBackend::copy_host_to_device(void* dst, const void* src, std::size_t nbytes, int index) {
  if (nbytes == 0) return;
  // Synchronous with respect to the host buffer: the caller may free it right after.
  cudaStream_t s = stream(index);
  check(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyHostToDevice, s), "copy to cuda");
  check(cudaStreamSynchronize(s), "copy to cuda");
}

void CudaBackend::copy_device_to_host(void* dst, const void* src, std::size_t nbytes, int index) {
  if (nbytes == 0) return;
  cudaStream_t s = stream(index);
  check(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToHost, s), "copy to cpu");
  check(cudaStreamSynchronize(s), "copy to cpu");
}

void CudaBackend::copy_device_to_device(void* dst, int dst_index, const void* src, int src_index,
                                        std::size_t nbytes) {
  if (nbytes == 0) return;
  if (dst_index == src_index) {
    check(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToDevice, stream(dst_index)),
          "copy on cuda");
    return;
  }
  // Between GPUs: finish the source's work, copy, and let the destination's stream wait.
  check(cudaStreamSynchronize(stream(src_index)), "copy between GPUs");
  cudaStream_t s = stream(dst_index);
  check(cudaMemcpyPeerAsync(dst, dst_index, src, src_index, nbytes, s), "copy between GPUs");
  check(cudaStreamSynchronize(s), "copy between GPUs");
}

void CudaBackend::memset_device(void* dst, int byte, std::size_t nbytes, int index) {
  if (nbytes == 0) return;
  check(cudaMemsetAsync(dst, byte, nbytes, stream(index)), "memset on cuda");
}

// --- devices ----------------------------------------------------------------------------

int CudaBackend::device_count(std::string* why) {
  int n = 0;
  const cudaError_t status = cudaGetDeviceCount(&n);
  if (status != cudaSuccess) {
    cudaGetLastError();  // no driver or no GPU: clear the sticky error, report none
    if (why != nullptr)
      *why = std::string(
                 "no usable GPU: no CUDA driver, or one older than the CUDA runtime, or no device "
                 "(cudaGetDeviceCount: ") +
             cudaGetErrorName(status) + ", " + cudaGetErrorString(status) + ")";
    return 0;
  }
  if (n > kMaxDevices) n = kMaxDevices;
  return n;
}

std::string CudaBackend::device_name(int index) {
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, index), "cuda_device_name");
  return prop.name;
}

void CudaBackend::synchronize(int index) {
  check(cudaStreamSynchronize(stream(index)), "cuda_synchronize");
}

CudaMemoryStats CudaBackend::memory_stats(int index) {
  std::lock_guard lock(runtime().mutex);
  return runtime().allocators[index].stats;
}

void CudaBackend::reset_peak_memory(int index) {
  std::lock_guard lock(runtime().mutex);
  auto& stats = runtime().allocators[index].stats;
  stats.peak_allocated_bytes = stats.allocated_bytes;
}

void CudaBackend::empty_cache() {
  const int n = cuda_device_count();
  Runtime& r = runtime();
  for (int i = 0; i < n && i < kMaxDevices; ++i) {
    // Blocks still used by queued kernels must not be freed under them.
    check(cudaStreamSynchronize(stream(i)), "empty_cuda_cache");
    std::lock_guard lock(r.mutex);
    r.allocators[i].release_cached();
  }
}

}  // namespace cuda
}  // namespace headgrad

// --- the entry points libheadgrad looks up (src/core/cuda.cpp) --------------------------

extern "C" __attribute__((visibility("default"))) int headgrad_cuda_backend_abi() {
  return headgrad::cuda::kBackendAbiVersion;
}

extern "C" __attribute__((visibility("default"))) headgrad::cuda::Backend* headgrad_cuda_backend() {
  static headgrad::cuda::CudaBackend* backend = new headgrad::cuda::CudaBackend;  // never freed
  return backend;
}
