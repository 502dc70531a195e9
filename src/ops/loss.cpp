// Losses: cross_entropy (a fused log-softmax + negative log likelihood kernel) and mse_loss.
// Forward and backward of each op live side by side; both run on raw contiguous pointers.
#include "headgrad/ops/loss.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/cuda_backend.hpp"
#include "core/dispatch.hpp"
#include "headgrad/autograd/function.hpp"
#include "headgrad/autograd/grad_mode.hpp"
#include "headgrad/ops/elementwise.hpp"
#include "headgrad/ops/reduce.hpp"
#include "headgrad/ops/shape_ops.hpp"
#include "ops/cpu/broadcast.hpp"
#include "ops/cpu/simd.hpp"

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
// x[n*C*inner + c*inner + j] for c in [0, C), so the inner dim stays contiguous.
struct ClassLayout {
  std::int64_t outer = 1;
  std::int64_t classes = 0;
  std::int64_t inner = 1;
  std::int64_t positions() const { return outer * inner; }
};

ClassLayout check_cross_entropy_args(const Tensor& logits, const Tensor& targets,
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
  ClassLayout layout;
  if (shape.size() == 1) {
    layout.classes = shape[0];
  } else {
    layout.outer = shape[0];
    layout.classes = shape[1];
    for (std::size_t d = 2; d < shape.size(); ++d) layout.inner *= shape[d];
  }
  return layout;
}

// Throws IndexError for the first target outside [0, C) that is not ignore_index; returns
// the number of targets not ignored.
std::int64_t check_targets(const std::int64_t* targets, std::int64_t count, std::int64_t classes,
                           std::int64_t ignore_index) {
  std::int64_t kept = 0;
  for (std::int64_t p = 0; p < count; ++p) {
    const std::int64_t t = targets[p];
    if (t == ignore_index) continue;
    if (t < 0 || t >= classes)
      throw IndexError("cross_entropy: target " + std::to_string(t) + " (at flat position " +
                       std::to_string(p) + ") is out of range for " + std::to_string(classes) +
                       " classes: expected a class in [0, " + std::to_string(classes) +
                       ") or ignore_index " + std::to_string(ignore_index));
    ++kept;
  }
  return kept;
}

// acc[i] += exp(x[i] - shift[i]).
template <typename T>
void accumulate_exp_shift(const T* x, const T* shift, T* acc, std::int64_t n) {
  using batch = xsimd::batch<T>;
  constexpr std::int64_t w = static_cast<std::int64_t>(batch::size);
  std::int64_t i = 0;
  for (; i + w <= n; i += w) {
    batch e = cpu::simd_exp(batch::load_unaligned(x + i) - batch::load_unaligned(shift + i));
    (batch::load_unaligned(acc + i) + e).store_unaligned(acc + i);
  }
  for (; i < n; ++i) acc[i] += std::exp(x[i] - shift[i]);
}

// d[i] = scale[i] * (exp(x[i] - lse[i]) - offset).
template <typename T>
void scaled_softmax_minus(const T* x, const T* lse, const T* scale, T offset, T* d,
                          std::int64_t n) {
  using batch = xsimd::batch<T>;
  constexpr std::int64_t w = static_cast<std::int64_t>(batch::size);
  std::int64_t i = 0;
  const batch off(offset);
  for (; i + w <= n; i += w) {
    batch p = cpu::simd_exp(batch::load_unaligned(x + i) - batch::load_unaligned(lse + i));
    (batch::load_unaligned(scale + i) * (p - off)).store_unaligned(d + i);
  }
  for (; i < n; ++i) d[i] = scale[i] * (std::exp(x[i] - lse[i]) - offset);
}

