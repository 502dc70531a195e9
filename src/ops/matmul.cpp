// Matrix products: matmul (torch.matmul semantics, batched and broadcast), linear and
// grouped_linear. Each op checks its arguments, plans the product and records its backward;
// the products are the device's kernels (Kernels::matmul*, linear*; the CPU's BLAS calls in
// src/ops/cpu/matmul_kernels.cpp, a GPU's cuBLAS ones in src/cuda/kernels/matmul.cu).
#include "headgrad/ops/matmul.hpp"

#include <cstdint>
#include <string>
#include <vector>

#include "core/dispatch.hpp"
#include "core/kernels.hpp"
#include "core/matmul_plan.hpp"
#include "headgrad/autograd/function.hpp"

namespace headgrad {

namespace {

// linear's and grouped_linear's node: y (y_shape) from the device's linear kernels, which
// write the gradients the graph needs.
Tensor linear_node(const char* op, const Tensor& x, const Tensor& weight, const Tensor& bias,
                   const LinearProblem& problem, const Shape& y_shape) {
  Tensor y = detail::new_tensor(y_shape, x.dtype(), x.device());
  kernels_for(x.device(), op).linear(x, weight, bias, problem, y);
  autograd::record(
      op, {x, weight, bias}, {&y}, {x, weight},
      [op, problem](const std::vector<Tensor>& grads,
                    const autograd::BackwardContext& ctx) -> std::vector<Tensor> {
        const Tensor& dy = grads[0];
        if (!dy.defined()) return {Tensor(), Tensor(), Tensor()};
        const Tensor& x = ctx.saved(0);
        const Tensor& weight = ctx.saved(1);
        Tensor dx, dw, dbias;
        if (ctx.needs_grad(0)) dx = detail::new_tensor(x.shape(), x.dtype(), x.device());
        if (ctx.needs_grad(1)) dw = detail::new_tensor(weight.shape(), weight.dtype(), x.device());
        if (ctx.needs_grad(2))
          dbias = detail::new_tensor(weight.dim() == 2 ? Shape{problem.out}  // linear
                                                       : Shape{problem.groups, problem.out},
                                     x.dtype(), x.device());
        kernels_for(x.device(), op).linear_backward(dy, x, weight, problem, dx, dw, dbias);
        return {dx, dw, dbias};
      });
  return y;
}

}  // namespace

// matmul: A (*a, m, k) @ B (*b, k, n) -> C (broadcast(*a, *b), m, n); 1-d A is (1, k) and
// 1-d B is (k, 1), their promoted dim removed from C.
//   C[i] = A[ia(i)] @ B[ib(i)]
//   dA[j] = sum over batches i reading A[j] of dC[i] @ B[ib(i)]^T
//   dB[j] = sum over batches i reading B[j] of A[ia(i)]^T @ dC[i]
// A broadcast operand's gradient accumulates straight into its own buffer: the first GEMM
// touching a matrix writes it (beta = 0), later ones add (beta = 1).
Tensor matmul(const Tensor& a, const Tensor& b) {
  detail::check_float_op("matmul", a, b);
  const detail::MatmulPlan plan = detail::plan_matmul(a.shape(), b.shape());
  Tensor out = detail::new_tensor(plan.out_shape, a.dtype(), a.device());
  kernels_for(a.device(), "matmul").matmul(a, b, plan, out);
  autograd::record(
      "matmul", {a, b}, {&out}, {a, b},
      [plan](const std::vector<Tensor>& grads,
             const autograd::BackwardContext& ctx) -> std::vector<Tensor> {
        const Tensor& dc = grads[0];
        if (!dc.defined()) return {Tensor(), Tensor()};
        const Tensor& a = ctx.saved(0);
        const Tensor& b = ctx.saved(1);
        Tensor da, db;
        if (ctx.needs_grad(0)) da = detail::new_tensor(a.shape(), a.dtype(), a.device());
        if (ctx.needs_grad(1)) db = detail::new_tensor(b.shape(), b.dtype(), b.device());
        kernels_for(a.device(), "matmul backward").matmul_backward(dc, a, b, plan, da, db);
        return {da, db};
      });
  return out;
}

// linear: x (*, in) -> y (*, out) = x @ W^T + bias, W (out, in), bias (out) optional.
// The leading dims of x fold into rows: x (rows, in).
//   y  (rows,out) = x (rows,in) @ W^T (in,out) + bias   (bias rows written first, beta = 1)
//   dx (rows,in)  = dy (rows,out) @ W (out,in)
//   dW (out,in)   = dy^T (out,rows) @ x (rows,in)
//   db (out)      = sum over rows of dy
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  detail::check_float_op("linear", x, weight);
  if (bias.defined()) detail::check_float_op("linear", x, bias);
  const Shape& x_shape = x.shape();
  const Shape& w_shape = weight.shape();
  auto where = [&] {
    return "linear: input " + shape_str(x_shape) + ", weight " + shape_str(w_shape) +
           (bias.defined() ? ", bias " + shape_str(bias.shape()) : std::string()) + ": ";
  };
  if (x_shape.empty())
    throw ShapeError(where() + "input needs at least 1 dimension (in_features), got a 0-d tensor");
  if (w_shape.size() != 2)
    throw ShapeError(where() + "weight must be 2-d (out_features, in_features)");
  const std::int64_t in = w_shape[1];
  const std::int64_t out_features = w_shape[0];
  if (x_shape.back() != in)
    throw ShapeError(where() + "input features " + std::to_string(x_shape.back()) +
                     " and weight in_features " + std::to_string(in) + " differ");
  if (bias.defined() && (bias.dim() != 1 || bias.size(0) != out_features))
    throw ShapeError(where() + "bias must be 1-d with out_features = " +
                     std::to_string(out_features) + " entries");

