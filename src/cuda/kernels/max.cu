// max over one dim on the GPU (Kernels::max_dim, max_dim_backward): the values are amax's
// and the indices argmax's (the same element, reduce.cu); the backward writes each
// gradient at its argmax into a zeroed dx, one thread per (outer, inner) position.
#include "core/broadcast.hpp"
#include "cuda/backend.hpp"
#include "cuda/common.cuh"
#include "cuda/kernels/kernel_util.cuh"

namespace headgrad::cuda {

using headgrad::detail::around_dim;
using headgrad::detail::AroundDim;

namespace {

// dx[o, idx[o, j], j] = g[o, j] over the (outer, inner) positions p = o * inner + j.
template <typename T>
__global__ void max_scatter_kernel(const T* g, const std::int64_t* idx, T* dx, std::int64_t outer,
                                   std::int64_t n, std::int64_t inner) {
  const std::int64_t total = outer * inner;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t p = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; p < total;
       p += stride) {
    const std::int64_t o = p / inner, j = p % inner;
    dx[(o * n + idx[p]) * inner + j] = g[p];
  }
}

}  // namespace

void CudaBackend::max_dim(const Tensor& x, std::int64_t dim, Tensor& values, Tensor& indices) {
  Shape keep = x.shape();
  if (!keep.empty()) keep[static_cast<std::size_t>(dim)] = 1;
  reduce(Reduce::amax, x, keep, values);
  reduce(Reduce::argmax, x, keep, indices);
}

void CudaBackend::max_dim_backward(const Tensor& g, const Tensor& indices, std::int64_t dim,
                                   Tensor& dx) {
  fill(dx, 0.0);
  const AroundDim a = around_dim(dx.shape(), dim);
  if (a.outer * a.inner == 0) return;
  dispatch_floating(dx.dtype(), "max backward", [&]<typename T>() {
    max_scatter_kernel<T><<<blocks_for(a.outer * a.inner), kThreads, 0, stream_of(dx)>>>(
        dptr<T>(g), dptr<std::int64_t>(indices), dptr<T>(dx), a.outer, a.n, a.inner);
    check_launch("max backward");
  });
}

}  // namespace headgrad::cuda