// Forward, per position p with target t (not ignored) and smoothing eps:
//   lse_p  = log sum_c exp(x_pc)                      (max-shifted)
//   loss_p = (1-eps) * (lse_p - x_pt) + eps * (lse_p - mean_c x_pc)
// Ignored positions get loss 0. Writes loss (positions) and lse (positions).
template <typename T>
void cross_entropy_forward_kernel(const T* x, const std::int64_t* targets, const ClassLayout& L,
                                  std::int64_t ignore_index, T eps, T* loss, T* lse) {
  const std::int64_t C = L.classes;
  const T inv_classes = C > 0 ? T(1) / static_cast<T>(C) : T(0);
  if (L.inner == 1) {  // each position's logits are one contiguous row
    std::vector<T> scratch(static_cast<std::size_t>(C));
    for (std::int64_t p = 0; p < L.outer; ++p) {
      const T* row = x + p * C;
      const std::int64_t t = targets[p];
      if (t == ignore_index) {
        loss[p] = T(0);
        lse[p] = T(0);
        continue;
      }
      const T m = cpu::simd_max(row, C);
      const T l = m + std::log(cpu::simd_exp_shift_sum(row, scratch.data(), C, m));
      lse[p] = l;
      T value = l - row[t];
      if (eps > T(0))
        value = (T(1) - eps) * value + eps * (l - cpu::simd_sum(row, C) * inv_classes);
      loss[p] = value;
    }
    return;
  }
  // Class dim strided by `inner`: run the reductions over c with vectors along j.
  const std::int64_t inner = L.inner;
  std::vector<T> row_max(static_cast<std::size_t>(inner));
  std::vector<T> row_sum(static_cast<std::size_t>(inner));
  std::vector<T> row_total(static_cast<std::size_t>(inner));
  for (std::int64_t n = 0; n < L.outer; ++n) {
    const T* base = x + n * C * inner;
    std::fill(row_max.begin(), row_max.end(), T(-INFINITY));
    std::fill(row_sum.begin(), row_sum.end(), T(0));
    std::fill(row_total.begin(), row_total.end(), T(0));
    for (std::int64_t c = 0; c < C; ++c) {
      const T* xc = base + c * inner;
      for (std::int64_t j = 0; j < inner; ++j) row_max[j] = xc[j] > row_max[j] ? xc[j] : row_max[j];
    }
    for (std::int64_t c = 0; c < C; ++c) {
      const T* xc = base + c * inner;
      accumulate_exp_shift(xc, row_max.data(), row_sum.data(), inner);
      if (eps > T(0))
        for (std::int64_t j = 0; j < inner; ++j) row_total[j] += xc[j];
    }
    for (std::int64_t j = 0; j < inner; ++j) {
      const std::int64_t p = n * inner + j;
      const T l = row_max[j] + std::log(row_sum[j]);
      lse[p] = l;
      const std::int64_t t = targets[p];
      if (t == ignore_index) {
        loss[p] = T(0);
        continue;
      }
      T value = l - base[t * inner + j];
      if (eps > T(0)) value = (T(1) - eps) * value + eps * (l - row_total[j] * inv_classes);
      loss[p] = value;
    }
  }
}

// Backward: for a position p with upstream scale s_p (g_p for none, g for sum, g / kept for
// mean) and target t (not ignored):
//   dx_pc = s_p * (softmax_pc - eps/C - (1-eps) * [c == t])
// and dx_pc = 0 for ignored positions. softmax_pc = exp(x_pc - lse_p) from the saved lse.
template <typename T>
void cross_entropy_backward_kernel(const T* x, const std::int64_t* targets, const T* lse,
                                   const ClassLayout& L, std::int64_t ignore_index, T eps,
                                   const T* upstream, bool per_position, T* dx) {
  const std::int64_t C = L.classes;
  const T offset = C > 0 ? eps / static_cast<T>(C) : T(0);
  if (L.inner == 1) {
    for (std::int64_t p = 0; p < L.outer; ++p) {
      const T* row = x + p * C;
      T* drow = dx + p * C;
      const std::int64_t t = targets[p];
      if (t == ignore_index) {
        std::fill(drow, drow + C, T(0));
        continue;
      }
      const T s = per_position ? upstream[p] : upstream[0];
      const T l = lse[p];
      cpu::simd_map(row, drow, C, [&](auto v) {
        using V = decltype(v);
        return V(s) * (cpu::simd_exp(v - V(l)) - V(offset));
      });
      drow[t] -= s * (T(1) - eps);
    }
    return;
  }
  const std::int64_t inner = L.inner;
  std::vector<T> scale(static_cast<std::size_t>(inner));
  for (std::int64_t n = 0; n < L.outer; ++n) {
    const T* base = x + n * C * inner;
    T* dbase = dx + n * C * inner;
    const T* lse_n = lse + n * inner;
    const std::int64_t* t_n = targets + n * inner;
    for (std::int64_t j = 0; j < inner; ++j)
      scale[j] =
          t_n[j] == ignore_index ? T(0) : (per_position ? upstream[n * inner + j] : upstream[0]);
    for (std::int64_t c = 0; c < C; ++c)
      scaled_softmax_minus(base + c * inner, lse_n, scale.data(), offset, dbase + c * inner, inner);
    for (std::int64_t j = 0; j < inner; ++j) {
      const std::int64_t t = t_n[j];
      if (t == ignore_index) {  // exactly zero, even where the scale times a softmax is NaN
        for (std::int64_t c = 0; c < C; ++c) dbase[c * inner + j] = T(0);
        continue;
      }
      dbase[t * inner + j] -= scale[j] * (T(1) - eps);
    }
  }
}

