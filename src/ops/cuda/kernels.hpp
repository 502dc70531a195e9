// The CUDA kernels behind the ops, as host functions the CPU-side op code calls when its
// inputs live on a GPU (src/ops/*.cpp: `if (x.device().is_cuda()) cuda::...`). The op code
// keeps everything that is not a kernel: argument checks, shapes, allocation (outputs are
// allocated by the caller, contiguous, on the inputs' device) and the autograd graph.
//
// Rules every kernel follows:
// - Inputs and outputs are contiguous tensors on the same GPU; the caller has checked
//   dtypes and shapes. Floating kernels take float32 or float64 (dispatched inside).
// - Work is queued on the device's one stream (src/cuda/common.cuh) and never reduced with
//   atomics, so results are bitwise reproducible run to run.
// - Semantics are the CPU op's, including NaN and -inf conventions: the CPU code next to
//   each call is the specification, and the parity suite (tests/cuda) compares the two.
//
// In a build without CUDA the functions exist but throw DeviceError (no CUDA tensor can
// exist there, so they are never reached).
#pragma once

#include <cstdint>

#include "headgrad/core/tensor.hpp"
#include "headgrad/ops/softmax.hpp"

#if defined(HEADGRAD_WITH_CUDA)
#define HEADGRAD_CUDA_KERNEL(...) __VA_ARGS__;
#else
#define HEADGRAD_CUDA_KERNEL(...) \
  [[noreturn]] inline __VA_ARGS__ { ::headgrad::cuda::throw_not_built(); }
#endif

