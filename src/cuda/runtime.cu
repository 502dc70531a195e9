// The CUDA runtime behind headgrad's GPU tensors: devices, the one stream per device, the
// caching allocator, copies, and the public functions of headgrad/core/cuda.hpp.
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <map>
#include <mutex>
#include <vector>

#include "cuda/common.cuh"
#include "cuda/runtime.hpp"
#include "headgrad/core/cuda.hpp"
#include "ops/cuda/kernels.hpp"

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
  bool allow_tf32 = false;
};

// Never destroyed: tensors freed during static destruction still return their memory here.
Runtime& runtime() {
  static Runtime* r = new Runtime;
  return *r;
}

int count_devices() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // no driver or no GPU: clear the sticky error, report none
    return 0;
  }
  return n;
}

}  // namespace

void check(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return;
  cudaGetLastError();
  throw DeviceError(std::string(what) + ": CUDA error " + cudaGetErrorName(status) + " (" +
                    cudaGetErrorString(status) + ")");
}

void throw_not_built() {
  throw DeviceError("internal error: a CUDA kernel without its CUDA build");
}

void check_device(int index, const char* op) {
  const int n = cuda_device_count();
  if (index < 0 || index >= n || index >= kMaxDevices) {
    throw DeviceError(std::string(op) + ": device cuda:" + std::to_string(index) +
                      " is not available (" +
                      (n == 0 ? std::string("this machine has no usable GPU")
                              : std::to_string(n) + " GPU(s) found") +
                      ")");
  }
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

void* allocate(std::size_t nbytes, int index) {
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

void deallocate(void* ptr, int index) {
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

void copy_host_to_device(void* dst, const void* src, std::size_t nbytes, int index) {
  if (nbytes == 0) return;
  // Synchronous with respect to the host buffer: the caller may free it right after.
  cudaStream_t s = stream(index);
  check(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyHostToDevice, s), "copy to cuda");
  check(cudaStreamSynchronize(s), "copy to cuda");
}

void copy_device_to_host(void* dst, const void* src, std::size_t nbytes, int index) {
  if (nbytes == 0) return;
  cudaStream_t s = stream(index);
  check(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToHost, s), "copy to cpu");
  check(cudaStreamSynchronize(s), "copy to cpu");
}

void copy_device_to_device(void* dst, int dst_index, const void* src, int src_index,
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

void memset_device(void* dst, int byte, std::size_t nbytes, int index) {
  if (nbytes == 0) return;
  check(cudaMemsetAsync(dst, byte, nbytes, stream(index)), "memset on cuda");
}

StridedIndex strided_index(const Shape& sizes, const Shape& strides) {
  if (sizes.size() > static_cast<std::size_t>(kMaxDims))
    throw ShapeError("cuda: tensors of rank " + std::to_string(sizes.size()) +
                     " are not supported (at most " + std::to_string(kMaxDims) + ")");
  StridedIndex s;
  s.rank = static_cast<int>(sizes.size());
  for (std::size_t d = 0; d < sizes.size(); ++d) {
    s.sizes[d] = sizes[d];
    s.strides[d] = strides[d];
  }
  return s;
}

StridedIndex broadcast_index(const Shape& in, const Shape& out) {
  Shape strides(out.size(), 0);
  const Shape in_strides = contiguous_strides(in);
  const std::size_t lead = out.size() - in.size();
  for (std::size_t i = 0; i < in.size(); ++i) strides[lead + i] = in[i] == 1 ? 0 : in_strides[i];
  return strided_index(out, strides);
}

}  // namespace cuda

// --- public API (headgrad/core/cuda.hpp) ----------------------------------------------

bool cuda_built() { return true; }

int cuda_device_count() {
  static const int n = cuda::count_devices();
  return n;
}

bool cuda_is_available() { return cuda_device_count() > 0; }

std::string cuda_device_name(int index) {
  cuda::check_device(index, "cuda_device_name");
  cudaDeviceProp prop{};
  cuda::check(cudaGetDeviceProperties(&prop, index), "cuda_device_name");
  return prop.name;
}

void cuda_synchronize(int index) {
  cuda::check_device(index, "cuda_synchronize");
  cuda::check(cudaStreamSynchronize(cuda::stream(index)), "cuda_synchronize");
}

void set_cuda_allow_tf32(bool allow) {
  std::lock_guard lock(cuda::runtime().mutex);
  cuda::runtime().allow_tf32 = allow;
}

bool cuda_allow_tf32() {
  std::lock_guard lock(cuda::runtime().mutex);
  return cuda::runtime().allow_tf32;
}

CudaMemoryStats cuda_memory_stats(int index) {
  if (index < 0 || index >= cuda_device_count()) return {};
  std::lock_guard lock(cuda::runtime().mutex);
  return cuda::runtime().allocators[index].stats;
}

void reset_cuda_peak_memory(int index) {
  if (index < 0 || index >= cuda_device_count()) return;
  std::lock_guard lock(cuda::runtime().mutex);
  auto& stats = cuda::runtime().allocators[index].stats;
  stats.peak_allocated_bytes = stats.allocated_bytes;
}

void empty_cuda_cache() {
  const int n = cuda_device_count();
  cuda::Runtime& r = cuda::runtime();
  for (int i = 0; i < n && i < cuda::kMaxDevices; ++i) {
    // Blocks still used by queued kernels must not be freed under them.
    cuda::check(cudaStreamSynchronize(cuda::stream(i)), "empty_cuda_cache");
    std::lock_guard lock(r.mutex);
    r.allocators[i].release_cached();
  }
}

}  // namespace headgrad
