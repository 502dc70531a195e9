// GPTEnsemble's grouped layer norm on the GPU (Kernels::grouped_layer_norm_forward /
// backward): layer_norm's kernels (norm.cu) run once per group on that group's slices,
// as on the CPU, so group g's values are those of layer_norm on x[g], weight[g], bias[g].
#include "cuda/backend.hpp"

namespace headgrad::cuda {

namespace {

// Elements [offset, offset + numel(shape)) of t as a tensor of `shape`: t's storage, no copy.
Tensor part(const Tensor& t, std::int64_t offset, const Shape& shape) {
  if (!t.defined()) return t;
  Tensor p = t.detach();
  p.impl()->offset += offset;
  p.impl()->shape = shape;
  return p;
}

}  // namespace

void CudaBackend::grouped_layer_norm_forward(const Tensor& x, const Tensor& weight,
                                             const Tensor& bias, std::int64_t groups,
                                             std::int64_t rows, std::int64_t cols, double eps,
                                             Tensor& out, Tensor& mean, Tensor& rstd) {
  for (std::int64_t g = 0; g < groups; ++g) {
    Tensor out_g = part(out, g * rows * cols, {rows, cols});
    Tensor mean_g = part(mean, g * rows, {rows});
    Tensor rstd_g = part(rstd, g * rows, {rows});
    layer_norm_forward(part(x, g * rows * cols, {rows, cols}), part(weight, g * cols, {cols}),
                       part(bias, g * cols, {cols}), rows, cols, eps, out_g, mean_g, rstd_g);
  }
}

void CudaBackend::grouped_layer_norm_backward(const Tensor& g, const Tensor& x,
                                              const Tensor& weight, const Tensor& mean,
                                              const Tensor& rstd, std::int64_t groups,
                                              std::int64_t rows, std::int64_t cols, Tensor& dx,
                                              Tensor& dweight, Tensor& dbias) {
  for (std::int64_t k = 0; k < groups; ++k) {
    Tensor dx_k = part(dx, k * rows * cols, {rows, cols});
    Tensor dw_k = part(dweight, k * cols, {cols});
    Tensor db_k = part(dbias, k * cols, {cols});
    layer_norm_backward(part(g, k * rows * cols, {rows, cols}),
                        part(x, k * rows * cols, {rows, cols}), part(weight, k * cols, {cols}),
                        part(mean, k * rows, {rows}), part(rstd, k * rows, {rows}), rows, cols,
                        dx_k, dw_k, db_k);
  }
}

}  // namespace headgrad::cuda
