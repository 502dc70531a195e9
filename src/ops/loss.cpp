// Losses: cross_entropy (a fused log-softmax + negative log likelihood kernel) and mse_loss.
// Each op checks its arguments, allocates, and records its backward beside its forward; the
// kernels are the device's (Kernels::cross_entropy_*, mse_*; the CPU's in
// src/ops/cpu/loss_kernels.cpp).
#include "headgrad/ops/loss.hpp"

#include <cstdint>
#include <string>
#include <vector>

#include "core/dispatch.hpp"
#include "core/kernels.hpp"
#include "headgrad/autograd/function.hpp"
#include "headgrad/ops/elementwise.hpp"

namespace headgrad {

namespace {

// ============================================================================
// cross_entropy
// ============================================================================

// The logits viewed as (outer, classes, inner) with the class dim in the middle, as PyTorch:
//   (C)            -> (1, C, 1), target ()
//   (N, C)         -> (N, C, 1), targets (N)
//   (N, C, d1,...) -> (N, C, d1*...), targets (N, d1, ...)
// A "position" p = n * inner + j indexes the targets; its logits are
// x[n*C*inner + c*inner + j] for c in [0, C), so the inner dim stays contiguous. The
// kernels' problem (core/kernels.hpp) is that layout with the reduction's arguments.
CrossEntropyProblem check_cross_entropy_args(const Tensor& logits, const Tensor& targets,
                                             double label_smoothing) {
  constexpr const char* op = "cross_entropy";
  detail::check_float_op(op, logits);
  detail::check_dtype(op, targets, kInt64, "targets");
  detail::check_same_device(op, logits, targets);
  if (!(label_smoothing >= 0.0 && label_smoothing < 1.0))
    throw ValueError(std::string(op) + ": label_smoothing must be in [0, 1), got " +
                     std::to_string(label_smoothing));
  const Shape& shape = logits.shape();
  if (shape.empty())
    throw ShapeError(std::string(op) +
                     ": logits must have at least one dim (the classes), got a 0-d tensor " +
                     detail::describe(logits));
  Shape expected = shape;
  expected.erase(expected.begin() + (shape.size() == 1 ? 0 : 1));
  if (targets.shape() != expected)
    throw ShapeError(std::string(op) + ": logits " + shape_str(shape) + " and targets " +
                     shape_str(targets.shape()) + " do not fit: expected targets of shape " +
                     shape_str(expected) + " (the logits without the class dim " +
                     (shape.size() == 1 ? "0" : "1") + ")");
  CrossEntropyProblem layout;
  if (shape.size() == 1) {
    layout.classes = shape[0];
  } else {
    layout.outer = shape[0];
    layout.classes = shape[1];
    for (std::size_t d = 2; d < shape.size(); ++d) layout.inner *= shape[d];
  }
  return layout;
}

[[noreturn]] void throw_bad_target(const Tensor& targets, std::int64_t position,
                                   const CrossEntropyProblem& layout, std::int64_t ignore_index) {
  const auto t =
      static_cast<std::int64_t>(detail::alias(targets, {layout.positions()}).at({position}));
  throw IndexError("cross_entropy: target " + std::to_string(t) + " (at flat position " +
                   std::to_string(position) + ") is out of range for " +
                   std::to_string(layout.classes) + " classes: expected a class in [0, " +
                   std::to_string(layout.classes) + ") or ignore_index " +
                   std::to_string(ignore_index));
}

}  // namespace

// cross_entropy: logits (outer, C, inner), int64 targets (outer, inner) -> loss
//   none: (targets' shape); mean / sum: 0-d.
//   forward  loss_p = (1-eps)(lse_p - x_pt) + eps (lse_p - mean_c x_pc), 0 where ignored
//   backward dx_pc  = s_p (softmax_pc - eps/C - (1-eps)[c == t_p]), 0 where ignored
// Saves the logits (a handle, no copy), the targets, the per-position log-sum-exp
// (outer*inner values) and the count of targets not ignored (0-d, on the logits' device: a
// GPU's mean never reads it back); backward recomputes softmax = exp(x - lse). Not twice
// differentiable (the backward is a plain kernel).
Tensor cross_entropy(const Tensor& logits, const Tensor& targets, Reduction reduction,
                     std::int64_t ignore_index, double label_smoothing) {
  CrossEntropyProblem problem = check_cross_entropy_args(logits, targets, label_smoothing);
  problem.ignore_index = ignore_index;
  problem.label_smoothing = label_smoothing;
  problem.reduction = reduction;
  const Device device = logits.device();
  Tensor out = detail::new_tensor(reduction == Reduction::none ? targets.shape() : Shape{},
                                  logits.dtype(), device);
  Tensor lse = detail::new_tensor({problem.positions()}, logits.dtype(), device);
  Tensor kept = detail::new_tensor({}, kInt64, device);
  Tensor bad = detail::new_tensor({}, kInt64, device);
  kernels_for(device, "cross_entropy")
      .cross_entropy_forward(logits, targets, problem, out, lse, kept, bad);
  // One int64 read back (on a GPU, a synchronization) for the CPU's error on a bad target.
  if (const std::int64_t at = bad.item<std::int64_t>(); at != 0)
    throw_bad_target(targets, at - 1, problem, ignore_index);
  autograd::record(
      "cross_entropy", {logits}, {&out}, {logits, targets, lse, kept},
      [problem](const std::vector<Tensor>& grads, const autograd::BackwardContext& ctx) {
        const Tensor& upstream = grads[0];
        if (!upstream.defined() || !ctx.needs_grad(0)) return std::vector<Tensor>{Tensor()};
        const Tensor& x = ctx.saved(0);
        const Tensor g = upstream.dtype() == x.dtype() ? upstream : upstream.to(x.dtype());
        Tensor dx = detail::new_tensor(x.shape(), x.dtype(), x.device());
        kernels_for(x.device(), "cross_entropy backward")
            .cross_entropy_backward(g, x, ctx.saved(2), ctx.saved(1), ctx.saved(3), problem, dx);
        return std::vector<Tensor>{dx};
      });
  return out;
}

// mse_loss: input a and target b broadcast together to shape S -> loss
//   none: S (a - b)^2; mean: sum (a - b)^2 / numel(S); sum: sum (a - b)^2.
//   backward d = 2 (a - b) s with s = g (none, elementwise), g / numel(S) (mean), g (sum);
//   da = sum_to(d, a.shape), db = -sum_to(d, b.shape).
// Saves the input and target (handles) and recomputes a - b in backward.
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  detail::check_float_op("mse_loss", input, target);
  const Shape shape = broadcast_shapes(input.shape(), target.shape(), "mse_loss");
  Tensor out = detail::new_tensor(reduction == Reduction::none ? shape : Shape{}, input.dtype(),
                                  input.device());
  kernels_for(input.device(), "mse_loss").mse_forward(input, target, shape, reduction, out);
  autograd::record(
      "mse_loss", {input, target}, {&out}, {input, target},
      [shape, reduction](const std::vector<Tensor>& grads, const autograd::BackwardContext& ctx) {
        const Tensor& upstream = grads[0];
        if (!upstream.defined()) return std::vector<Tensor>{Tensor(), Tensor()};
        const Tensor& a = ctx.saved(0);
        const Tensor& b = ctx.saved(1);
        const Tensor g = upstream.dtype() == a.dtype() ? upstream : upstream.to(a.dtype());
        Tensor da, db;
        if (ctx.needs_grad(0)) da = detail::new_tensor(a.shape(), a.dtype(), a.device());
        if (ctx.needs_grad(1)) db = detail::new_tensor(b.shape(), b.dtype(), b.device());
        kernels_for(a.device(), "mse_loss backward")
            .mse_backward(g, a, b, shape, reduction, da, db);
        return std::vector<Tensor>{da, db};
      });
  return out;
}

}  // namespace headgrad
