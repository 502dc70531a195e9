// The host side of the CUDA runtime that the rest of the library uses: device memory from
// the caching allocator and copies. Plain C++ (no CUDA headers), so CPU code can call it;
// in a build without CUDA every function throws DeviceError (src/cuda/disabled.cpp).
#pragma once

#include <cstddef>

namespace headgrad::cuda {

// Throws DeviceError naming `op` unless `index` is a GPU of this machine (the message says
// so when the build has no CUDA or the machine has no GPU).
void check_device(int index, const char* op);

// Device memory of at least `nbytes` on GPU `index` from the caching allocator (never
// managed memory). Throws DeviceError (with the sizes) when the GPU is out of memory.
void* allocate(std::size_t nbytes, int index);
void deallocate(void* ptr, int index);

// Copies of `nbytes`, queued on the device's stream. copy_to_host waits for the copy (and
// everything queued before it); the others return at once.
void copy_host_to_device(void* dst, const void* src, std::size_t nbytes, int index);
void copy_device_to_host(void* dst, const void* src, std::size_t nbytes, int index);
void copy_device_to_device(void* dst, int dst_index, const void* src, int src_index,
                           std::size_t nbytes);
void memset_device(void* dst, int byte, std::size_t nbytes, int index);

}  // namespace headgrad::cuda
