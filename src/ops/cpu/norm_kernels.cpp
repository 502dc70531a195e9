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

// Group g runs layer_norm's row kernels on its slices: bitwise layer_norm of each group.
void CpuKernels::grouped_layer_norm_forward(const Tensor& x, const Tensor& weight,
                                            const Tensor& bias, std::int64_t groups,
                                            std::int64_t rows, std::int64_t cols, double eps,
                                            Tensor& out, Tensor& mean, Tensor& rstd) {
  dispatch_floating(x.dtype(), "grouped_layer_norm", [&]<typename T>() {
    for (std::int64_t g = 0; g < groups; ++g)
      cpu::layer_norm_forward<T>(ptr<T>(x) + g * rows * cols, ptr<T>(weight) + g * cols,
                                 bias.defined() ? ptr<T>(bias) + g * cols : nullptr,
                                 ptr<T>(out) + g * rows * cols, ptr<T>(mean) + g * rows,
                                 ptr<T>(rstd) + g * rows, rows, cols, static_cast<T>(eps));
  });
}

void CpuKernels::grouped_layer_norm_backward(const Tensor& g, const Tensor& x, const Tensor& weight,
                                             const Tensor& mean, const Tensor& rstd,
                                             std::int64_t groups, std::int64_t rows,
                                             std::int64_t cols, Tensor& dx, Tensor& dweight,
                                             Tensor& dbias) {
  dispatch_floating(x.dtype(), "grouped_layer_norm", [&]<typename T>() {
    auto at = [](Tensor& t, std::int64_t offset) -> T* {
      return t.defined() ? ptr<T>(t) + offset : nullptr;
    };
    for (Tensor* t : {&dweight, &dbias})
      if (t->defined()) std::fill(ptr<T>(*t), ptr<T>(*t) + t->numel(), T(0));
    for (std::int64_t k = 0; k < groups; ++k)
      cpu::layer_norm_backward<T>(ptr<T>(x) + k * rows * cols, ptr<T>(weight) + k * cols,
                                  ptr<T>(mean) + k * rows, ptr<T>(rstd) + k * rows,
                                  ptr<T>(g) + k * rows * cols, at(dx, k * rows * cols),
                                  at(dweight, k * cols), at(dbias, k * cols), rows, cols);
  });
}

}  // namespace headgrad::cpu
