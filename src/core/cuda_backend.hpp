// The CUDA backend's interface: everything the library asks of a GPU (devices, memory,
// copies and the kernels behind the ops), as one abstract class. The implementation is a
// separate shared library, libheadgrad_cuda (src/cuda), loaded with dlopen the first time a
// CUDA device is asked for, as PyTorch initialises CUDA lazily: libheadgrad itself and every
// CPU program have no link-time dependency on the CUDA runtime or cuBLAS, and without the
// backend library (or without a driver) cuda_is_available() is false and
// cuda_unavailable_reason() says what is missing.
//
// The op code (src/ops, src/optim) keeps everything that is not a kernel: argument checks,
// shapes, allocation (outputs are allocated by the caller, contiguous, on the inputs'
// device) and the autograd graph; it calls `cuda::backend().kernel(...)` only where its
// inputs live on a GPU. Rules every kernel follows:
// - Inputs and outputs are contiguous tensors on the same GPU; the caller has checked
//   dtypes and shapes. Floating kernels take float32 or float64 (dispatched inside).
// - Work is queued on the device's one stream and never reduced with atomics, so results
//   are bitwise reproducible run to run.
// - Semantics are the CPU op's, including NaN and -inf conventions: the CPU code next to
//   each call is the specification, and the parity suite (tests/cuda) compares the two.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "headgrad/core/cuda.hpp"
#include "headgrad/core/tensor.hpp"

namespace headgrad::cuda {

// Bumped whenever Backend or the types below change: the loader refuses a backend library
// built against another version.
inline constexpr int kBackendAbiVersion = 1;
// The backend library's file name and its two exported C entry points:
//   int headgrad_cuda_backend_abi();           returns kBackendAbiVersion
//   headgrad::cuda::Backend* headgrad_cuda_backend();   the one instance, never freed
inline constexpr const char* kBackendLibrary = "libheadgrad_cuda.so";
inline constexpr const char* kBackendAbiSymbol = "headgrad_cuda_backend_abi";
inline constexpr const char* kBackendSymbol = "headgrad_cuda_backend";

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

struct AdamHyper {
  double lr, beta1, beta2, eps, weight_decay;
  bool amsgrad, decoupled;  // decoupled: AdamW's p *= 1 - lr*wd; else L2: g += wd*p
  std::int64_t step;        // 1 on the first update
};

struct SgdHyper {
  double lr, momentum, dampening, weight_decay;
  bool nesterov;
  bool first_step;  // the momentum buffer starts as a copy of the gradient
};

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

class Backend {
 public:
  virtual ~Backend() = default;

  // --- devices ---------------------------------------------------------------------------
  // Usable GPUs; 0 without a driver or a GPU, and then `why` (when given) says which.
  virtual int device_count(std::string* why) = 0;
  // The GPU's name, e.g. "NVIDIA H100 80GB HBM3" (`index` has been checked).
  virtual std::string device_name(int index) = 0;
  // Waits until every kernel queued on the device has finished.
  virtual void synchronize(int index) = 0;
  virtual CudaMemoryStats memory_stats(int index) = 0;
  virtual void reset_peak_memory(int index) = 0;
  // Returns every cached (free) block of every device to the driver.
  virtual void empty_cache() = 0;

  // --- memory ----------------------------------------------------------------------------
  // Device memory of at least `nbytes` on GPU `index` from the caching allocator (never
  // managed memory). Throws DeviceError (with the sizes) when the GPU is out of memory.
  virtual void* allocate(std::size_t nbytes, int index) = 0;
  virtual void deallocate(void* ptr, int index) = 0;
  // Copies of `nbytes`, queued on the device's stream. copy_device_to_host waits for the
  // copy (and everything queued before it), copy_host_to_device for the copy; the others
  // return at once.
  virtual void copy_host_to_device(void* dst, const void* src, std::size_t nbytes, int index) = 0;
  virtual void copy_device_to_host(void* dst, const void* src, std::size_t nbytes, int index) = 0;
  virtual void copy_device_to_device(void* dst, int dst_index, const void* src, int src_index,
                                     std::size_t nbytes) = 0;
  virtual void memset_device(void* dst, int byte, std::size_t nbytes, int index) = 0;