namespace headgrad::cuda {

[[noreturn]] void throw_not_built();

// --- memory-level kernels (any dtype) ---------------------------------------------

// Every element of `out` = value (converted to out's dtype; bool: value != 0).
HEADGRAD_CUDA_KERNEL(void fill(Tensor& out, double value))
// dst = src converted elementwise to dst's dtype (same numel; float->int64 truncates
// toward zero, anything->bool is != 0, as static_cast on the CPU).
HEADGRAD_CUDA_KERNEL(void convert(const Tensor& src, Tensor& dst))
// A strided copy of any rank <= 8, same dtype: for every index i of `sizes`,
//   dst[dst_offset + sum_d i_d * dst_strides[d]] = src[src_offset + sum_d i_d * src_strides[d]]
// (offsets and strides in elements, relative to each tensor's first element). Strides of 0
// broadcast (expand); permute, narrow, slice, select, concat and their backwards are all
// this one kernel.
HEADGRAD_CUDA_KERNEL(void copy_strided(const Tensor& src, std::int64_t src_offset,
                                       const Shape& src_strides, Tensor& dst,
                                       std::int64_t dst_offset, const Shape& dst_strides,
                                       const Shape& sizes))

// --- elementwise ----------------------------------------------------------------------

// y = f(x), same shape. `a` and `b` are the op's scalars where it has them.
enum class Unary {
  neg,
  exp,
  log,
  sqrt,
  rsqrt,
  abs,
  tanh,
  sigmoid,
  relu,
  gelu,         // exact, x * Phi(x)
  gelu_tanh,    // the tanh approximation
  clamp,        // min(max(x, a), b)
  add_scalar,   // x + a
  rsub_scalar,  // a - x
  mul_scalar,   // x * a
  div_scalar,   // x / a
  rdiv_scalar,  // a / x
  pow_scalar,   // x ^ a
  rpow_scalar,  // a ^ x
};
HEADGRAD_CUDA_KERNEL(void unary(Unary op, const Tensor& x, Tensor& out, double a, double b))

// dx = g * f'(...) for the ops whose gradient is not itself a simple op. `saved` is, per op:
//   exp: y -> g*y            log: x -> g/x               sqrt: y -> g/(2y)
//   rsqrt: y -> -g*y^3/2     abs: x -> g*sign(x), 0 at 0 tanh: y -> g*(1-y^2)
//   sigmoid: y -> g*y*(1-y)  relu: y -> y>0 ? g : 0
//   gelu / gelu_tanh: x -> g * d/dx gelu(x)
//   clamp: x -> a<=x<=b ? g : 0
//   rdiv_scalar: y -> -g*y*y/a (d(a/x) = -a/x^2 = -y^2/a; a != 0)
//   pow_scalar: x -> a==0 ? 0 : g*a*x^(a-1)
//   rpow_scalar: y -> g*y*ln(a)
HEADGRAD_CUDA_KERNEL(void unary_backward(Unary op, const Tensor& g, const Tensor& saved, Tensor& dx,
                                         double a, double b))

// out = f(x, y) with x, y broadcast (right-aligned, as the CPU's broadcast_strides) to
// out's shape. x, y and out share the dtype, except comparisons (bool out, any input
// dtype). `alpha` is add's scale. `out` may be `x` itself (in-place add_, same shape).
enum class Binary {
  add,                // x + alpha*y
  mul,                // x * y
  div,                // x / y
  pow,                // x ^ y
  maximum,            // NaN if either is NaN (x > y || x != x ? x : y)
  minimum,            // (x < y || x != x ? x : y)
  pow_grad_base,      // d(x^y)/dx = y==0 ? 0 : y*x^(y-1)
  pow_grad_exponent,  // d(x^y)/dy = (x==0 && y>=0) ? 0 : x^y*ln(x)
  max_weight,         // x==y ? 0.5 : (x>y ? 1 : 0), the share of maximum's gradient x gets
  min_weight,         // x==y ? 0.5 : (x<y ? 1 : 0)
  eq,
  ne,
  lt,
  le,
  gt,
  ge,
};
HEADGRAD_CUDA_KERNEL(void binary(Binary op, const Tensor& x, const Tensor& y, Tensor& out,
                                 double alpha))
// out = cond ? x : y, all three broadcast to out's shape; cond is bool, x/y/out share
// out's dtype (any).
HEADGRAD_CUDA_KERNEL(void where(const Tensor& cond, const Tensor& x, const Tensor& y, Tensor& out))
// out = !x for bool x.
HEADGRAD_CUDA_KERNEL(void logical_not(const Tensor& x, Tensor& out))
// out = mask ? value : x, mask (bool) broadcast to x's shape; floating x.
HEADGRAD_CUDA_KERNEL(void masked_fill(const Tensor& x, const Tensor& mask, double value,
                                      Tensor& out))

// --- reductions -------------------------------------------------------------------

// Reduces x over the dims where keep_shape is 1 and x is not (keep_shape has x's rank);
// out has keep_shape's numel. Floating x; argmax writes int64 (the first maximal index
// along the single reduced dim; NaN counts as maximal, as the CPU's).
//   sum: the sum.   amax: the maximum (NaN propagates; -inf for all -inf).
//   argmax: exactly one reduced dim.
enum class Reduce { sum, amax, argmax };
HEADGRAD_CUDA_KERNEL(void reduce(Reduce op, const Tensor& x, const Shape& keep_shape, Tensor& out))

// --- softmax, normalization, losses -----------------------------------------------------

// x viewed as (outer, dim, inner), softmax (or log_softmax) along the middle dim, with the
// CPU's conventions for all -inf rows: standard mode gives NaN, safe mode gives 0 for
// softmax and -inf for log_softmax.
HEADGRAD_CUDA_KERNEL(void softmax_forward(const Tensor& x, std::int64_t outer, std::int64_t dim,
                                          std::int64_t inner, bool log, SoftmaxMode mode,
                                          Tensor& out))
// Given y = the forward's output and g = dL/dy:
//   softmax:     dx = y * (g - sum(g*y))
//   log_softmax: dx = g - exp(y) * sum(g)   (safe mode: 0 on rows whose y is all -inf)
HEADGRAD_CUDA_KERNEL(void softmax_backward(const Tensor& g, const Tensor& y, std::int64_t outer,
                                           std::int64_t dim, std::int64_t inner, bool log,
                                           SoftmaxMode mode, Tensor& dx))

// Layer norm over the last `cols` elements of each of `rows` rows (biased variance).
// weight/bias (cols) may be undefined. Writes out, and per row mean and rstd = 1/sqrt(var+eps)
// (`rows` elements of x's dtype) for the backward.
HEADGRAD_CUDA_KERNEL(void layer_norm_forward(const Tensor& x, const Tensor& weight,
                                             const Tensor& bias, std::int64_t rows,
                                             std::int64_t cols, double eps, Tensor& out,
                                             Tensor& mean, Tensor& rstd))
// dx always; dweight, dbias (cols) only when defined (reduced over rows without atomics).
HEADGRAD_CUDA_KERNEL(void layer_norm_backward(
    const Tensor& g, const Tensor& x, const Tensor& weight, const Tensor& mean, const Tensor& rstd,
    std::int64_t rows, std::int64_t cols, Tensor& dx, Tensor& dweight, Tensor& dbias))

// Cross entropy on logits viewed as (outer, classes, inner) with int64 targets
// (outer, inner), as the CPU's (ops/loss.cpp). Per position p with target t and label
// smoothing s: loss_p = (1-s)(lse_p - x_pt) + s (lse_p - mean_c x_pc), 0 where t equals
// ignore_index. Writes `losses` and `lse` (the log-sum-exp, saved for the backward), both
// outer*inner elements of the logits' dtype. A target outside [0, classes) that is not
// ignore_index sets `bad_target` (one int64) to 1 + the first such position (0 when all
// are valid), so the caller can raise the CPU's error.
HEADGRAD_CUDA_KERNEL(void cross_entropy_forward(const Tensor& logits, const Tensor& targets,
                                                std::int64_t outer, std::int64_t classes,
                                                std::int64_t inner, std::int64_t ignore_index,
                                                double label_smoothing, Tensor& losses, Tensor& lse,
                                                Tensor& bad_target))
// dlogits_pc = g_p * (softmax_pc - (1-s)[c == t] - s/C) with softmax_pc = exp(x_pc - lse_p);
// exactly 0 at ignored positions. `g` holds one upstream gradient per position
// (outer*inner elements, already including the mean's 1/count).
HEADGRAD_CUDA_KERNEL(void cross_entropy_backward(const Tensor& g, const Tensor& logits,
                                                 const Tensor& lse, const Tensor& targets,
                                                 std::int64_t outer, std::int64_t classes,
                                                 std::int64_t inner, std::int64_t ignore_index,
                                                 double label_smoothing, Tensor& dlogits))

// --- indexing --------------------------------------------------------------------------

// x viewed as (outer, dim, inner); out (outer, n, inner) with out[o, i, k] = x[o, index[i], k]
// for int64 `index` of n elements (the caller has checked the range). Any dtype.
HEADGRAD_CUDA_KERNEL(void index_select(const Tensor& x, std::int64_t outer, std::int64_t dim,
                                       std::int64_t inner, const Tensor& index, Tensor& out))
// The backward: dx (outer, dim, inner), zero-filled here, then dx[o, index[i], k] += g[o, i, k]
// summed in the order of i (deterministic, no atomics). Floating.
HEADGRAD_CUDA_KERNEL(void index_add(const Tensor& g, std::int64_t outer, std::int64_t dim,
                                    std::int64_t inner, const Tensor& index, Tensor& dx))
// out (n, classes) of out's dtype: 1 at [i, indices[i]], else 0.
HEADGRAD_CUDA_KERNEL(void one_hot(const Tensor& indices, std::int64_t classes, Tensor& out))
// Sets `bad` (one int64) to 1 + the first position whose index is outside [0, limit), or 0.
HEADGRAD_CUDA_KERNEL(void check_index_range(const Tensor& index, std::int64_t limit, Tensor& bad))

// --- dropout ---------------------------------------------------------------------------

// mask[i] = keep ? 1/(1-p) : 0 (mask has x's dtype), keep drawn with probability 1-p from a
// counter-based generator (Philox-4x32-10) keyed by `seed`: element i uses counter i, so
// the mask depends only on (seed, i), never on the launch configuration.
HEADGRAD_CUDA_KERNEL(void dropout_mask(std::uint64_t seed, double p, Tensor& mask))

// --- optimizers (in place on the parameter and its state) -------------------------------

struct AdamHyper {
  double lr, beta1, beta2, eps, weight_decay;
  bool amsgrad, decoupled;  // decoupled: AdamW's p *= 1 - lr*wd; else L2: g += wd*p
  std::int64_t step;        // 1 on the first update
};
// The CPU's update (optim/adam.cpp), elementwise. max_exp_avg_sq is undefined unless
// amsgrad.
HEADGRAD_CUDA_KERNEL(void adam_update(Tensor& param, const Tensor& grad, Tensor& exp_avg,
                                      Tensor& exp_avg_sq, Tensor& max_exp_avg_sq,
                                      const AdamHyper& h))
struct SgdHyper {
  double lr, momentum, dampening, weight_decay;
  bool nesterov;
  bool first_step;  // the momentum buffer starts as a copy of the gradient
};
// The CPU's update (optim/sgd.cpp). `momentum_buffer` is undefined when momentum is 0.
HEADGRAD_CUDA_KERNEL(void sgd_update(Tensor& param, const Tensor& grad, Tensor& momentum_buffer,
                                     const SgdHyper& h))

// --- matrix products (cuBLAS) -------------------------------------------------------------

// C[b] = alpha * op(A[b]) * op(B[b]) + beta * C[b] for b < batch, row-major matrices:
// op(A) is (m, k), op(B) is (k, n), C is (m, n); lda/ldb/ldc are row strides and the
// stride_* the distances between batch entries (0 repeats one matrix), all in elements,
// from the given element offsets into each tensor. float32 uses TF32 only when
// cuda_allow_tf32() is set. One call to cublas?gemmStridedBatched (cublas?gemm for 1).
struct Gemm {
  bool trans_a = false, trans_b = false;
  std::int64_t m = 0, n = 0, k = 0;
  std::int64_t lda = 0, ldb = 0, ldc = 0;
  std::int64_t stride_a = 0, stride_b = 0, stride_c = 0;
  std::int64_t offset_a = 0, offset_b = 0, offset_c = 0;
  std::int64_t batch = 1;
  double alpha = 1.0, beta = 0.0;
};
HEADGRAD_CUDA_KERNEL(void gemm(const Gemm& g, const Tensor& a, const Tensor& b, Tensor& c))

}  // namespace headgrad::cuda
