// The kernel interface: every kernel the ops ask of a device, as one abstract class that
// each device implements. The CPU's implementation is in src/ops/cpu (CpuKernels); the
// CUDA backend (cuda::Backend, core/cuda_backend.hpp, a separate library loaded at run time)
// derives from it. An op (src/ops) keeps everything that is not a kernel: argument checks,
// shapes, allocation (outputs are allocated by the caller, contiguous, on the inputs'
// device) and the autograd graph; it gets its kernels from its inputs' device,
// `kernels_for(x.device(), op)`, and never branches on the device itself. Rules every
// implementation follows:
// - Inputs and outputs are contiguous tensors on one device; the caller has checked dtypes
//   and shapes. Floating kernels take float32 or float64 (dispatched inside).
// - Results are bitwise reproducible run to run (the GPU queues work on one stream and
//   never reduces with atomics; the CPU splits work so that every thread count gives the
//   same bits).
// - Semantics are the CPU's, including NaN and -inf conventions; the parity suite
//   (tests/cuda) compares the two.
#pragma once

#include <cstdint>
#include <vector>

#include "core/matmul_plan.hpp"
#include "headgrad/core/device.hpp"
#include "headgrad/core/generator.hpp"
#include "headgrad/core/reduction.hpp"
#include "headgrad/core/tensor.hpp"

namespace headgrad {

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

// Reduces x over the dims where keep_shape is 1 and x is not (keep_shape has x's rank);
// out has keep_shape's numel. Floating x; argmax writes int64 (the first maximal index
// along the single reduced dim; NaN counts as maximal, as the CPU's).
//   sum: the sum.   amax: the maximum (NaN propagates; -inf for all -inf).
//   argmax: exactly one reduced dim.
enum class Reduce { sum, amax, argmax };

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

// A copy of outer x count blocks of `inner` contiguous elements: block (o, k) goes from
// src[src_offset + o * src_outer + k * src_step] to dst[dst_offset + o * dst_outer +
// k * dst_step] (offsets and strides in elements). Slices, their backward and concat are
// this one copy.
struct BlockCopy {
  std::int64_t outer = 1, count = 1, inner = 0;
  std::int64_t src_offset = 0, src_outer = 0, src_step = 0;
  std::int64_t dst_offset = 0, dst_outer = 0, dst_step = 0;
};

// cross_entropy's problem: logits viewed as (outer, classes, inner), int64 targets of
// outer * inner positions (position p = o * inner + i reads logits[o, :, i]).
struct CrossEntropyProblem {
  std::int64_t outer = 1, classes = 0, inner = 1;
  std::int64_t ignore_index = -100;
  double label_smoothing = 0.0;
  Reduction reduction = Reduction::mean;
  std::int64_t positions() const { return outer * inner; }
};

// G independent linears: x (G, rows, in), W (G, out, in), bias (G, out); linear is G = 1.
struct LinearProblem {
  std::int64_t groups = 1, rows = 0, in = 0, out = 0;
};

// The fused attention's problem (ops/attention_fused.hpp): q (N, L, fq), k (N, S, fk) and
// v (N, S, fv), token-major; head h reads q's columns [oq + h*d, oq + (h+1)*d), k's from
// ok and v's from ov (width dv); scores are scale * q_h k_h^T plus every mask, P their
// safe softmax (an all -inf row gives zeros), out (N, L, H*dv) gets P v_h in column block h.
struct FusedAttentionProblem {
  // A mask as the kernel reads it: blocked (bool, true = blocked) or additive (the scores'
  // dtype) entries at n*sn + h*sh + i*sl + j*ss (0 for a broadcast dim); contiguous.
  struct Mask {
    Tensor tensor;
    bool additive = false;
    std::int64_t sn = 0, sh = 0, sl = 0, ss = 0;
    // A bool mask the same for every example and head (sn = sh = 0), e.g. causal.
    bool shared() const { return !additive && sn == 0 && sh == 0; }
  };
  std::int64_t n = 0, h = 0, l = 0, s = 0, d = 0, dv = 0;
  std::int64_t fq = 0, fk = 0, fv = 0;  // features (row strides) of q, k, v
  std::int64_t oq = 0, ok = 0, ov = 0;  // column offsets of head 0
  double scale = 1.0;
  std::vector<Mask> masks;
  std::int64_t out_features() const { return h * dv; }
};

class Kernels {
 public:
  virtual ~Kernels() = default;

  // --- memory-level kernels (any dtype) ---------------------------------------------
  // Every element of `out` = value (converted to out's dtype; bool: value != 0).
  virtual void fill(Tensor& out, double value) = 0;
  // dst = src converted elementwise to dst's dtype (same numel; float->int64 truncates
  // toward zero, anything->bool is != 0, as static_cast on the CPU).
  virtual void convert(const Tensor& src, Tensor& dst) = 0;