// ============================================================================
// mse_loss helpers
// ============================================================================

// dst (dst_shape, zero-filled here) = sign * (src summed over the dims broadcast from
// dst_shape to src_shape): the gradient of broadcasting, on raw pointers.
template <typename T>
void sum_into_broadcast_source(const T* src, const Shape& src_shape, T* dst, const Shape& dst_shape,
                               T sign) {
  std::fill(dst, dst + numel_of(dst_shape), T(0));
  cpu::broadcast_loop<1>(src_shape, {dst_shape},
                         [&](std::int64_t o, const std::array<std::int64_t, 1>& offsets,
                             std::int64_t n, const std::array<std::int64_t, 1>& strides) {
                           T* d = dst + offsets[0];
                           const std::int64_t s = strides[0];
                           for (std::int64_t i = 0; i < n; ++i) d[i * s] += sign * src[o + i];
                         });
}

// What cross_entropy's forward leaves for its backward, on either device.
struct CrossEntropyArgs {
  ClassLayout layout;
  Reduction reduction;
  std::int64_t ignore_index;
  double label_smoothing;
};
struct CrossEntropyForward {
  Tensor out;             // the loss: per position, or 0-d
  Tensor lse;             // per-position log-sum-exp (positions), saved for the backward
  std::int64_t kept = 0;  // CPU: targets not ignored (the mean's count)
  Tensor kept_on_device;  // GPU: the same count as a 0-d tensor (no synchronization)
};

CrossEntropyForward cross_entropy_forward_cpu(const Tensor& logits, const Tensor& targets,
                                              const CrossEntropyArgs& a) {
  const std::int64_t positions = a.layout.positions();
  const DType dtype = logits.dtype();
  CrossEntropyForward f;
  f.kept = check_targets(detail::ptr<std::int64_t>(targets), positions, a.layout.classes,
                         a.ignore_index);
  Tensor per_position = detail::new_tensor(targets.shape(), dtype);
  f.lse = detail::new_tensor({positions}, dtype);
  detail::dispatch_floating(dtype, "cross_entropy", [&]<typename T>() {
    cross_entropy_forward_kernel<T>(detail::ptr<T>(logits), detail::ptr<std::int64_t>(targets),
                                    a.layout, a.ignore_index, static_cast<T>(a.label_smoothing),
                                    detail::ptr<T>(per_position), detail::ptr<T>(f.lse));
  });
  f.out = per_position;
  if (a.reduction != Reduction::none) {
    f.out = detail::new_tensor({}, dtype);
    detail::dispatch_floating(dtype, "cross_entropy", [&]<typename T>() {
      const T* values = detail::ptr<T>(per_position);
      double total = 0.0;  // ignored positions hold exactly 0
      for (std::int64_t p = 0; p < positions; ++p) total += static_cast<double>(values[p]);
      // A mean over zero kept targets is 0/0 = NaN, as PyTorch.
      if (a.reduction == Reduction::mean) total /= static_cast<double>(f.kept);
      detail::ptr<T>(f.out)[0] = static_cast<T>(total);
    });
  }
  return f;
}