  Shape y_shape(x_shape.begin(), x_shape.end() - 1);
  const std::int64_t rows = numel_of(y_shape);
  y_shape.push_back(out_features);
  return linear_node("linear", x, weight, bias, LinearProblem{1, rows, in, out_features}, y_shape);
}

// grouped_linear: G independent linears, one per slice of the leading dim.
//   x (G, *, in) -> y (G, *, out),  y[g] = x[g] @ W[g]^T + bias[g]
//   W (G, out, in), bias (G, out) or undefined
//   dx[g] = dy[g] @ W[g],  dW[g] = dy[g]^T @ x[g],  dbias[g] = sum over rows of dy[g]
// linear's forward and backward kernels run once per group (see linear above).
Tensor grouped_linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  detail::check_float_op("grouped_linear", x, weight);
  if (bias.defined()) detail::check_float_op("grouped_linear", x, bias);
  const Shape& x_shape = x.shape();
  const Shape& w_shape = weight.shape();
  auto where = [&] {
    return "grouped_linear: input " + shape_str(x_shape) + ", weight " + shape_str(w_shape) +
           (bias.defined() ? ", bias " + shape_str(bias.shape()) : std::string()) + ": ";
  };
  if (w_shape.size() != 3)
    throw ShapeError(where() + "weight must be 3-d (groups, out_features, in_features)");
  const std::int64_t groups = w_shape[0], out_features = w_shape[1], in = w_shape[2];
  if (x_shape.size() < 2 || x_shape[0] != groups)
    throw ShapeError(where() + "input must be (groups, ..., in_features) with groups = " +
                     std::to_string(groups) + " leading");
  if (x_shape.back() != in)
    throw ShapeError(where() + "input features " + std::to_string(x_shape.back()) +
                     " and weight in_features " + std::to_string(in) + " differ");
  if (bias.defined() && bias.shape() != Shape{groups, out_features})
    throw ShapeError(where() + "bias must be (groups, out_features) = (" + std::to_string(groups) +
                     "," + std::to_string(out_features) + ")");
  const std::int64_t rows = numel_of(Shape(x_shape.begin() + 1, x_shape.end() - 1));
  Shape y_shape(x_shape.begin(), x_shape.end() - 1);
  y_shape.push_back(out_features);
  return linear_node("grouped_linear", x, weight, bias,
                     LinearProblem{groups, rows, in, out_features}, y_shape);
}

}  // namespace headgrad
