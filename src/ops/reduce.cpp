// Reductions: sum, mean, var, max/amax/argmax, and sum_to (the gradient of broadcasting).
//
// All sums go through one kernel, reduce_into: it walks x in contiguous runs (the
// broadcast iterator, with the reduced tensor read at stride 0 along reduced dims) so a
// reduction over the last dim is a vectorized row sum and a reduction over leading dims
// (the bias gradient) is a vectorized row add; no strided per-column gathers.
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/cuda_backend.hpp"
#include "core/dispatch.hpp"
#include "core/kernels.hpp"
#include "headgrad/autograd/function.hpp"
#include "headgrad/autograd/grad_mode.hpp"
#include "headgrad/ops/elementwise.hpp"
#include "headgrad/ops/reduce.hpp"
#include "ops/cpu/broadcast.hpp"
#include "ops/cpu/simd.hpp"

namespace headgrad {

using autograd::BackwardContext;
using Grads = std::vector<Tensor>;
using detail::dispatch_floating;

namespace {

// out (a shape broadcastable to x's) += the sum of x over the broadcast dims; with
// is_max, out = max(out, x) instead.
template <typename T, bool is_max>
void reduce_into(const Tensor& x, Tensor& out) {
  const T* px = detail::ptr<T>(x);
  T* po = detail::ptr<T>(out);
  cpu::broadcast_loop<1>(x.shape(), {out.shape()},
                         [&](std::int64_t xo, const std::array<std::int64_t, 1>& off,
                             std::int64_t n, const std::array<std::int64_t, 1>& st) {
                           const T* src = px + xo;
                           T* dst = po + off[0];
                           if constexpr (is_max) {
                             if (st[0] == 0) {
                               const T m = cpu::simd_max(src, n);
                               *dst = m > *dst || m != m ? m : *dst;  // NaN propagates
                             } else {
                               for (std::int64_t i = 0; i < n; ++i) {
                                 const T d = dst[i * st[0]];
                                 dst[i * st[0]] = src[i] > d || src[i] != src[i] ? src[i] : d;
                               }
                             }
                           } else {
                             if (st[0] == 0) {
                               *dst += cpu::simd_sum(src, n);
                             } else if (st[0] == 1) {
                               for (std::int64_t i = 0; i < n; ++i) dst[i] += src[i];
                             } else {
                               for (std::int64_t i = 0; i < n; ++i) dst[i * st[0]] += src[i];
                             }
                           }
                         });
}

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

// Sum (or max) of x into a tensor of keep_shape on the GPU, returned with out_shape.
Tensor cuda_reduce(cuda::Reduce op, const Tensor& x, const Shape& keep_shape,
                   const Shape& out_shape) {
  Tensor out = detail::new_tensor(keep_shape, x.dtype(), x.device());
  cuda::backend().reduce(op, x, full_rank_keep_shape(x, keep_shape), out);
  out.impl()->shape = out_shape;
  return out;
}

// Sum of x into a tensor of keep_shape, returned with out_shape (same storage).
Tensor sum_kernel(const char* op, const Tensor& x, const Shape& keep_shape,
                  const Shape& out_shape) {
  if (x.device().is_cuda()) return cuda_reduce(cuda::Reduce::sum, x, keep_shape, out_shape);
  Tensor out = zeros(keep_shape, x.options());
  dispatch_floating(x.dtype(), op, [&]<typename T>() { reduce_into<T, false>(x, out); });
  out.impl()->shape = out_shape;
  return out;
}

}  // namespace

// sum: x (...) -> y with the dims in `dims` removed (or kept as 1).  dx = broadcast(dy)
Tensor sum(const Tensor& x, const Shape& dims, bool keepdim) {
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
    out = div(sum_kernel("var", mul(centered, centered), plan.keep_shape, plan.out_shape), denom);
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
// x viewed as (outer, n, inner) around the reduced dim d.
struct MaxGeometry {
  ReducePlan plan;
  Shape x_shape;
  std::int64_t d = 0, outer = 1, n = 1, inner = 1;
};

// values (out_shape) and indices (keep_shape, int64): the first maximum, NaN counting as
// maximal.
void max_forward_cpu(const Tensor& x, const MaxGeometry& m, Tensor& values, Tensor& indices) {
  dispatch_floating(x.dtype(), "max", [&]<typename T>() {
    const T* px = detail::ptr<T>(x);
    T* pv = detail::ptr<T>(values);
    std::int64_t* pi = detail::ptr<std::int64_t>(indices);
    for (std::int64_t o = 0; o < m.outer; ++o)
      for (std::int64_t j = 0; j < m.inner; ++j) {
        const T* row = px + o * m.n * m.inner + j;
        T best = row[0];
        std::int64_t arg = 0;
        for (std::int64_t k = 1; k < m.n; ++k)
          if (row[k * m.inner] > best || (std::isnan(row[k * m.inner]) && !std::isnan(best))) {
            best = row[k * m.inner];
            arg = k;
          }
        pv[o * m.inner + j] = best;
        pi[o * m.inner + j] = arg;
      }
  });
}

// dx = zeros, with dx[o, index[o, j], j] = dy[o, j].
Tensor max_backward_cpu(const Tensor& dy, const Tensor& indices, const MaxGeometry& m) {
  Tensor dx = zeros(m.x_shape, dy.options());
  dispatch_floating(dy.dtype(), "max backward", [&]<typename T>() {
    const T* pg = detail::ptr<T>(dy);
    const std::int64_t* pi = detail::ptr<std::int64_t>(indices);
    T* pd = detail::ptr<T>(dx);
    for (std::int64_t o = 0; o < m.outer; ++o)
      for (std::int64_t j = 0; j < m.inner; ++j)
        pd[(o * m.n + pi[o * m.inner + j]) * m.inner + j] = pg[o * m.inner + j];
  });
  return dx;
}

// On the GPU the values are amax's and the indices argmax's (the same element).
void max_forward_cuda(const Tensor& x, const MaxGeometry& m, Tensor& values, Tensor& indices) {
  cuda::backend().reduce(cuda::Reduce::amax, x, full_rank_keep_shape(x, m.plan.keep_shape), values);
  cuda::backend().reduce(cuda::Reduce::argmax, x, m.plan.keep_shape, indices);
}

// The backward scatters dy to the argmax through a one-hot mask along d.
Tensor max_backward_cuda(const Tensor& dy, const Tensor& indices, const MaxGeometry& m) {
  Shape along(m.x_shape.size(), 1);
  if (!along.empty()) along[static_cast<std::size_t>(m.d)] = m.n;
  Tensor positions =
      arange(static_cast<double>(m.n), TensorOptions(kInt64).device(dy.device())).reshape(along);
  Tensor hit = eq(positions, indices);  // (.., n, ..) one-hot along d
  Tensor zero = zeros({}, dy.options());
  return where(hit, detail::alias(dy, m.plan.keep_shape), zero);
}
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
  for (std::int64_t i = 0; i < m.d; ++i) m.outer *= x.shape()[static_cast<std::size_t>(i)];
  for (std::int64_t i = m.d + 1; i < x.dim(); ++i)
    m.inner *= x.shape()[static_cast<std::size_t>(i)];
  // indices (keep_shape) is saved for the backward; the result shows them in out_shape.
  Tensor values = detail::new_tensor(m.plan.out_shape, x.dtype(), x.device());
  Tensor indices = detail::new_tensor(m.plan.keep_shape, kInt64, x.device());
  if (x.device().is_cuda())
    max_forward_cuda(x, m, values, indices);
  else
    max_forward_cpu(x, m, values, indices);
  MaxResult r{values, detail::alias(indices, m.plan.out_shape)};
  autograd::record(
      "max", {x}, {&r.values}, {indices}, [m](const Grads& g, const BackwardContext& ctx) {
        return Grads{g[0].device().is_cuda() ? max_backward_cuda(g[0], ctx.saved(0), m)
                                             : max_backward_cpu(g[0], ctx.saved(0), m)};
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
  Tensor out;
  if (x.device().is_cuda()) {
    out = cuda_reduce(cuda::Reduce::amax, x, plan.keep_shape, plan.keep_shape);
  } else {
    out = full(plan.keep_shape, -INFINITY, x.options());
    dispatch_floating(x.dtype(), "amax", [&]<typename T>() { reduce_into<T, true>(x, out); });
  }
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