Tensor cross_entropy_backward_cpu(const Tensor& upstream, const Tensor& x, const Tensor& targets,
                                  const Tensor& lse, const CrossEntropyArgs& a, std::int64_t kept) {
  Tensor dx = detail::new_tensor(x.shape(), x.dtype());
  detail::dispatch_floating(x.dtype(), "cross_entropy backward", [&]<typename T>() {
    const Tensor g = upstream.dtype() == x.dtype() ? upstream : upstream.to(x.dtype());
    T scalar_scale = T(0);
    if (a.reduction != Reduction::none) {
      const double gv = static_cast<double>(detail::ptr<T>(g)[0]);
      scalar_scale =
          static_cast<T>(a.reduction == Reduction::mean ? gv / static_cast<double>(kept) : gv);
    }
    cross_entropy_backward_kernel<T>(
        detail::ptr<T>(x), detail::ptr<std::int64_t>(targets), detail::ptr<T>(lse), a.layout,
        a.ignore_index, static_cast<T>(a.label_smoothing),
        a.reduction == Reduction::none ? detail::ptr<T>(g) : &scalar_scale,
        a.reduction == Reduction::none, detail::ptr<T>(dx));
  });
  return dx;
}

// On a GPU: the same formulas in two kernels. The target check reads one int64 back (a
// synchronization), so a bad target raises the CPU's IndexError; the mean's count of kept
// targets stays on the device.
CrossEntropyForward cross_entropy_forward_cuda(const Tensor& logits, const Tensor& targets,
                                               const CrossEntropyArgs& a) {
  const std::int64_t positions = a.layout.positions();
  const DType dtype = logits.dtype();
  CrossEntropyForward f;
  Tensor per_position = detail::new_tensor(targets.shape(), dtype, logits.device());
  f.lse = detail::new_tensor({positions}, dtype, logits.device());
  Tensor bad = detail::new_tensor({}, kInt64, logits.device());
  cuda::backend().cross_entropy_forward(logits, targets, a.layout.outer, a.layout.classes,
                                        a.layout.inner, a.ignore_index, a.label_smoothing,
                                        per_position, f.lse, bad);
  if (const std::int64_t at = bad.item<std::int64_t>(); at != 0) {
    const auto t = static_cast<std::int64_t>(detail::alias(targets, {positions}).at({at - 1}));
    throw IndexError("cross_entropy: target " + std::to_string(t) + " (at flat position " +
                     std::to_string(at - 1) + ") is out of range for " +
                     std::to_string(a.layout.classes) + " classes: expected a class in [0, " +
                     std::to_string(a.layout.classes) + ") or ignore_index " +
                     std::to_string(a.ignore_index));
  }
  NoGradGuard no_grad;
  f.out = per_position;
  if (a.reduction != Reduction::none) f.out = sum(per_position);
  if (a.reduction == Reduction::mean) {
    const Tensor ignored = full({}, static_cast<double>(a.ignore_index), targets.options());
    f.kept_on_device = sum(ne(targets, ignored).to(dtype));
    f.out = div(f.out, f.kept_on_device);  // 0/0 = NaN over zero kept targets, as PyTorch
  }
  return f;
}

Tensor cross_entropy_backward_cuda(const Tensor& upstream, const Tensor& x, const Tensor& targets,
                                   const Tensor& lse, const CrossEntropyArgs& a,
                                   const Tensor& kept) {
  Tensor g = upstream.dtype() == x.dtype() ? upstream : upstream.to(x.dtype());
  if (a.reduction != Reduction::none) {  // one scale for every position
    if (a.reduction == Reduction::mean) g = div(g, kept);
    g = expand(reshape(g, {1}), {a.layout.positions()});
  }
  Tensor dx = detail::new_tensor(x.shape(), x.dtype(), x.device());
  cuda::backend().cross_entropy_backward(g, x, lse, targets, a.layout.outer, a.layout.classes,
                                         a.layout.inner, a.ignore_index, a.label_smoothing, dx);
  return dx;
}

}  // namespace

