// The losses on the GPU: cross_entropy's forward and backward kernels, and mse_loss from
// the backend's elementwise kernels (spec: Kernels, src/core/kernels.hpp).
//
// Logits are viewed as (outer, C, inner); a position p = o*inner + j has target t_p and
// logits x[o*C*inner + c*inner + j], c < C. With label smoothing eps:
//   lse_p  = m_p + log sum_c exp(x_pc - m_p),   m_p = max_c x_pc
//   loss_p = (1-eps) (lse_p - x_pt) + eps (lse_p - mean_c x_pc),   0 where t_p == ignore
//   dx_pc  = g_p (exp(x_pc - lse_p) - eps/C - (1-eps)[c == t_p]),  0 where t_p == ignore
// Launches:
//   inner == 1: one warp per position (C <= 1024, 4 positions per 128-thread block) or one
//               block per position (larger C, e.g. a vocabulary); strided loops over the
//               row, shuffle/shared-memory reductions.
//   inner > 1:  one thread per position looping over the C classes with stride inner, as
//               the CPU's column code (adjacent threads read adjacent addresses).
// Bad targets (outside [0, C), not ignore_index) are found by a separate deterministic
// min-reduction into `bad_target`; their losses are NaN (never read out of bounds) and the
// caller raises the CPU's IndexError.
#include "core/dispatch.hpp"
#include "cuda/backend.hpp"
#include "cuda/common.cuh"
#include "cuda/kernels/kernel_util.cuh"

namespace headgrad::cuda {

namespace {

// A group of threads per position: a warp (kBlock false) or the whole block (kBlock true).
template <bool kBlock>
struct Group {
  std::int64_t first, stride;  // first position of this group, step between positions
  int lane, size;              // thread's index in the group, group size

  __device__ Group() {
    if constexpr (kBlock) {
      first = blockIdx.x;
      stride = gridDim.x;
      lane = static_cast<int>(threadIdx.x);
      size = static_cast<int>(blockDim.x);
    } else {
      const int warps = static_cast<int>(blockDim.x) / kWarp;
      first = static_cast<std::int64_t>(blockIdx.x) * warps + threadIdx.x / kWarp;
      stride = static_cast<std::int64_t>(gridDim.x) * warps;
      lane = static_cast<int>(threadIdx.x) % kWarp;
      size = kWarp;
    }
  }

