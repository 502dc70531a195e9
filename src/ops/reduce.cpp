// Reductions: sum, mean, var, max/amax/argmax, and sum_to (the gradient of broadcasting).
//
// Every sum and amax is one reduction kernel of x's device (Kernels::reduce; the CPU's, in
// src/ops/cpu/reduce_kernels.cpp, walks x in contiguous runs), max over a dim another
// (Kernels::max_dim and its backward).
#include <algorithm>

#include "core/dispatch.hpp"
#include "core/kernels.hpp"
#include "headgrad/autograd/function.hpp"
#include "headgrad/autograd/grad_mode.hpp"
#include "headgrad/ops/elementwise.hpp"
#include "headgrad/ops/reduce.hpp"

namespace headgrad {

using autograd::BackwardContext;
using Grads = std::vector<Tensor>;

namespace {

// A copy of g (shape broadcastable to `target`) broadcast to `target`. Not recorded.
Tensor broadcast_copy(const Tensor& g, const Shape& target) {
  Tensor out = detail::new_tensor(target, g.dtype(), g.device());
  kernels_for(g.device(), "sum backward").expand(g, out);
  return out;
}

struct ReducePlan {
  Shape keep_shape;    // x's shape with reduced dims set to 1
  Shape out_shape;     // keep_shape, or without the reduced dims
  std::int64_t count;  // elements reduced into each output
};

ReducePlan plan_reduction(const Tensor& x, const Shape& dims, bool keepdim, const char* op) {
  const std::int64_t rank = x.dim();
  std::vector<bool> reduced(static_cast<std::size_t>(rank), dims.empty());
  for (std::int64_t d : dims) {
    if (rank == 0) {
      normalize_dim(d, rank, op);
      continue;
    }
    const auto nd = static_cast<std::size_t>(normalize_dim(d, rank, op));
    if (reduced[nd])
      throw ValueError(std::string(op) + ": dim " + std::to_string(d) + " appears twice in dims " +
                       shape_str(dims));
    reduced[nd] = true;
  }
  ReducePlan plan{x.shape(), {}, 1};
  for (std::size_t d = 0; d < reduced.size(); ++d) {
    if (!reduced[d]) {
      plan.out_shape.push_back(x.shape()[d]);
      continue;
    }
    plan.count *= x.shape()[d];
    plan.keep_shape[d] = 1;
    if (keepdim) plan.out_shape.push_back(1);
  }
  return plan;
}

// keep_shape left-padded with 1s to x's rank (sum_to's target may have fewer dims).
Shape full_rank_keep_shape(const Tensor& x, const Shape& keep_shape) {
  Shape keep(x.shape().size() - keep_shape.size(), 1);
  keep.insert(keep.end(), keep_shape.begin(), keep_shape.end());
  return keep;
}

// The reduction `kind` of x into a tensor of keep_shape, returned with out_shape (same
// storage): the kernel of x's device.
Tensor reduce_kernel(const char* op, Reduce kind, const Tensor& x, const Shape& keep_shape,
                     const Shape& out_shape) {
  Tensor out = detail::new_tensor(keep_shape, x.dtype(), x.device());
  kernels_for(x.device(), op).reduce(kind, x, full_rank_keep_shape(x, keep_shape), out);
  out.impl()->shape = out_shape;
  return out;
}

Tensor sum_kernel(const char* op, const Tensor& x, const Shape& keep_shape,
                  const Shape& out_shape) {
  return reduce_kernel(op, Reduce::sum, x, keep_shape, out_shape);
}

// sum of an int64 or bool tensor: int64, exact, as torch (no gradient: integers never
// require one). The CPU's kernel; other devices refuse int64 (DTypeError naming sum).
Tensor integer_sum(const Tensor& x, const Shape& dims, bool keepdim) {
  const Tensor ints = x.dtype() == kBool ? x.to(kInt64) : x;
  const ReducePlan plan = plan_reduction(ints, dims, keepdim, "sum");
  return sum_kernel("sum", ints, plan.keep_shape, plan.out_shape);
}

}  // namespace

// sum: x (...) -> y with the dims in `dims` removed (or kept as 1).  dx = broadcast(dy)
Tensor sum(const Tensor& x, const Shape& dims, bool keepdim) {
  if (x.dtype() == kInt64 || x.dtype() == kBool) return integer_sum(x, dims, keepdim);
  detail::check_float_op("sum", x);
  const ReducePlan plan = plan_reduction(x, dims, keepdim, "sum");
  Tensor out = sum_kernel("sum", x, plan.keep_shape, plan.out_shape);
  autograd::record("sum", {x}, {&out}, {},
                   [plan, xs = x.shape()](const Grads& g, const BackwardContext&) {
                     return Grads{broadcast_copy(detail::alias(g[0], plan.keep_shape), xs)};
                   });
  return out;
}

Tensor sum(const Tensor& x) { return sum(x, {}, false); }

// mean: sum / count.  dx = broadcast(dy) / count
Tensor mean(const Tensor& x, const Shape& dims, bool keepdim) {
  detail::check_float_op("mean", x);
  const ReducePlan plan = plan_reduction(x, dims, keepdim, "mean");
  Tensor out;
  {
    Tensor s = sum_kernel("mean", x, plan.keep_shape, plan.out_shape);
    NoGradGuard no_grad;
    out = div(s, static_cast<double>(plan.count));
  }
  autograd::record("mean", {x}, {&out}, {},
                   [plan, xs = x.shape()](const Grads& g, const BackwardContext&) {
                     return Grads{div(broadcast_copy(detail::alias(g[0], plan.keep_shape), xs),
                                      static_cast<double>(plan.count))};
                   });
  return out;
}

Tensor mean(const Tensor& x) { return mean(x, {}, false); }

// var: sum((x - mean)^2) / (count - correction).  dx = dy * 2 (x - mean) / (count - correction)
Tensor var(const Tensor& x, const Shape& dims, bool keepdim, std::int64_t correction) {
  detail::check_float_op("var", x);
  const ReducePlan plan = plan_reduction(x, dims, keepdim, "var");
  // As torch.var: a non-positive count - correction divides by 0 (inf, or NaN for 0/0).
  const double denom = static_cast<double>(std::max<std::int64_t>(0, plan.count - correction));
  Tensor out, centered;
  {
    NoGradGuard no_grad;
    Tensor m = div(sum_kernel("var", x, plan.keep_shape, plan.keep_shape),
                   static_cast<double>(plan.count));
    centered = sub(x, m);
    if (denom > 0) {
      out = div(sum_kernel("var", mul(centered, centered), plan.keep_shape, plan.out_shape), denom);
    } else {
      // Only the sign of the sum of squares matters (x/0 is inf, 0/0 NaN): summed in
      // float64, as torch.var does, since float32 squares of tiny deviations underflow to
      // 0 (var([1e-30, 0], correction=2) is inf, not NaN).
      const Tensor c = centered.to(kFloat64);
      out = div(sum_kernel("var", mul(c, c), plan.keep_shape, plan.out_shape), denom).to(x.dtype());
    }
  }
  autograd::record("var", {x}, {&out}, {centered},
                   [plan, denom, xs = x.shape()](const Grads& g, const BackwardContext& ctx) {
                     Tensor gb = broadcast_copy(detail::alias(g[0], plan.keep_shape), xs);
                     return Grads{mul(mul(gb, ctx.saved(0)), 2.0 / denom)};
                   });
  return out;
}

Tensor var(const Tensor& x) { return var(x, {}, false, 1); }

// sum_to: x (broadcast shape) -> `shape`, summing the broadcast dims.  dx = broadcast(dy)
Tensor sum_to(const Tensor& x, const Shape& shape) {
  detail::check_float_op("sum_to", x);
  if (x.shape() == shape) return x;
  if (shape.size() > x.shape().size() || broadcast_shapes(shape, x.shape(), "sum_to") != x.shape())
    throw ShapeError("sum_to: " + shape_str(x.shape()) + " cannot be reduced to " +
                     shape_str(shape) + " (it is not a broadcast of it)");
  Tensor out = sum_kernel("sum_to", x, shape, shape);
  autograd::record("sum_to", {x}, {&out}, {},
                   [xs = x.shape()](const Grads& g, const BackwardContext&) {
                     return Grads{broadcast_copy(g[0], xs)};
                   });
  return out;
}

// --- max family ---------------------------------------------------------------------

namespace {
// The reduced dim d and its size n.
struct MaxGeometry {
  ReducePlan plan;
  Shape x_shape;
  std::int64_t d = 0, n = 1;
};

}  // namespace

// max over one dim: x viewed as (outer, n, inner); values and first-argmax indices.
//   dx = zeros, with dx[index] = dy
MaxResult max(const Tensor& x, std::int64_t dim, bool keepdim) {
  detail::check_float_op("max", x);
  MaxGeometry m;
  m.d = normalize_dim(dim, x.dim(), "max");
  m.plan = plan_reduction(x, {dim}, keepdim, "max");
  m.x_shape = x.shape();
  m.n = x.dim() == 0 ? 1 : x.shape()[static_cast<std::size_t>(m.d)];
  if (m.n == 0) throw ShapeError("max: cannot reduce over an empty dim of " + detail::describe(x));
  // indices (keep_shape) is saved for the backward; the result shows them in out_shape.
  Tensor values = detail::new_tensor(m.plan.out_shape, x.dtype(), x.device());
  Tensor indices = detail::new_tensor(m.plan.keep_shape, kInt64, x.device());
  kernels_for(x.device(), "max").max_dim(x, m.d, values, indices);
  MaxResult r{values, detail::alias(indices, m.plan.out_shape)};
  autograd::record(
      "max", {x}, {&r.values}, {indices}, [m](const Grads& g, const BackwardContext& ctx) {
        Tensor dx = detail::new_tensor(m.x_shape, g[0].dtype(), g[0].device());
        kernels_for(g[0].device(), "max backward").max_dim_backward(g[0], ctx.saved(0), m.d, dx);
        return Grads{dx};
      });
  return r;
}

Tensor argmax(const Tensor& x, std::int64_t dim, bool keepdim) {
  NoGradGuard no_grad;
  return max(x, dim, keepdim).indices;
}

// amax over dims: the gradient is split evenly between tied maxima.
//   dx = broadcast(dy / ties) * [x == broadcast(y)],  ties = number of maxima per output
Tensor amax(const Tensor& x, const Shape& dims, bool keepdim) {
  detail::check_float_op("amax", x);
  const ReducePlan plan = plan_reduction(x, dims, keepdim, "amax");
  if (plan.count == 0)
    throw ShapeError("amax: cannot reduce over an empty dim of " + detail::describe(x));
  Tensor out = reduce_kernel("amax", Reduce::amax, x, plan.keep_shape, plan.keep_shape);
  Tensor keep = out.detach();
  out.impl()->shape = plan.out_shape;
  autograd::record("amax", {x}, {&out}, {x, keep},
                   [plan](const Grads& g, const BackwardContext& ctx) {
                     const Tensor& xv = ctx.saved(0);
                     Tensor is_max = eq(xv, ctx.saved(1)).to(xv.dtype());
                     Tensor ties = sum_kernel("amax", is_max, plan.keep_shape, plan.keep_shape);
                     Tensor share = div(detail::alias(g[0], plan.keep_shape), ties);
                     return Grads{mul(broadcast_copy(share, xv.shape()), is_max)};
                   });
  return out;
}

Tensor max(const Tensor& x) { return amax(x, {}, false); }

}  // namespace headgrad
