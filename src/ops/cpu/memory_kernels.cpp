// The CPU's memory-level kernels (Kernels::fill, convert): element loops over contiguous
// tensors of any dtype.
#include "core/dispatch.hpp"
#include "ops/cpu/cpu_kernels.hpp"

namespace headgrad::cpu {

using headgrad::detail::dispatch_all;
using headgrad::detail::ptr;

void CpuKernels::fill(Tensor& out, double value) {
  const std::int64_t n = out.numel();
  dispatch_all(out.dtype(), [&]<typename T>() {
    T* p = ptr<T>(out);
    const T v = static_cast<T>(value);
    for (std::int64_t i = 0; i < n; ++i) p[i] = v;
  });
}

void CpuKernels::convert(const Tensor& src, Tensor& dst) {
  const std::int64_t n = src.numel();
  dispatch_all(src.dtype(), [&]<typename S>() {
    dispatch_all(dst.dtype(), [&]<typename D>() {
      const S* from = ptr<S>(src);
      D* to = ptr<D>(dst);
      for (std::int64_t i = 0; i < n; ++i) to[i] = static_cast<D>(from[i]);
    });
  });
}

}  // namespace headgrad::cpu
