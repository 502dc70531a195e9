// layer_norm, forward and backward side by side.
//
// x is viewed as (rows, D) with D = numel(normalized_shape); every row is normalized on
// its own by the kernels of x's device (the CPU's row kernels: ops/cpu/layer_norm_rows.hpp).
// mean and rstd per row are saved for backward.
#include <string>
#include <vector>

#include "core/dispatch.hpp"
#include "core/kernels.hpp"
#include "headgrad/autograd/function.hpp"
#include "headgrad/ops/elementwise.hpp"
#include "headgrad/ops/norm.hpp"
#include "headgrad/ops/shape_ops.hpp"

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

}  // namespace

// ---------------------------------------------------------------------------------------
// layer_norm: x (rows, D), weight (D), bias (D) -> y (rows, D); saved mean, rstd (rows)
//   mean = sum(x)/D, var = sum((x-mean)^2)/D (biased), rstd = 1/sqrt(var + eps)
//   (rstd = NaN when the sum of squares overflows, so the row is NaN, as in PyTorch)
//   xhat = (x - mean) * rstd,  y = xhat * w + b
// backward, with g = dy * w:
//   dx = rstd * (g - mean(g) - xhat * mean(g * xhat))
//   dw = sum over rows of dy * xhat,   db = sum over rows of dy
// ---------------------------------------------------------------------------------------

Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight,
                  const Tensor& bias, double eps) {
  check_layer_norm_args(x, normalized_shape, weight, bias, eps);
  const std::int64_t d = numel_of(normalized_shape);
  const std::int64_t rows = d == 0 ? 0 : x.numel() / d;
  Tensor out = detail::new_tensor(x.shape(), x.dtype(), x.device());
  Tensor mean = detail::new_tensor({rows}, x.dtype(), x.device());
  Tensor rstd = detail::new_tensor({rows}, x.dtype(), x.device());
  kernels_for(x.device(), kOp).layer_norm_forward(x, weight, bias, rows, d, eps, out, mean, rstd);
  autograd::record(
      kOp, {x, weight, bias}, {&out}, {x, weight, mean, rstd},
      [rows, d, normalized_shape](const std::vector<Tensor>& grads,
                                  const autograd::BackwardContext& ctx) -> std::vector<Tensor> {
        const Tensor& saved_x = ctx.saved(0);
        // dx always (dropped when not wanted); dweight and dbias when wanted.
        Tensor dx = detail::new_tensor(saved_x.shape(), saved_x.dtype(), saved_x.device());
        Tensor dw, db;
        if (ctx.needs_grad(1))
          dw = detail::new_tensor(normalized_shape, saved_x.dtype(), saved_x.device());
        if (ctx.needs_grad(2))
          db = detail::new_tensor(normalized_shape, saved_x.dtype(), saved_x.device());
        kernels_for(saved_x.device(), kOp)
            .layer_norm_backward(grads[0], saved_x, ctx.saved(1), ctx.saved(2), ctx.saved(3), rows,
                                 d, dx, dw, db);
        if (!ctx.needs_grad(0)) dx = Tensor();
        return {dx, dw, db};
      });
  return out;
}

}  // namespace headgrad

namespace headgrad {

// grouped_layer_norm: G layer norms over the last dim, one per slice of the leading dim.
//   x (G, *, D), weight (G, D), bias (G, D) or undefined -> y[g] = layer_norm(x[g], {D}, weight[g],
//   bias[g])
// backward per group as layer_norm's (dw[g], db[g] sum the rows of group g only). Both
// devices run layer_norm's kernels once per group: bitwise layer_norm of each slice.
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
  const std::int64_t rows = d == 0 || groups == 0 ? 0 : x.numel() / (groups * d);
  Tensor out = detail::new_tensor(xs, x.dtype(), x.device());
  Tensor mean = detail::new_tensor({groups * rows}, x.dtype(), x.device());
  Tensor rstd = detail::new_tensor({groups * rows}, x.dtype(), x.device());
  kernels_for(x.device(), op)
      .grouped_layer_norm_forward(x, weight, bias, groups, rows, d, eps, out, mean, rstd);
  autograd::record(op, {x, weight, bias}, {&out}, {x, weight, mean, rstd},
                   [groups, rows, d](const std::vector<Tensor>& grads,
                                     const autograd::BackwardContext& ctx) -> std::vector<Tensor> {
                     const Tensor& saved_x = ctx.saved(0);
                     // dx always (dropped when not wanted); dweight and dbias when wanted.
                     Tensor dx =
                         detail::new_tensor(saved_x.shape(), saved_x.dtype(), saved_x.device());
                     Tensor dw, db;
                     if (ctx.needs_grad(1))
                       dw = detail::new_tensor({groups, d}, saved_x.dtype(), saved_x.device());
                     if (ctx.needs_grad(2))
                       db = detail::new_tensor({groups, d}, saved_x.dtype(), saved_x.device());
                     kernels_for(saved_x.device(), "grouped_layer_norm")
                         .grouped_layer_norm_backward(grads[0], saved_x, ctx.saved(1), ctx.saved(2),
                                                      ctx.saved(3), groups, rows, d, dx, dw, db);
                     if (!ctx.needs_grad(0)) dx = Tensor();
                     return {dx, dw, db};
                   });
  return out;
}

}  // namespace headgrad
