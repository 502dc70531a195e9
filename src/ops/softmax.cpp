// softmax and log_softmax over one dim, forward and backward side by side.
//
// A tensor is viewed as (outer, n, inner) around the softmax dim of size n; the kernels come
// from its device (Kernels::softmax_forward / softmax_backward; the CPU's are in
// src/ops/cpu/softmax_kernels.cpp).
//
// Both save their OUTPUT for backward. A row whose entries are all -inf (every key masked)
// has max = -inf: NaN in standard mode (as PyTorch); SoftmaxMode::safe turns it into zeros
// (softmax) or -inf (log_softmax) with a zero gradient. Rows with only some -inf entries are
// ordinary rows.
#include <string>
#include <vector>

#include "core/dispatch.hpp"
#include "core/kernels.hpp"
#include "headgrad/autograd/function.hpp"
#include "headgrad/ops/softmax.hpp"

namespace headgrad {

namespace {

// The (outer, n, inner) view of a tensor around one dim.
struct RowGeometry {
  std::int64_t outer = 1;
  std::int64_t n = 1;
  std::int64_t inner = 1;
};

RowGeometry row_geometry(const Tensor& x, std::int64_t dim, const char* op) {
  const Shape& shape = x.shape();
  const auto rank = static_cast<std::int64_t>(shape.size());
  const std::int64_t r = rank == 0 ? 1 : rank;  // a 0-d tensor accepts dims -1 and 0
  if (dim < -r || dim >= r)
    throw IndexError(std::string(op) + ": dim " + std::to_string(dim) + " is out of range for " +
                     detail::describe(x) + " (expected a dim in [" + std::to_string(-r) + ", " +
                     std::to_string(r - 1) + "])");
  RowGeometry g;
  if (rank == 0) return g;
  const std::int64_t d = dim < 0 ? dim + rank : dim;
  g.n = shape[static_cast<std::size_t>(d)];
  for (std::int64_t i = 0; i < d; ++i) g.outer *= shape[static_cast<std::size_t>(i)];
  for (std::int64_t i = d + 1; i < rank; ++i) g.inner *= shape[static_cast<std::size_t>(i)];
  return g;
}

// ---------------------------------------------------------------------------------------
// softmax: x (outer, n, inner) -> y (outer, n, inner), y = exp(x - max) / sum(exp(x - max))
//          dx = y * (dy - sum(dy * y))          (sums over the n axis)
// log_softmax: y = (x - max) - log(sum(exp(x - max)))
//          dx = dy - exp(y) * sum(dy)
// All -inf row: standard mode gives NaN for both (as PyTorch: -inf - (-inf) is NaN); safe
// mode gives 0 for softmax and -inf for log_softmax, both with a zero gradient.
// ---------------------------------------------------------------------------------------

Tensor softmax_op(const Tensor& x, std::int64_t dim, SoftmaxMode mode, bool log) {
  const char* op = log ? "log_softmax" : "softmax";
  detail::check_float_op(op, x);
  const RowGeometry g = row_geometry(x, dim, op);
  const bool safe = mode == SoftmaxMode::safe;
  Tensor out = detail::new_tensor(x.shape(), x.dtype(), x.device());
  kernels_for(x.device(), op).softmax_forward(x, g.outer, g.n, g.inner, log, safe, out);
  autograd::record(
      op, {x}, {&out}, {out},
      [g, log, safe, op](const std::vector<Tensor>& grads,
                         const autograd::BackwardContext& ctx) -> std::vector<Tensor> {
        const Tensor& y = ctx.saved(0);
        const Tensor& dy = grads[0];
        Tensor dx = detail::new_tensor(y.shape(), y.dtype(), y.device());
        kernels_for(y.device(), op).softmax_backward(dy, y, g.outer, g.n, g.inner, log, safe, dx);
        return {dx};
      });
  return out;
}

}  // namespace

Tensor softmax(const Tensor& x, std::int64_t dim, SoftmaxMode mode) {
  return softmax_op(x, dim, mode, /*log=*/false);
}

Tensor log_softmax(const Tensor& x, std::int64_t dim, SoftmaxMode mode) {
  return softmax_op(x, dim, mode, /*log=*/true);
}

}  // namespace headgrad
