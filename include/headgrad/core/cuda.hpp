// The CUDA device: whether the backend is there, how many GPUs there are, and the state a
// user may tune (the caching allocator, TF32, synchronization). Tensors reach a GPU with
// Device::cuda(i): `x.to(Device::cuda())`, or a factory's TensorOptions().device(...).
//
// The backend is a separate library, libheadgrad_cuda.so, loaded the first time any of
// these is called (src/core/cuda.cpp says where it is looked for); programs that never ask
// for a GPU never load it. Every function here is safe to call without the backend library,
// without a driver or without a GPU: cuda_is_available() is then false, cuda_device_count()
// is 0 and cuda_unavailable_reason() says which is missing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace headgrad {

// True when the CUDA backend library loads (headgrad was built with nvcc present, and the
// CUDA libraries it needs are installed); says nothing about a driver or a GPU.
bool cuda_built();
// Number of usable GPUs (0 without a driver or a GPU, or in a build without CUDA).
int cuda_device_count();
bool cuda_is_available();
// Why no GPU can be used ("" when one can): the backend library, a library it needs (e.g.
// libcublas.so.13) or the driver is missing, or the machine has no GPU.
std::string cuda_unavailable_reason();
// The GPU's name, e.g. "NVIDIA H100 80GB HBM3"; throws DeviceError when there is none.
std::string cuda_device_name(int index = 0);

// Waits until every kernel queued on the device has finished. headgrad queues all work on
// one stream per device, so results are reproducible run to run; copies to the CPU
// synchronize by themselves. Call this before reading a timer.
void cuda_synchronize(int index = 0);

// TF32 tensor cores for float32 matmuls (cuBLAS). Off by default, so float32 matmuls
// round as the CPU's do; like torch.backends.cuda.matmul.allow_tf32.
void set_cuda_allow_tf32(bool allow);
bool cuda_allow_tf32();

// The caching allocator: device memory freed by a tensor is kept, keyed by its rounded
// size, and handed to the next allocation of that size on the same device (one stream,
// so it may be reused at once). Like torch.cuda.memory_allocated / memory_reserved.
struct CudaMemoryStats {
  std::size_t allocated_bytes = 0;       // held by live tensors
  std::size_t reserved_bytes = 0;        // allocated + cached
  std::size_t peak_allocated_bytes = 0;  // since the last reset
  std::uint64_t cuda_malloc_calls = 0;
};
CudaMemoryStats cuda_memory_stats(int index = 0);
void reset_cuda_peak_memory(int index = 0);
// Returns every cached (free) block to the driver.
void empty_cuda_cache();

}  // namespace headgrad
