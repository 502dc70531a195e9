// dropout's CPU kernels (Kernels::dropout_mask, dropout_apply): the keep-mask from the
// generator's sequential draws, one next_float() per element in row-major order, and the
// masked product.
#include "core/dispatch.hpp"
#include "ops/cpu/cpu_kernels.hpp"

namespace headgrad::cpu {

using headgrad::detail::dispatch_floating;
using headgrad::detail::ptr;

void CpuKernels::dropout_mask(Generator& generator, double p, Tensor& mask) {
  const std::int64_t n = mask.numel();
  dispatch_floating(mask.dtype(), "dropout", [&]<typename T>() {
    const T scale = p < 1.0 ? static_cast<T>(1.0 / (1.0 - p)) : T(0);
    T* m = ptr<T>(mask);
    for (std::int64_t i = 0; i < n; ++i)
      m[i] = static_cast<double>(generator.next_float()) < p ? T(0) : scale;
  });
}

void CpuKernels::dropout_apply(const Tensor& x, const Tensor& mask, Tensor& out) {
  const std::int64_t n = mask.numel();
  dispatch_floating(mask.dtype(), "dropout", [&]<typename T>() {
    const T* m = ptr<T>(mask);
    const T* xp = ptr<T>(x);
    T* y = ptr<T>(out);
    for (std::int64_t i = 0; i < n; ++i) y[i] = m[i] != T(0) ? xp[i] * m[i] : T(0);
  });
}

}  // namespace headgrad::cpu