  template <typename T, typename Op>
  __device__ T all_reduce(T v, Op op, T* scratch) const {
    if constexpr (kBlock)
      return block_all_reduce(v, op, scratch);
    else
      return warp_all_reduce(v, op);
  }
};

// Per-position loss from the reductions (lse = l, sum of logits = total, x_t = target logit).
template <typename T>
__device__ __forceinline__ T position_loss(T l, T x_t, T total, T eps, T inv_classes) {
  T value = l - x_t;
  if (eps > T(0)) value = (T(1) - eps) * value + eps * (l - total * inv_classes);
  return value;
}

// x: (P, C) rows, targets, loss, lse: (P). As the CPU's row code, an ignored position
// writes loss 0 and lse 0.
template <typename T, bool kBlock>
__global__ void forward_row_kernel(const T* __restrict__ x,
                                   const std::int64_t* __restrict__ targets, std::int64_t positions,
                                   std::int64_t classes, std::int64_t ignore_index, T eps,
                                   T* __restrict__ loss, T* __restrict__ lse) {
  __shared__ T scratch[32];
  const Group<kBlock> grp;
  const T inv_classes = T(1) / static_cast<T>(classes);
  const bool smooth = eps > T(0);
  for (std::int64_t p = grp.first; p < positions; p += grp.stride) {  // uniform per group
    const std::int64_t t = targets[p];
    if (t == ignore_index) {
      if (grp.lane == 0) {
        loss[p] = T(0);
        lse[p] = T(0);
      }
      continue;
    }
    const T* row = x + p * classes;
    T m = neg_inf<T>();
#pragma unroll 4
    for (std::int64_t c = grp.lane; c < classes; c += grp.size) m = max_nan(m, row[c]);
    m = grp.all_reduce(m, MaxNanOp{}, scratch);
    T s = T(0), total = T(0);
#pragma unroll 4
    for (std::int64_t c = grp.lane; c < classes; c += grp.size) {
      const T v = row[c];
      s += dexp(v - m);
      total += v;
    }
    s = grp.all_reduce(s, SumOp{}, scratch);
    if (smooth) total = grp.all_reduce(total, SumOp{}, scratch);
    if (grp.lane == 0) {
      const T l = m + dlog(s);
      lse[p] = l;
      const bool bad = t < 0 || t >= classes;
      loss[p] = bad ? quiet_nan<T>() : position_loss(l, row[t], total, eps, inv_classes);
    }
  }
}

// x: (outer, C, inner), inner > 1; one thread per position. As the CPU's column code, the
// max uses `>` (a NaN still poisons the exp sum) and lse is written for ignored positions.
template <typename T>
__global__ void forward_column_kernel(const T* __restrict__ x,
                                      const std::int64_t* __restrict__ targets, std::int64_t outer,
                                      std::int64_t classes, std::int64_t inner,
                                      std::int64_t ignore_index, T eps, T* __restrict__ loss,
                                      T* __restrict__ lse) {
  const std::int64_t positions = outer * inner;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  const T inv_classes = T(1) / static_cast<T>(classes);
  const bool smooth = eps > T(0);
  for (std::int64_t p = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       p < positions; p += stride) {
    const std::int64_t o = p / inner;
    const T* xc = x + o * classes * inner + (p - o * inner);
    T m = neg_inf<T>();
    for (std::int64_t c = 0; c < classes; ++c) {
      const T v = xc[c * inner];
      m = v > m ? v : m;
    }
    T s = T(0), total = T(0);
    for (std::int64_t c = 0; c < classes; ++c) {
      const T v = xc[c * inner];
      s += dexp(v - m);
      if (smooth) total += v;
    }
    const T l = m + dlog(s);
    lse[p] = l;
    const std::int64_t t = targets[p];
    if (t == ignore_index)
      loss[p] = T(0);
    else if (t < 0 || t >= classes)
      loss[p] = quiet_nan<T>();
    else
      loss[p] = position_loss(l, xc[t * inner], total, eps, inv_classes);
  }
}

// dx_pc = g_p (exp(x_pc - lse_p) - eps/C) - g_p (1-eps) [c == t_p]; 0 rows where ignored.
// x, dx: (P, C) rows; g, lse, targets: (P).
template <typename T, bool kBlock>
__global__ void backward_row_kernel(const T* __restrict__ g, const T* __restrict__ x,
                                    const T* __restrict__ lse,
                                    const std::int64_t* __restrict__ targets,
                                    std::int64_t positions, std::int64_t classes,
                                    std::int64_t ignore_index, T eps, T* __restrict__ dx) {
  const Group<kBlock> grp;
  const T offset = eps / static_cast<T>(classes);
  for (std::int64_t p = grp.first; p < positions; p += grp.stride) {
    const std::int64_t t = targets[p];
    T* drow = dx + p * classes;
    if (t == ignore_index) {  // exactly zero, even where g * softmax would be NaN
      for (std::int64_t c = grp.lane; c < classes; c += grp.size) drow[c] = T(0);
      continue;
    }
    const T* row = x + p * classes;
    const T sc = g[p];
    const T l = lse[p];
    const T target_term = sc * (T(1) - eps);
#pragma unroll 4
    for (std::int64_t c = grp.lane; c < classes; c += grp.size) {
      T v = sc * (dexp(row[c] - l) - offset);
      if (c == t) v -= target_term;
      drow[c] = v;
    }
  }
}

// (outer, C, inner) with inner > 1: one thread per position.
template <typename T>
__global__ void backward_column_kernel(const T* __restrict__ g, const T* __restrict__ x,
                                       const T* __restrict__ lse,
                                       const std::int64_t* __restrict__ targets, std::int64_t outer,
                                       std::int64_t classes, std::int64_t inner,
                                       std::int64_t ignore_index, T eps, T* __restrict__ dx) {
  const std::int64_t positions = outer * inner;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  const T offset = eps / static_cast<T>(classes);
  for (std::int64_t p = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       p < positions; p += stride) {
    const std::int64_t o = p / inner;
    const std::int64_t base = o * classes * inner + (p - o * inner);
    const T* xc = x + base;
    T* dc = dx + base;
    const std::int64_t t = targets[p];
    if (t == ignore_index) {
      for (std::int64_t c = 0; c < classes; ++c) dc[c * inner] = T(0);
      continue;
    }
    const T sc = g[p];
    const T l = lse[p];
    const T target_term = sc * (T(1) - eps);
    for (std::int64_t c = 0; c < classes; ++c) {
      T v = sc * (dexp(xc[c * inner] - l) - offset);
      if (c == t) v -= target_term;
      dc[c * inner] = v;
    }
  }
}

// Per-position losses, lse and the bad-target check.
void launch_forward(const Tensor& logits, const Tensor& targets, std::int64_t outer,
                    std::int64_t classes, std::int64_t inner, std::int64_t ignore_index,
                    double label_smoothing, Tensor& losses, Tensor& lse, Tensor& bad_target) {
  constexpr const char* op = "cross_entropy";
  dispatch_floating(logits.dtype(), op, [&]<typename T>() {
    const std::int64_t positions = outer * inner;
    const std::int64_t* tp = dptr<std::int64_t>(targets);
    first_bad_index(tp, positions, classes, /*has_ignore=*/true, ignore_index,
                    dptr<std::int64_t>(bad_target), bad_target, op);
    if (positions == 0) return;
    cudaStream_t s = stream_of(losses);
    const T* xp = dptr<T>(logits);
    const T eps = static_cast<T>(label_smoothing);
    T* lp = dptr<T>(losses);
    T* sp = dptr<T>(lse);
    if (inner > 1) {
      forward_column_kernel<T><<<blocks_for(positions), kThreads, 0, s>>>(
          xp, tp, outer, classes, inner, ignore_index, eps, lp, sp);
    } else if (classes <= kWarpRowMax) {
      forward_row_kernel<T, false>
          <<<row_grid(positions, kWarpRowThreads / kWarp), kWarpRowThreads, 0, s>>>(
              xp, tp, positions, classes, ignore_index, eps, lp, sp);
    } else {
      forward_row_kernel<T, true><<<row_grid(positions, 1), row_block_threads(classes), 0, s>>>(
          xp, tp, positions, classes, ignore_index, eps, lp, sp);
    }
    check_launch(op);
  });
}

// dlogits from one upstream scale per position (g: outer*inner elements).
void launch_backward(const Tensor& g, const Tensor& logits, const Tensor& lse,
                     const Tensor& targets, std::int64_t outer, std::int64_t classes,
                     std::int64_t inner, std::int64_t ignore_index, double label_smoothing,
                     Tensor& dlogits) {
  constexpr const char* op = "cross_entropy backward";
  dispatch_floating(logits.dtype(), op, [&]<typename T>() {
    const std::int64_t positions = outer * inner;
    if (positions == 0 || classes == 0) return;
    cudaStream_t s = stream_of(dlogits);
    const T* gp = dptr<T>(g);
    const T* xp = dptr<T>(logits);
    const T* sp = dptr<T>(lse);
    const std::int64_t* tp = dptr<std::int64_t>(targets);
    const T eps = static_cast<T>(label_smoothing);
    T* dp = dptr<T>(dlogits);
    if (inner > 1) {
      backward_column_kernel<T><<<blocks_for(positions), kThreads, 0, s>>>(
          gp, xp, sp, tp, outer, classes, inner, ignore_index, eps, dp);
    } else if (classes <= kWarpRowMax) {
      backward_row_kernel<T, false>
          <<<row_grid(positions, kWarpRowThreads / kWarp), kWarpRowThreads, 0, s>>>(
              gp, xp, sp, tp, positions, classes, ignore_index, eps, dp);
    } else {
      backward_row_kernel<T, true><<<row_grid(positions, 1), row_block_threads(classes), 0, s>>>(
          gp, xp, sp, tp, positions, classes, ignore_index, eps, dp);
    }
    check_launch(op);
  });
}

}  // namespace

// The reductions and the count of kept targets are this backend's own kernels (reduce,
// binary, convert), queued on the same stream: nothing is read back but `bad_target`, by
// the op.
void CudaBackend::cross_entropy_forward(const Tensor& logits, const Tensor& targets,
                                        const CrossEntropyProblem& p, Tensor& out, Tensor& lse,
                                        Tensor& kept, Tensor& bad_target) {
  const Device device = logits.device();
  const DType dtype = logits.dtype();
  const std::int64_t positions = p.positions();
  const bool reduced = p.reduction != Reduction::none;
  Tensor losses = reduced ? detail::new_tensor({positions}, dtype, device) : out;
  launch_forward(logits, targets, p.outer, p.classes, p.inner, p.ignore_index, p.label_smoothing,
                 losses, lse, bad_target);
  // kept = sum(targets != ignore_index), counted in float64 (exact below 2^53 positions).
  Tensor ignore = detail::new_tensor({}, DType::int64, device);
  fill(ignore, static_cast<double>(p.ignore_index));
  Tensor is_kept = detail::new_tensor({positions}, DType::boolean, device);
  binary(Binary::ne, detail::alias(targets, {positions}), ignore, is_kept, 1.0);
  Tensor kept_each = detail::new_tensor({positions}, DType::float64, device);
  convert(is_kept, kept_each);
  Tensor kept_count = detail::new_tensor({}, DType::float64, device);
  reduce(Reduce::sum, kept_each, {1}, kept_count);
  convert(kept_count, kept);
  if (!reduced) return;
  Tensor total = p.reduction == Reduction::mean ? detail::new_tensor({}, dtype, device) : out;
  reduce(Reduce::sum, losses, {1}, total);
  if (p.reduction != Reduction::mean) return;
  Tensor count = detail::new_tensor({}, dtype, device);
  convert(kept_count, count);
  binary(Binary::div, total, count, out, 1.0);  // 0/0 = NaN when every target is ignored
}

void CudaBackend::cross_entropy_backward(const Tensor& g, const Tensor& logits, const Tensor& lse,
                                         const Tensor& targets, const Tensor& kept,
                                         const CrossEntropyProblem& p, Tensor& dlogits) {
  Tensor per_position = g;
  if (p.reduction != Reduction::none) {  // one scale for every position
    const Device device = logits.device();
    const DType dtype = logits.dtype();
    Tensor scale = g;
    if (p.reduction == Reduction::mean) {
      Tensor count = detail::new_tensor({}, dtype, device);
      convert(kept, count);
      scale = detail::new_tensor({}, dtype, device);
      binary(Binary::div, g, count, scale, 1.0);
    }
    per_position = detail::new_tensor({p.positions()}, dtype, device);
    expand(scale, per_position);
  }
  launch_backward(per_position, logits, lse, targets, p.outer, p.classes, p.inner, p.ignore_index,
                  p.label_smoothing, dlogits);
}

// mse_loss from this backend's elementwise and reduction kernels (the same formulas as the
// CPU's loops, rounded as those kernels round).
void CudaBackend::mse_forward(const Tensor& a, const Tensor& b, const Shape& shape,
                              Reduction reduction, Tensor& out) {
  const Device device = a.device();
  Tensor diff = detail::new_tensor(shape, a.dtype(), device);
  binary(Binary::add, a, b, diff, -1.0);  // a + (-1) b: exactly a - b
  Tensor squared =
      reduction == Reduction::none ? out : detail::new_tensor(shape, a.dtype(), device);
  binary(Binary::mul, diff, diff, squared, 1.0);
  if (reduction == Reduction::none) return;
  const Shape all(shape.size(), 1);
  if (reduction == Reduction::sum) {
    reduce(Reduce::sum, squared, all, out);
    return;
  }
  Tensor total = detail::new_tensor({}, a.dtype(), device);
  reduce(Reduce::sum, squared, all, total);
  unary(Unary::div_scalar, total, out, static_cast<double>(numel_of(shape)), 0.0);  // empty: NaN
}

namespace {

// keep_shape for summing a tensor of rank `rank` down to `operand` (right-aligned).
Shape padded_to(const Shape& operand, std::size_t rank) {
  Shape keep(rank - operand.size(), 1);
  keep.insert(keep.end(), operand.begin(), operand.end());
  return keep;
}

}  // namespace

void CudaBackend::mse_backward(const Tensor& g, const Tensor& a, const Tensor& b,
                               const Shape& shape, Reduction reduction, Tensor& da, Tensor& db) {
  const Device device = a.device();
  const DType dtype = a.dtype();
  const double scale =
      reduction == Reduction::mean ? 2.0 / static_cast<double>(numel_of(shape)) : 2.0;
  Tensor scaled_g = detail::new_tensor(g.shape(), dtype, device);
  unary(Unary::mul_scalar, g, scaled_g, scale, 0.0);
  Tensor diff = detail::new_tensor(shape, dtype, device);
  binary(Binary::add, a, b, diff, -1.0);
  const bool d_is_da = da.defined() && a.shape() == shape;
  Tensor d = d_is_da ? da : detail::new_tensor(shape, dtype, device);
  binary(Binary::mul, diff, scaled_g, d, 1.0);  // a 0-d scaled_g broadcasts
  if (da.defined() && !d_is_da) reduce(Reduce::sum, d, padded_to(a.shape(), shape.size()), da);
  if (db.defined()) {
    Tensor summed = detail::new_tensor(b.shape(), dtype, device);
    reduce(Reduce::sum, d, padded_to(b.shape(), shape.size()), summed);
    unary(Unary::neg, summed, db, 0.0, 0.0);
  }
}

}  // namespace headgrad::cuda