  // --- memory-level kernels (any dtype) ---------------------------------------------
  // Every element of `out` = value (converted to out's dtype; bool: value != 0).
  virtual void fill(Tensor& out, double value) = 0;
  // dst = src converted elementwise to dst's dtype (same numel; float->int64 truncates
  // toward zero, anything->bool is != 0, as static_cast on the CPU).
  virtual void convert(const Tensor& src, Tensor& dst) = 0;
  // A strided copy of any rank <= 8, same dtype: for every index i of `sizes`,
  //   dst[dst_offset + sum_d i_d * dst_strides[d]] = src[src_offset + sum_d i_d * src_strides[d]]
  // (offsets and strides in elements, relative to each tensor's first element). Strides of 0
  // broadcast (expand); permute, narrow, slice, select, concat and their backwards are all
  // this one kernel.
  virtual void copy_strided(const Tensor& src, std::int64_t src_offset, const Shape& src_strides,
                            Tensor& dst, std::int64_t dst_offset, const Shape& dst_strides,
                            const Shape& sizes) = 0;

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
  // Cross entropy on logits viewed as (outer, classes, inner) with int64 targets
  // (outer, inner), as the CPU's (ops/loss.cpp). Per position p with target t and label
  // smoothing s: loss_p = (1-s)(lse_p - x_pt) + s (lse_p - mean_c x_pc), 0 where t equals
  // ignore_index. Writes `losses` and `lse` (the log-sum-exp, saved for the backward), both
  // outer*inner elements of the logits' dtype. A target outside [0, classes) that is not
  // ignore_index sets `bad_target` (one int64) to 1 + the first such position (0 when all
  // are valid), so the caller can raise the CPU's error.
  virtual void cross_entropy_forward(const Tensor& logits, const Tensor& targets,
                                     std::int64_t outer, std::int64_t classes, std::int64_t inner,
                                     std::int64_t ignore_index, double label_smoothing,
                                     Tensor& losses, Tensor& lse, Tensor& bad_target) = 0;
  // dlogits_pc = g_p * (softmax_pc - (1-s)[c == t] - s/C) with softmax_pc = exp(x_pc - lse_p);
  // exactly 0 at ignored positions. `g` holds one upstream gradient per position
  // (outer*inner elements, already including the mean's 1/count).
  virtual void cross_entropy_backward(const Tensor& g, const Tensor& logits, const Tensor& lse,
                                      const Tensor& targets, std::int64_t outer,
                                      std::int64_t classes, std::int64_t inner,
                                      std::int64_t ignore_index, double label_smoothing,
                                      Tensor& dlogits) = 0;

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
  // mask[i] = keep ? 1/(1-p) : 0 (mask has x's dtype), keep drawn with probability 1-p from a
  // counter-based generator (Philox-4x32-10) keyed by `seed`: element i uses counter i, so
  // the mask depends only on (seed, i), never on the launch configuration.
  virtual void dropout_mask(std::uint64_t seed, double p, Tensor& mask) = 0;

  // --- optimizers (in place on the parameter and its state) -------------------------------
  // The CPU's update (optim/adam.cpp), elementwise. max_exp_avg_sq is undefined unless
  // amsgrad.
  // The CPU's update (optim/adam.cpp), elementwise; max_exp_avg_sq is undefined unless amsgrad.
  virtual void adam_update(Tensor& param, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq,
                           Tensor& max_exp_avg_sq, const AdamHyper& h) = 0;
  // The CPU's update (optim/sgd.cpp). `momentum_buffer` is undefined when momentum is 0.
  // The CPU's update (optim/sgd.cpp); `momentum_buffer` is undefined when momentum is 0.
  virtual void sgd_update(Tensor& param, const Tensor& grad, Tensor& momentum_buffer,
                          const SgdHyper& h) = 0;

  // --- matrix products (cuBLAS) -----------------------------------------------------------
  // C[b] = alpha * op(A[b]) * op(B[b]) + beta * C[b], row-major (see Gemm).
  virtual void gemm(const Gemm& g, const Tensor& a, const Tensor& b, Tensor& c) = 0;
};

// The backend, loaded on first use (thread-safe). Throws DeviceError naming `op` and what is
// missing (the library, a library it needs, or the driver) when no GPU can be used.
Backend& backend(const char* op = "cuda");
// The loaded backend, or nullptr (with the reason in `why`, when given) where the library
// cannot be loaded. Never throws.
Backend* try_backend(std::string* why = nullptr);

// Throws DeviceError naming `op` unless `index` is a GPU of this machine; the message says
// what is missing when there is none.
void check_device(int index, const char* op);

}  // namespace headgrad::cuda