// cross_entropy: logits (outer, C, inner), int64 targets (outer, inner) -> loss
//   none: (targets' shape); mean / sum: 0-d.
//   forward  loss_p = (1-eps)(lse_p - x_pt) + eps (lse_p - mean_c x_pc), 0 where ignored
//   backward dx_pc  = s_p (softmax_pc - eps/C - (1-eps)[c == t_p]), 0 where ignored
// Saves the logits (a handle, no copy), the targets and the per-position log-sum-exp
// (outer*inner values); backward recomputes softmax = exp(x - lse). Not twice
// differentiable (the backward is a plain kernel).
Tensor cross_entropy(const Tensor& logits, const Tensor& targets, Reduction reduction,
                     std::int64_t ignore_index, double label_smoothing) {
  const CrossEntropyArgs args{check_cross_entropy_args(logits, targets, label_smoothing), reduction,
                              ignore_index, label_smoothing};
  const CrossEntropyForward f = logits.device().is_cuda()
                                    ? cross_entropy_forward_cuda(logits, targets, args)
                                    : cross_entropy_forward_cpu(logits, targets, args);
  Tensor out = f.out;
  autograd::record(
      "cross_entropy", {logits}, {&out}, {logits, targets, f.lse},
      [args, kept = f.kept, kept_on_device = f.kept_on_device](
          const std::vector<Tensor>& grads, const autograd::BackwardContext& ctx) {
        const Tensor& upstream = grads[0];
        if (!upstream.defined() || !ctx.needs_grad(0)) return std::vector<Tensor>{Tensor()};
        const Tensor& x = ctx.saved(0);
        const Tensor& targets = ctx.saved(1);
        const Tensor& lse = ctx.saved(2);
        return std::vector<Tensor>{
            x.device().is_cuda()
                ? cross_entropy_backward_cuda(upstream, x, targets, lse, args, kept_on_device)
                : cross_entropy_backward_cpu(upstream, x, targets, lse, args, kept)};
      });
  return out;
}

namespace {

// mse_loss's kernels. The CPU's are loops over the broadcast operands; a GPU's are the
// same formulas as ops (run without a graph: the one record is mse_loss's).
struct MseArgs {
  Shape out_shape;  // broadcast(input, target)
  Reduction reduction;
  std::int64_t count;  // elements of out_shape
};

Tensor mse_forward_cpu(const Tensor& input, const Tensor& target, const MseArgs& m) {
  constexpr const char* op = "mse_loss";
  const Shape& out_shape = m.out_shape;
  const Reduction reduction = m.reduction;
  const std::int64_t count = m.count;
  const DType dtype = input.dtype();
  Tensor out = detail::new_tensor(reduction == Reduction::none ? out_shape : Shape{}, dtype);
  detail::dispatch_floating(dtype, op, [&]<typename T>() {
    const T* a = detail::ptr<T>(input);
    const T* b = detail::ptr<T>(target);
    T* y = detail::ptr<T>(out);
    double total = 0.0;
    cpu::broadcast_loop<2>(out_shape, {input.shape(), target.shape()},
                           [&](std::int64_t o, const std::array<std::int64_t, 2>& offsets,
                               std::int64_t n, const std::array<std::int64_t, 2>& strides) {
                             const T* ai = a + offsets[0];
                             const T* bi = b + offsets[1];
                             if (reduction == Reduction::none) {
                               for (std::int64_t i = 0; i < n; ++i) {
                                 const T d = ai[i * strides[0]] - bi[i * strides[1]];
                                 y[o + i] = d * d;
                               }
                             } else {
                               T run = T(0);
                               for (std::int64_t i = 0; i < n; ++i) {
                                 const T d = ai[i * strides[0]] - bi[i * strides[1]];
                                 run += d * d;
                               }
                               total += static_cast<double>(run);
                             }
                           });
    if (reduction == Reduction::mean) total /= static_cast<double>(count);  // empty: NaN
    if (reduction != Reduction::none) y[0] = static_cast<T>(total);
  });

  return out;
}

std::vector<Tensor> mse_backward_cpu(const Tensor& upstream, const Tensor& a_t, const Tensor& b_t,
                                     const MseArgs& m, const autograd::BackwardContext& ctx) {
  const Shape& out_shape = m.out_shape;
  const Reduction reduction = m.reduction;
  const std::int64_t count = m.count;
  std::vector<Tensor> result(2);
  detail::dispatch_floating(a_t.dtype(), "mse_loss backward", [&]<typename T>() {
    const Tensor g = upstream.dtype() == a_t.dtype() ? upstream : upstream.to(a_t.dtype());
    const T* gp = detail::ptr<T>(g);
    const bool per_element = reduction == Reduction::none;
    const T scale = static_cast<T>(
        per_element ? 0.0
                    : 2.0 * static_cast<double>(gp[0]) /
                          (reduction == Reduction::mean ? static_cast<double>(count) : 1.0));
    Tensor d = detail::new_tensor(out_shape, a_t.dtype());
    const T* a = detail::ptr<T>(a_t);
    const T* b = detail::ptr<T>(b_t);
    T* dp = detail::ptr<T>(d);
    if (count > 0)
      cpu::broadcast_loop<2>(out_shape, {a_t.shape(), b_t.shape()},
                             [&](std::int64_t o, const std::array<std::int64_t, 2>& offsets,
                                 std::int64_t n, const std::array<std::int64_t, 2>& strides) {
                               const T* ai = a + offsets[0];
                               const T* bi = b + offsets[1];
                               for (std::int64_t i = 0; i < n; ++i) {
                                 const T diff = ai[i * strides[0]] - bi[i * strides[1]];
                                 dp[o + i] = per_element ? T(2) * diff * gp[o + i] : scale * diff;
                               }
                             });
    if (ctx.needs_grad(1)) {
      Tensor db = detail::new_tensor(b_t.shape(), b_t.dtype());
      sum_into_broadcast_source<T>(dp, out_shape, detail::ptr<T>(db), b_t.shape(), T(-1));
      result[1] = db;
    }
    if (ctx.needs_grad(0)) {
      if (a_t.shape() == out_shape) {
        result[0] = d;
      } else {
        Tensor da = detail::new_tensor(a_t.shape(), a_t.dtype());
        sum_into_broadcast_source<T>(dp, out_shape, detail::ptr<T>(da), a_t.shape(), T(1));
        result[0] = da;
      }
    }
  });
  return result;
}

Tensor mse_forward_cuda(const Tensor& input, const Tensor& target, const MseArgs& m) {
  NoGradGuard no_grad;
  const Tensor diff = sub(input, target);
  const Tensor squared = mul(diff, diff);
  if (m.reduction == Reduction::none) return squared;
  return m.reduction == Reduction::sum ? sum(squared) : mean(squared);
}

// d = 2 (a - b) g (none) or 2 (a - b) g / count (mean; sum: count 1), summed back to each
// operand's shape; the target's gradient is -d.
std::vector<Tensor> mse_backward_cuda(const Tensor& upstream, const Tensor& a, const Tensor& b,
                                      const MseArgs& m, const autograd::BackwardContext& ctx) {
  const Tensor g = upstream.dtype() == a.dtype() ? upstream : upstream.to(a.dtype());
  const double scale = m.reduction == Reduction::mean ? 2.0 / static_cast<double>(m.count) : 2.0;
  const Tensor d = mul(sub(a, b), mul(g, scale));  // (out_shape); a 0-d g broadcasts
  std::vector<Tensor> result(2);
  if (ctx.needs_grad(0)) result[0] = a.shape() == m.out_shape ? d : sum_to(d, a.shape());
  if (ctx.needs_grad(1)) result[1] = neg(sum_to(d, b.shape()));
  return result;
}

}  // namespace

