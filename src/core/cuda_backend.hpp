// The CUDA backend's interface: everything the library asks of a GPU, as one abstract class. The
// implementation is a separate shared library, libheadgrad_cuda (src/cuda), loaded with dlopen the
// first time a CUDA device is asked for, as PyTorch initialises CUDA lazily: libheadgrad itself and
// every CPU program have no link-time dependency on the CUDA runtime or cuBLAS, and without the
// backend library (or without a driver) cuda_is_available() is false and
// cuda_unavailable_reason() says what is missing.
//
// The kernels behind the ops are the Kernels interface (core/kernels.hpp), which Backend
// implements as the CPU does (CpuKernels); Backend adds what only a GPU has: devices,
// memory, copies between host and device, and the optimizers' fused updates (src/optim).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/kernels.hpp"
#include "headgrad/core/cuda.hpp"
#include "headgrad/core/tensor.hpp"

namespace headgrad::cuda {

// Bumped whenever Backend, Kernels or their types change: the loader refuses a backend library
// built against another version.
inline constexpr int kBackendAbiVersion = 3;
// The backend library's file name and its two exported C entry points:
//   int headgrad_cuda_backend_abi();           returns kBackendAbiVersion
//   headgrad::cuda::Backend* headgrad_cuda_backend();   the one instance, never freed
inline constexpr const char* kBackendLibrary = "libheadgrad_cuda.so";
inline constexpr const char* kBackendAbiSymbol = "headgrad_cuda_backend_abi";
inline constexpr const char* kBackendSymbol = "headgrad_cuda_backend";

// The kernel types, under the names the backend's sources use.
using headgrad::Binary;
using headgrad::Gemm;
using headgrad::Reduce;
using headgrad::Unary;

struct AdamHyper {
  double lr, beta1, beta2, eps, weight_decay;
  bool amsgrad, decoupled;  // decoupled: AdamW's p *= 1 - lr*wd; else L2: g += wd*p
  std::int64_t step;        // 1 on the first update
};

struct SgdHyper {
  double lr, momentum, dampening, weight_decay;
  bool nesterov;
  bool first_step;  // the momentum buffer starts as a copy of the gradient
};

class Backend : public Kernels {
 public:
  // --- devices ---------------------------------------------------------------------------
  // Usable GPUs; 0 without a driver or a GPU, and then `why` (when given) says which.
  virtual int device_count(std::string* why) = 0;
  // The GPU's name, e.g. "NVIDIA H100 80GB HBM3" (`index` has been checked).
  virtual std::string device_name(int index) = 0;
  // Waits until every kernel queued on the device has finished.
  virtual void synchronize(int index) = 0;
  virtual CudaMemoryStats memory_stats(int index) = 0;
  virtual void reset_peak_memory(int index) = 0;
  // Returns every cached (free) block of every device to the driver.
  virtual void empty_cache() = 0;

  // --- memory ----------------------------------------------------------------------------
  // Device memory of at least `nbytes` on GPU `index` from the caching allocator (never
  // managed memory). Throws DeviceError (with the sizes) when the GPU is out of memory.
  virtual void* allocate(std::size_t nbytes, int index) = 0;
  virtual void deallocate(void* ptr, int index) = 0;
  // Copies of `nbytes`, queued on the device's stream. copy_device_to_host waits for the
  // copy (and everything queued before it), copy_host_to_device for the copy; the others
  // return at once.
  virtual void copy_host_to_device(void* dst, const void* src, std::size_t nbytes, int index) = 0;
  virtual void copy_device_to_host(void* dst, const void* src, std::size_t nbytes, int index) = 0;
  virtual void copy_device_to_device(void* dst, int dst_index, const void* src, int src_index,
                                     std::size_t nbytes) = 0;
  virtual void memset_device(void* dst, int byte, std::size_t nbytes, int index) = 0;

  // --- the GPU's building blocks, which its kernels share ----------------------------------
  // A strided copy of any rank <= 8, same dtype: for every index i of `sizes`,
  //   dst[dst_offset + sum_d i_d * dst_strides[d]] = src[src_offset + sum_d i_d * src_strides[d]]
  // (offsets and strides in elements, relative to each tensor's first element). Strides of 0
  // broadcast (expand); permute, narrow, slice, select, concat and their backwards are all
  // this one kernel.
  virtual void copy_strided(const Tensor& src, std::int64_t src_offset, const Shape& src_strides,
                            Tensor& dst, std::int64_t dst_offset, const Shape& dst_strides,
                            const Shape& sizes) = 0;

  // C[b] = alpha * op(A[b]) * op(B[b]) + beta * C[b], row-major (see Gemm): cuBLAS, behind
  // the matrix-product kernels.
  virtual void gemm(const Gemm& g, const Tensor& a, const Tensor& b, Tensor& c) = 0;

  // --- optimizers (in place on the parameter and its state) -------------------------------
  // The CPU's update (optim/adam.cpp), elementwise; max_exp_avg_sq is undefined unless amsgrad.
  virtual void adam_update(Tensor& param, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq,
                           Tensor& max_exp_avg_sq, const AdamHyper& h) = 0;
  // The CPU's update (optim/sgd.cpp); `momentum_buffer` is undefined when momentum is 0.
  virtual void sgd_update(Tensor& param, const Tensor& grad, Tensor& momentum_buffer,
                          const SgdHyper& h) = 0;
};

// The backend, loaded on first use (thread-safe). Throws DeviceError naming `op` and what is
// missing (the library, a library it needs, or the driver) when no GPU can be used.
Backend& backend(const char* op = "cuda");
// The loaded backend, or nullptr (with the reason in `why`, when given) where the library
// cannot be loaded. Never throws.
Backend* try_backend(std::string* why = nullptr);

// Throws DeviceError naming `op` unless `index` is a GPU of this machine; the message says
// what is missing when there is none.
void check_device(int index, const char* op);

}  // namespace headgrad::cuda