  // The block copy above (any dtype; src and dst share it).
  virtual void copy_blocks(const Tensor& src, Tensor& dst, const BlockCopy& copy) = 0;
  // out = x with its dims reordered: out's dim d is x's dim perm[d] (any dtype).
  virtual void permute(const Tensor& x, const Shape& perm, Tensor& out) = 0;
  // out = x broadcast, right-aligned, to out's shape (any dtype; x's dims are 1 or out's).
  virtual void expand(const Tensor& x, Tensor& out) = 0;

  // --- elementwise ----------------------------------------------------------------------
  // y = f(x) (see Unary), same shape; `a` and `b` are the op's scalars where it has them.
  virtual void unary(Unary op, const Tensor& x, Tensor& out, double a, double b) = 0;
  // dx = g * f'(...) for the ops whose gradient is not itself a simple op. `saved` is, per op:
  //   exp: y -> g*y            log: x -> g/x               sqrt: y -> g/(2y)
  //   rsqrt: y -> -g*y^3/2     abs: x -> g*sign(x), 0 at 0 tanh: y -> g*(1-y^2)
  //   sigmoid: y -> g*y*(1-y)  relu: y -> y>0 ? g : 0
  //   gelu / gelu_tanh: x -> g * d/dx gelu(x)
  //   clamp: x -> a<=x<=b ? g : 0
  //   rdiv_scalar: y -> -g*y*y/a (d(a/x) = -a/x^2 = -y^2/a; a != 0)
  //   pow_scalar: x -> a==0 ? 0 : g*a*x^(a-1)
  //   rpow_scalar: y -> g*y*ln(a)
  virtual void unary_backward(Unary op, const Tensor& g, const Tensor& saved, Tensor& dx, double a,
                              double b) = 0;
  // y = f(x) and the derivative f'(x), both x's shape, in one pass, for the ops that save
  // the derivative instead of x (gelu and gelu_tanh).
  virtual void unary_with_derivative(Unary op, const Tensor& x, Tensor& out,
                                     Tensor& derivative) = 0;
  // out = f(x, y) (see Binary), x and y broadcast to out's shape.
  virtual void binary(Binary op, const Tensor& x, const Tensor& y, Tensor& out, double alpha) = 0;
  // out = cond ? x : y, all three broadcast to out's shape; cond is bool, x/y/out share
  // out's dtype (any).
  virtual void where(const Tensor& cond, const Tensor& x, const Tensor& y, Tensor& out) = 0;
  // out = !x for bool x.
  virtual void logical_not(const Tensor& x, Tensor& out) = 0;
  // out = mask ? value : x, mask (bool) broadcast to x's shape; floating x.
  virtual void masked_fill(const Tensor& x, const Tensor& mask, double value, Tensor& out) = 0;

  // --- reductions -------------------------------------------------------------------
  // Reduces x over the dims where keep_shape is 1 and x is not (see Reduce).
  virtual void reduce(Reduce op, const Tensor& x, const Shape& keep_shape, Tensor& out) = 0;
  // max over dim (x floating, any rank; a 0-d x is its own max): values (x's dtype) and int64
  // indices, each with x's numel over the dim's size, hold the first maximum along dim and its
  // position (NaN counts as maximal).
  virtual void max_dim(const Tensor& x, std::int64_t dim, Tensor& values, Tensor& indices) = 0;
  // Its backward: dx (x's shape) is 0 but at each maximum, which gets g's value there.
  virtual void max_dim_backward(const Tensor& g, const Tensor& indices, std::int64_t dim,
                                Tensor& dx) = 0;

