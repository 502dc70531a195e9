// layer_norm's CPU kernels (Kernels::layer_norm_forward / layer_norm_backward): the row
// kernels of layer_norm_rows.hpp on raw pointers.
#include <algorithm>

#include "core/dispatch.hpp"
#include "ops/cpu/cpu_kernels.hpp"
#include "ops/cpu/layer_norm_rows.hpp"

namespace headgrad::cpu {

using headgrad::detail::dispatch_floating;
using headgrad::detail::ptr;

void CpuKernels::layer_norm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias,
                                    std::int64_t rows, std::int64_t cols, double eps, Tensor& out,
                                    Tensor& mean, Tensor& rstd) {
  dispatch_floating(x.dtype(), "layer_norm", [&]<typename T>() {
    cpu::layer_norm_forward<T>(ptr<T>(x), weight.defined() ? ptr<T>(weight) : nullptr,
                               bias.defined() ? ptr<T>(bias) : nullptr, ptr<T>(out), ptr<T>(mean),
                               ptr<T>(rstd), rows, cols, static_cast<T>(eps));
  });
}

// dweight and dbias are accumulated over the rows, so they start from zeros.
void CpuKernels::layer_norm_backward(const Tensor& g, const Tensor& x, const Tensor& weight,
                                     const Tensor& mean, const Tensor& rstd, std::int64_t rows,
                                     std::int64_t cols, Tensor& dx, Tensor& dweight,
                                     Tensor& dbias) {
  dispatch_floating(x.dtype(), "layer_norm", [&]<typename T>() {
    auto zeroed = [](Tensor& t) -> T* {
      if (!t.defined()) return nullptr;
      std::fill(ptr<T>(t), ptr<T>(t) + t.numel(), T(0));
      return ptr<T>(t);
    };
    T* dw = zeroed(dweight);
    T* db = zeroed(dbias);
    cpu::layer_norm_backward<T>(ptr<T>(x), weight.defined() ? ptr<T>(weight) : nullptr,
                                ptr<T>(mean), ptr<T>(rstd), ptr<T>(g),
                                dx.defined() ? ptr<T>(dx) : nullptr, dw, db, rows, cols);
  });
}

}  // namespace headgrad::cpu
