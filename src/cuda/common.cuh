// What every .cu file of the CUDA backend shares: the device's stream, error checks that
// throw the project's DeviceError, raw pointers and launch sizes.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "headgrad/core/error.hpp"
#include "headgrad/core/shape.hpp"
#include "headgrad/core/tensor.hpp"

namespace headgrad::cuda {

// The stream all of headgrad's work on GPU `index` is queued on (created on first use).
// Makes `index` the current device.
cudaStream_t stream(int index);
// The stream of the tensor's GPU, made current.
inline cudaStream_t stream_of(const Tensor& t) { return stream(t.device().index()); }

// Throws DeviceError "<what>: <CUDA's message>" unless status is cudaSuccess.
void check(cudaError_t status, const char* what);
// Checks that the last kernel launch was accepted (a bad configuration shows here).
inline void check_launch(const char* what) { check(cudaGetLastError(), what); }

// Raw typed pointers to a tensor's first element (device memory).
template <typename T>
T* dptr(Tensor& t) {
  return static_cast<T*>(t.impl()->data());
}
template <typename T>
const T* dptr(const Tensor& t) {
  return static_cast<const T*>(t.impl()->data());
}

constexpr int kThreads = 256;
// Blocks for a grid-stride loop over n elements (at most 65535 * 8 blocks; the loop
// covers the rest).
inline unsigned blocks_for(std::int64_t n, int threads = kThreads) {
  const std::int64_t b = (n + threads - 1) / threads;
  return static_cast<unsigned>(b < 1 ? 1 : (b > 524280 ? 524280 : b));
}

// Tensors of rank above this are refused by the strided kernels (copy_strided and the
// broadcast path of the elementwise launcher).
constexpr int kMaxDims = 8;

}  // namespace headgrad::cuda