// mse_loss: input a and target b broadcast together to shape S -> loss
//   none: S (a - b)^2; mean: sum (a - b)^2 / numel(S); sum: sum (a - b)^2.
//   backward d = 2 (a - b) s with s = g (none, elementwise), g / numel(S) (mean), g (sum);
//   da = sum_to(d, a.shape), db = -sum_to(d, b.shape).
// Saves the input and target (handles) and recomputes a - b in backward.
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  detail::check_float_op("mse_loss", input, target);
  const Shape out_shape = broadcast_shapes(input.shape(), target.shape(), "mse_loss");
  const MseArgs args{out_shape, reduction, numel_of(out_shape)};
  Tensor out = input.device().is_cuda() ? mse_forward_cuda(input, target, args)
                                        : mse_forward_cpu(input, target, args);
  autograd::record("mse_loss", {input, target}, {&out}, {input, target},
                   [args](const std::vector<Tensor>& grads, const autograd::BackwardContext& ctx) {
                     const Tensor& upstream = grads[0];
                     if (!upstream.defined()) return std::vector<Tensor>{Tensor(), Tensor()};
                     const Tensor& a = ctx.saved(0);
                     const Tensor& b = ctx.saved(1);
                     return a.device().is_cuda() ? mse_backward_cuda(upstream, a, b, args, ctx)
                                                 : mse_backward_cpu(upstream, a, b, args, ctx);
                   });
  return out;
}

}  // namespace headgrad
