// layer_norm, forward and backward side by side.
//
// x is viewed as (rows, D) with D = numel(normalized_shape); every row is normalized on
// its own with raw-pointer loops (xsimd for the reductions, plain loops the compiler
// vectorizes for the rest). mean and rstd per row are saved for backward.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/cuda_backend.hpp"
#include "core/dispatch.hpp"
#include "core/parallel.hpp"
#include "headgrad/autograd/function.hpp"
#include "headgrad/ops/elementwise.hpp"
#include "headgrad/ops/norm.hpp"
#include "headgrad/ops/shape_ops.hpp"
#include "ops/cpu/simd.hpp"

namespace headgrad {

namespace {

constexpr const char* kOp = "layer_norm";

void check_layer_norm_args(const Tensor& x, const Shape& normalized_shape, const Tensor& weight,
                           const Tensor& bias, double eps) {
  detail::check_float_op(kOp, x);
  if (normalized_shape.empty())
    throw ShapeError(std::string(kOp) + ": normalized_shape must have at least one dim (got (), " +
                     "input " + detail::describe(x) + ")");
  const Shape& xs = x.shape();
  const bool trailing_match =
      xs.size() >= normalized_shape.size() &&
      std::equal(normalized_shape.begin(), normalized_shape.end(),
                 xs.end() - static_cast<std::ptrdiff_t>(normalized_shape.size()));
  if (!trailing_match)
    throw ShapeError(std::string(kOp) + ": input " + detail::describe(x) +
                     " does not end with normalized_shape " + shape_str(normalized_shape));
  for (const auto& [param, what] : {std::pair{&weight, "weight"}, std::pair{&bias, "bias"}}) {
    if (!param->defined()) continue;
    detail::check_float_op(kOp, x, *param);
    if (param->shape() != normalized_shape)
      throw ShapeError(std::string(kOp) + ": " + what + " " + detail::describe(*param) +
                       " must have normalized_shape " + shape_str(normalized_shape) + " (input " +
                       detail::describe(x) + ")");
  }
  if (!(eps >= 0))
    throw ValueError(std::string(kOp) + ": eps must be non-negative, got " + std::to_string(eps));
}

// ---------------------------------------------------------------------------------------
// layer_norm: x (rows, D), weight (D), bias (D) -> y (rows, D); saved mean, rstd (rows)
//   mean = sum(x)/D, var = sum((x-mean)^2)/D (biased), rstd = 1/sqrt(var + eps)
//   xhat = (x - mean) * rstd,  y = xhat * w + b
// backward, with g = dy * w:
//   dx = rstd * (g - mean(g) - xhat * mean(g * xhat))
//   dw = sum over rows of dy * xhat,   db = sum over rows of dy
// ---------------------------------------------------------------------------------------

// mean and rstd of one row. The variance takes a second pass over the (cached) row,
// centered on the mean, which stays accurate when |mean| >> std (E[x^2] - E[x]^2 does not).
template <typename T>
void row_moments(const T* x, std::int64_t d, T eps, T& mean, T& rstd) {
  using batch = xsimd::batch<T>;
  constexpr std::int64_t w = static_cast<std::int64_t>(batch::size);
  mean = cpu::simd_sum(x, d) / static_cast<T>(d);
  const batch m(mean);
  batch acc(T(0));
  std::int64_t i = 0;
  for (; i + w <= d; i += w) {
    const batch c = batch::load_unaligned(x + i) - m;
    acc = xsimd::fma(c, c, acc);
  }
  T sum_sq = xsimd::hadd(acc);
  for (; i < d; ++i) sum_sq += (x[i] - mean) * (x[i] - mean);
  rstd = T(1) / std::sqrt(sum_sq / static_cast<T>(d) + eps);
}

// Rows per chunk of the thread pool: at least ~16k elements, so small inputs stay on one
// thread. Rows are independent, and the column sums of the backward are split by column
// (each sum still runs over the rows in order): the same bits at every thread count.
std::int64_t row_grain(std::int64_t d) {
  return std::max<std::int64_t>(1, 16384 / std::max<std::int64_t>(d, 1));
}

// w and b may be null (no affine part).
template <typename T>
void layer_norm_forward(const T* x, const T* w, const T* b, T* y, T* mean, T* rstd,
                        std::int64_t rows, std::int64_t d, T eps) {
  detail::parallel_for(rows, row_grain(d), [&](std::int64_t first, std::int64_t last) {
    for (std::int64_t r = first; r < last; ++r) {
      const T* xr = x + r * d;
      T* yr = y + r * d;
      row_moments(xr, d, eps, mean[r], rstd[r]);
      const T mu = mean[r];
      const T rs = rstd[r];
      if (w && b) {
        for (std::int64_t i = 0; i < d; ++i) yr[i] = (xr[i] - mu) * rs * w[i] + b[i];
      } else if (w) {
        for (std::int64_t i = 0; i < d; ++i) yr[i] = (xr[i] - mu) * rs * w[i];
      } else {
        for (std::int64_t i = 0; i < d; ++i) yr[i] = (xr[i] - mu) * rs;
        if (b)
          for (std::int64_t i = 0; i < d; ++i) yr[i] += b[i];
      }
    }
  });
}

// One row of dx: dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * w.
template <typename T>
inline void layer_norm_backward_row(const T* xr, const T* w, T mu, T rs, const T* dyr, T* dxr,
                                    std::int64_t d) {
  using batch = xsimd::batch<T>;
  constexpr std::int64_t lanes = static_cast<std::int64_t>(batch::size);
  const T inv_d = T(1) / static_cast<T>(d);
  // sums of g = dy*w and of g*xhat over the row
  const batch mu_b(mu);
  const batch rs_b(rs);
  batch acc_g(T(0));
  batch acc_gx(T(0));
  std::int64_t i = 0;
  for (; i + lanes <= d; i += lanes) {
    const batch xhat = (batch::load_unaligned(xr + i) - mu_b) * rs_b;
    const batch g = batch::load_unaligned(dyr + i) * batch::load_unaligned(w + i);
    acc_g += g;
    acc_gx = xsimd::fma(g, xhat, acc_gx);
  }
  T sum_g = xsimd::hadd(acc_g);
  T sum_gx = xsimd::hadd(acc_gx);
  for (; i < d; ++i) {
    const T g = dyr[i] * w[i];
    sum_g += g;
    sum_gx += g * ((xr[i] - mu) * rs);
  }
  const T mean_g = sum_g * inv_d;
  const T mean_gx = sum_gx * inv_d;
  for (std::int64_t j = 0; j < d; ++j) {
    const T xhat = (xr[j] - mu) * rs;
    dxr[j] = rs * (dyr[j] * w[j] - mean_g - xhat * mean_gx);
  }
}

// dw[j] = sum_r dy[r, j] xhat[r, j], db[j] = sum_r dy[r, j] (either may be null; else
// zero-initialized, (D)): 16-column pieces per thread.
template <typename T>
void layer_norm_backward_params(const T* x, const T* mean, const T* rstd, const T* dy, T* dw, T* db,
                                std::int64_t rows, std::int64_t d) {
  constexpr std::int64_t piece = 16;
  const std::int64_t pieces = (d + piece - 1) / piece;
  const std::int64_t grain =
      std::max<std::int64_t>(1, 16384 / std::max<std::int64_t>(rows * piece, 1));
  detail::parallel_for(pieces, grain, [&](std::int64_t first, std::int64_t last) {
    const std::int64_t begin = first * piece, end = std::min(d, last * piece);
    for (std::int64_t r = 0; r < rows; ++r) {
      const T* xr = x + r * d;
      const T* dyr = dy + r * d;
      const T mu = mean[r];
      const T rs = rstd[r];
      if (dw)
        for (std::int64_t j = begin; j < end; ++j) dw[j] += dyr[j] * ((xr[j] - mu) * rs);
      if (db)
        for (std::int64_t j = begin; j < end; ++j) db[j] += dyr[j];
    }
  });
}

// dx (may be null), dw and db (null when not needed, else zero-initialized, (D)).
// ones is a row of D ones standing in for a missing weight.
template <typename T>
void layer_norm_backward(const T* x, const T* w, const T* mean, const T* rstd, const T* dy, T* dx,
                         T* dw, T* db, std::int64_t rows, std::int64_t d) {
  std::vector<T> ones;
  if (!w) {
    ones.assign(static_cast<std::size_t>(d), T(1));
    w = ones.data();
  }
  if (dx)
    detail::parallel_for(rows, row_grain(d), [&](std::int64_t first, std::int64_t last) {
      for (std::int64_t r = first; r < last; ++r)
        layer_norm_backward_row(x + r * d, w, mean[r], rstd[r], dy + r * d, dx + r * d, d);
    });
  if (dw || db) layer_norm_backward_params(x, mean, rstd, dy, dw, db, rows, d);
}

}  // namespace

Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight,
                  const Tensor& bias, double eps) {
  check_layer_norm_args(x, normalized_shape, weight, bias, eps);
  const std::int64_t d = numel_of(normalized_shape);
  const std::int64_t rows = d == 0 ? 0 : x.numel() / d;
  Tensor out = detail::new_tensor(x.shape(), x.dtype(), x.device());
  Tensor mean = detail::new_tensor({rows}, x.dtype(), x.device());
  Tensor rstd = detail::new_tensor({rows}, x.dtype(), x.device());
  if (x.device().is_cuda())
    cuda::backend().layer_norm_forward(x, weight, bias, rows, d, eps, out, mean, rstd);
  else
    detail::dispatch_floating(x.dtype(), kOp, [&]<typename T>() {
      layer_norm_forward<T>(detail::ptr<T>(x), weight.defined() ? detail::ptr<T>(weight) : nullptr,
                            bias.defined() ? detail::ptr<T>(bias) : nullptr, detail::ptr<T>(out),
                            detail::ptr<T>(mean), detail::ptr<T>(rstd), rows, d,
                            static_cast<T>(eps));
    });
  autograd::record(
      kOp, {x, weight, bias}, {&out}, {x, weight, mean, rstd},
      [rows, d, normalized_shape](const std::vector<Tensor>& grads,
                                  const autograd::BackwardContext& ctx) -> std::vector<Tensor> {
        const Tensor& dy = grads[0];
        const Tensor& saved_x = ctx.saved(0);
        const Tensor& saved_w = ctx.saved(1);
        Tensor dx, dw, db;
        if (saved_x.device().is_cuda()) {  // dx always; dweight and dbias when needed
          dx = detail::new_tensor(saved_x.shape(), saved_x.dtype(), saved_x.device());
          if (ctx.needs_grad(1))
            dw = detail::new_tensor(normalized_shape, saved_x.dtype(), saved_x.device());
          if (ctx.needs_grad(2))
            db = detail::new_tensor(normalized_shape, saved_x.dtype(), saved_x.device());
          cuda::backend().layer_norm_backward(dy, saved_x, saved_w, ctx.saved(2), ctx.saved(3),
                                              rows, d, dx, dw, db);
          if (!ctx.needs_grad(0)) dx = Tensor();
          return {dx, dw, db};
        }
        if (ctx.needs_grad(0)) dx = detail::new_tensor(saved_x.shape(), saved_x.dtype());
        if (ctx.needs_grad(1)) dw = zeros(normalized_shape, saved_x.options());
        if (ctx.needs_grad(2)) db = zeros(normalized_shape, saved_x.options());
        detail::dispatch_floating(saved_x.dtype(), kOp, [&]<typename T>() {
          auto maybe = [](Tensor& t) { return t.defined() ? detail::ptr<T>(t) : nullptr; };
          layer_norm_backward<T>(detail::ptr<T>(saved_x),
                                 saved_w.defined() ? detail::ptr<T>(saved_w) : nullptr,
                                 detail::ptr<T>(ctx.saved(2)), detail::ptr<T>(ctx.saved(3)),
                                 detail::ptr<T>(dy), maybe(dx), maybe(dw), maybe(db), rows, d);
        });
        return {dx, dw, db};
      });
  return out;
}

}  // namespace headgrad

