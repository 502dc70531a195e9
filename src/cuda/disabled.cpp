// The CUDA entry points of a build without CUDA (-DHEADGRAD_CUDA=OFF, or no nvcc found):
// no GPU is ever available, and anything that would need one throws DeviceError saying so.
#include <string>

#include "cuda/runtime.hpp"
#include "headgrad/core/cuda.hpp"
#include "headgrad/core/error.hpp"
#include "ops/cuda/kernels.hpp"

namespace headgrad {
namespace cuda {

namespace {
[[noreturn]] void not_built(const char* op) {
  throw DeviceError(std::string(op) +
                    ": headgrad was built without CUDA (configure with -DHEADGRAD_CUDA=ON on a "
                    "machine with nvcc)");
}
}  // namespace

void throw_not_built() { not_built("cuda kernel"); }

void check_device(int index, const char* op) {
  throw DeviceError(std::string(op) + ": device cuda:" + std::to_string(index) +
                    " is not available (headgrad was built without CUDA; configure with "
                    "-DHEADGRAD_CUDA=ON on a machine with nvcc)");
}
void* allocate(std::size_t, int index) {
  check_device(index, "allocate");
  return nullptr;
}
void deallocate(void*, int) {}
void copy_host_to_device(void*, const void*, std::size_t, int) { not_built("copy to cuda"); }
void copy_device_to_host(void*, const void*, std::size_t, int) { not_built("copy to cpu"); }
void copy_device_to_device(void*, int, const void*, int, std::size_t) { not_built("copy on cuda"); }
void memset_device(void*, int, std::size_t, int) { not_built("memset on cuda"); }

}  // namespace cuda

bool cuda_built() { return false; }
int cuda_device_count() { return 0; }
bool cuda_is_available() { return false; }
std::string cuda_device_name(int index) {
  cuda::check_device(index, "cuda_device_name");
  return {};
}
void cuda_synchronize(int index) { cuda::check_device(index, "cuda_synchronize"); }
void set_cuda_allow_tf32(bool) {}
bool cuda_allow_tf32() { return false; }
CudaMemoryStats cuda_memory_stats(int) { return {}; }
void reset_cuda_peak_memory(int) {}
void empty_cuda_cache() {}

}  // namespace headgrad