  // --- softmax, normalization, losses -----------------------------------------------------
  // x viewed as (outer, dim, inner), softmax (or log_softmax) along the middle dim, with the
  // CPU's conventions for all -inf rows: standard mode gives NaN, safe mode gives 0 for
  // softmax and -inf for log_softmax.
  virtual void softmax_forward(const Tensor& x, std::int64_t outer, std::int64_t dim,
                               std::int64_t inner, bool log, bool safe, Tensor& out) = 0;
  // Given y = the forward's output and g = dL/dy:
  //   softmax:     dx = y * (g - sum(g*y))
  //   log_softmax: dx = g - exp(y) * sum(g)   (safe mode: 0 on rows whose y is all -inf)
  virtual void softmax_backward(const Tensor& g, const Tensor& y, std::int64_t outer,
                                std::int64_t dim, std::int64_t inner, bool log, bool safe,
                                Tensor& dx) = 0;
  // Layer norm over the last `cols` elements of each of `rows` rows (biased variance).
  // weight/bias (cols) may be undefined. Writes out, and per row mean and rstd = 1/sqrt(var+eps)
  // (`rows` elements of x's dtype) for the backward.
  virtual void layer_norm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias,
                                  std::int64_t rows, std::int64_t cols, double eps, Tensor& out,
                                  Tensor& mean, Tensor& rstd) = 0;
  // dx always; dweight, dbias (cols) only when defined (reduced over rows without atomics).
  virtual void layer_norm_backward(const Tensor& g, const Tensor& x, const Tensor& weight,
                                   const Tensor& mean, const Tensor& rstd, std::int64_t rows,
                                   std::int64_t cols, Tensor& dx, Tensor& dweight,
                                   Tensor& dbias) = 0;
  // G independent layer norms (GPTEnsemble's): x (G, rows, cols), weight (G, cols), bias
  // (G, cols) or undefined; group g is layer_norm_forward on its slices, mean and rstd
  // (G * rows) group by group.
  virtual void grouped_layer_norm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias,
                                          std::int64_t groups, std::int64_t rows, std::int64_t cols,
                                          double eps, Tensor& out, Tensor& mean, Tensor& rstd) = 0;
  // Its backward, group by group as layer_norm_backward's (dweight, dbias (G, cols) when
  // defined).
  virtual void grouped_layer_norm_backward(const Tensor& g, const Tensor& x, const Tensor& weight,
                                           const Tensor& mean, const Tensor& rstd,
                                           std::int64_t groups, std::int64_t rows,
                                           std::int64_t cols, Tensor& dx, Tensor& dweight,
                                           Tensor& dbias) = 0;

  // --- losses ----------------------------------------------------------------------------
  // Per position p with target t and label smoothing s:
  //   loss_p = (1-s)(lse_p - x_pt) + s (lse_p - mean_c x_pc), 0 where t == ignore_index,
  // lse_p the log-sum-exp of p's logits. Reduction none: `out` (positions) holds loss_p;
  // sum: `out` (0-d) their sum; mean: the sum / kept (0/0 = NaN when every target is ignored).
  // The CPU sums in double. Always writes `lse` (positions, for the backward), `kept` (0-d
  // int64: targets not ignored) and `bad_target` (0-d int64): 1 + the first position whose
  // target is outside [0, classes) and not ignore_index, else 0 (then nothing else is
  // written; the op raises the error).
  virtual void cross_entropy_forward(const Tensor& logits, const Tensor& targets,
                                     const CrossEntropyProblem& problem, Tensor& out, Tensor& lse,
                                     Tensor& kept, Tensor& bad_target) = 0;
  // dlogits_pc = s_p (softmax_pc - (1-s)[c == t_p] - s/C), softmax_pc = exp(x_pc - lse_p),
  // exactly 0 at ignored positions; s_p = g_p (reduction none: g has `positions` elements),
  // g (sum: 0-d) or g / kept (mean: 0-d).
  virtual void cross_entropy_backward(const Tensor& g, const Tensor& logits, const Tensor& lse,
                                      const Tensor& targets, const Tensor& kept,
                                      const CrossEntropyProblem& problem, Tensor& dlogits) = 0;
  // mse_loss: (a - b)^2 with a and b broadcast to `shape`. Reduction none: `out` (shape)
  // holds it; sum / mean: `out` (0-d) its sum / mean (the CPU sums each innermost run in the
  // dtype and the runs in double; an empty mean is NaN).
  virtual void mse_forward(const Tensor& a, const Tensor& b, const Shape& shape,
                           Reduction reduction, Tensor& out) = 0;
  // d = 2 (a - b) s over `shape`, s = g (none: g of `shape`), g (sum) or g / numel(shape)
  // (mean); da = d summed to a's shape, db = -d summed to b's shape, each only when defined
  // (allocated by the caller).
  virtual void mse_backward(const Tensor& g, const Tensor& a, const Tensor& b, const Shape& shape,
                            Reduction reduction, Tensor& da, Tensor& db) = 0;

  // --- matrix products (BLAS on the CPU, cuBLAS on a GPU) ----------------------------------
  // out (plan.out_shape) = a @ b as `plan` (core/matmul_plan.hpp) lays it out.
  virtual void matmul(const Tensor& a, const Tensor& b, const detail::MatmulPlan& plan,
                      Tensor& out) = 0;
  // dA = dC @ B^T and dB = A^T @ dC per batch entry, each summed over the entries that read
  // the same stored matrix; only the defined ones (a's and b's shapes) are written.
  virtual void matmul_backward(const Tensor& dc, const Tensor& a, const Tensor& b,
                               const detail::MatmulPlan& plan, Tensor& da, Tensor& db) = 0;
  // y[g] (rows, out) = x[g] (rows, in) @ W[g]^T + bias[g] for each of the problem's groups;
  // bias may be undefined. On the CPU group g's values are bitwise one linear's.
  virtual void linear(const Tensor& x, const Tensor& weight, const Tensor& bias,
                      const LinearProblem& problem, Tensor& y) = 0;
  // dx[g] = dy[g] @ W[g], dW[g] = dy[g]^T @ x[g], dbias[g] = the column sums of dy[g] (each
  // column summed over its rows in order); only the defined ones are written.
  virtual void linear_backward(const Tensor& dy, const Tensor& x, const Tensor& weight,
                               const LinearProblem& problem, Tensor& dx, Tensor& dweight,
                               Tensor& dbias) = 0;

  // --- indexing --------------------------------------------------------------------------
  // x viewed as (outer, dim, inner); out (outer, n, inner) with out[o, i, k] = x[o, index[i], k]
  // for int64 `index` of n elements (the caller has checked the range). Any dtype.
  virtual void index_select(const Tensor& x, std::int64_t outer, std::int64_t dim,
                            std::int64_t inner, const Tensor& index, Tensor& out) = 0;
  // The backward: dx (outer, dim, inner), zero-filled here, then dx[o, index[i], k] += g[o, i, k]
  // summed in the order of i (deterministic, no atomics). Floating.
  virtual void index_add(const Tensor& g, std::int64_t outer, std::int64_t dim, std::int64_t inner,
                         const Tensor& index, Tensor& dx) = 0;
  // out (n, classes) of out's dtype: 1 at [i, indices[i]], else 0.
  virtual void one_hot(const Tensor& indices, std::int64_t classes, Tensor& out) = 0;
  // Sets `bad` (one int64) to 1 + the first position whose index is outside [0, limit), or 0.
  virtual void check_index_range(const Tensor& index, std::int64_t limit, Tensor& bad) = 0;

  // --- dropout ---------------------------------------------------------------------------
  // mask[i] = keep ? 1/(1-p) : 0 (mask has x's dtype; p == 1: all 0), keep with probability
  // 1-p. The CPU takes one `generator.next_float()` per element in order (element i dropped
  // when its draw is < p); a GPU takes one `generator.next_u64()` as the key of a
  // counter-based generator (Philox-4x32-10), element i using counter i, so its mask depends
  // only on (key, i), never on the launch configuration. The two masks differ.
  virtual void dropout_mask(Generator& generator, double p, Tensor& mask) = 0;
  // out = mask != 0 ? x * mask : 0, exactly 0 where dropped (not inf * 0 = NaN); x, mask and
  // out share a shape and a floating dtype.
  virtual void dropout_apply(const Tensor& x, const Tensor& mask, Tensor& out) = 0;

  // --- fused attention (ops/attention_fused.hpp; a device may lack it) --------------
  // Whether this device has the fused attention kernels; without them the attention op
  // takes the composed path (the GPU does).
  virtual bool has_fused_attention() const { return false; }
  // weights = P (N, H, L, S) and out (N, L, H*dv) of `problem` (see FusedAttentionProblem).
  virtual void fused_attention_forward(const FusedAttentionProblem& problem, const Tensor& q,
                                       const Tensor& k, const Tensor& v, Tensor& weights,
                                       Tensor& out);
  // Gradients from dout (N, L, H*dv) and, when defined, dweights (N, H, L, S), with P the
  // forward's weights: dq, dk, dv (undefined = not wanted) have q's, k's, v's shapes and
  // may be one buffer (self-attention on packed projections). With `accumulate` the
  // buffers hold zeros and every head adds into them (column blocks overlap or leave
  // columns unwritten); without it each head's block is overwritten.
  //   dP = do_h v_h^T + dweights,  dS = scale * P * (dP - rowsum(dP * P)),
  //   dq_h = dS k_h,  dk_h = dS^T q_h,  dv_h = P^T do_h.
  virtual void fused_attention_backward(const FusedAttentionProblem& problem, const Tensor& q,
                                        const Tensor& k, const Tensor& v, const Tensor& weights,
                                        const Tensor& dout, const Tensor& dweights, bool accumulate,
                                        Tensor& dq, Tensor& dk, Tensor& dv);
};

// The kernels of `device`: the CPU's, or the CUDA backend's (loaded on first use; throws
// DeviceError naming `op` when no GPU can be used).
Kernels& kernels_for(const Device& device, const char* op = "kernels");

namespace detail {
// Installs the CPU's kernels (done once by src/ops/cpu/cpu_kernels.cpp when the library loads).
void set_cpu_kernels(Kernels* kernels);
}  // namespace detail

}  // namespace headgrad