namespace headgrad {

// grouped_layer_norm: G layer norms over the last dim, one per slice of the leading dim.
//   x (G, *, D), weight (G, D), bias (G, D) or undefined -> y[g] = layer_norm(x[g], {D}, weight[g],
//   bias[g])
// backward per group as layer_norm's (dw[g], db[g] sum the rows of group g only). The CPU
// runs layer_norm's kernels once per group: bitwise layer_norm of each slice.
Tensor grouped_layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps) {
  constexpr const char* op = "grouped_layer_norm";
  detail::check_float_op(op, x, weight);
  if (bias.defined()) detail::check_float_op(op, x, bias);
  const Shape& xs = x.shape();
  if (weight.dim() != 2 || xs.size() < 2 || xs[0] != weight.size(0) ||
      xs.back() != weight.size(1) || (bias.defined() && bias.shape() != weight.shape()))
    throw ShapeError(std::string(op) + ": input " + detail::describe(x) + ", weight " +
                     detail::describe(weight) + ", bias " +
                     (bias.defined() ? detail::describe(bias) : std::string("none")) +
                     ": expected input (G, ..., D) with weight and bias (G, D)");
  if (!(eps >= 0))
    throw ValueError(std::string(op) + ": eps must be non-negative, got " + std::to_string(eps));
  const std::int64_t groups = weight.size(0), d = weight.size(1);
  if (x.device().is_cuda()) {  // normalize, then the per-group affine part by broadcasting
    Shape affine(xs.size(), 1);
    affine.front() = groups;
    affine.back() = d;
    const Tensor scaled = mul(layer_norm(x, {d}, Tensor(), Tensor(), eps), reshape(weight, affine));
    return bias.defined() ? add(scaled, reshape(bias, affine)) : scaled;
  }
  const std::int64_t rows = d == 0 || groups == 0 ? 0 : x.numel() / (groups * d);
  Tensor out = detail::new_tensor(xs, x.dtype(), x.device());
  Tensor mean = detail::new_tensor({groups * rows}, x.dtype(), x.device());
  Tensor rstd = detail::new_tensor({groups * rows}, x.dtype(), x.device());
  detail::dispatch_floating(x.dtype(), op, [&]<typename T>() {
    for (std::int64_t g = 0; g < groups; ++g)
      layer_norm_forward<T>(detail::ptr<T>(x) + g * rows * d, detail::ptr<T>(weight) + g * d,
                            bias.defined() ? detail::ptr<T>(bias) + g * d : nullptr,
                            detail::ptr<T>(out) + g * rows * d, detail::ptr<T>(mean) + g * rows,
                            detail::ptr<T>(rstd) + g * rows, rows, d, static_cast<T>(eps));
  });
  autograd::record(
      op, {x, weight, bias}, {&out}, {x, weight, mean, rstd},
      [groups, rows, d](const std::vector<Tensor>& grads,
                        const autograd::BackwardContext& ctx) -> std::vector<Tensor> {
        const Tensor& dy = grads[0];
        const Tensor& saved_x = ctx.saved(0);
        Tensor dx, dw, db;
        if (ctx.needs_grad(0)) dx = detail::new_tensor(saved_x.shape(), saved_x.dtype());
        if (ctx.needs_grad(1)) dw = zeros({groups, d}, saved_x.options());
        if (ctx.needs_grad(2)) db = zeros({groups, d}, saved_x.options());
        detail::dispatch_floating(saved_x.dtype(), "grouped_layer_norm", [&]<typename T>() {
          auto at = [](Tensor& t, std::int64_t offset) {
            return t.defined() ? detail::ptr<T>(t) + offset : nullptr;
          };
          for (std::int64_t g = 0; g < groups; ++g)
            layer_norm_backward<T>(
                detail::ptr<T>(saved_x) + g * rows * d, detail::ptr<T>(ctx.saved(1)) + g * d,
                detail::ptr<T>(ctx.saved(2)) + g * rows, detail::ptr<T>(ctx.saved(3)) + g * rows,
                detail::ptr<T>(dy) + g * rows * d, at(dx, g * rows * d), at(dw, g * d),
                at(db, g * d), rows, d);
        });
        return {dx, dw, db};
      });
  return out;
}

}  // namespace headgrad
