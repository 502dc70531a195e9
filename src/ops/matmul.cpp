// Matrix products: matmul (torch.matmul semantics, batched and broadcast) and linear.
// Every product is a cblas_sgemm / cblas_dgemm call on raw pointers (ops/cpu/blas.hpp);
// transposes are GEMM flags, never materialized; broadcast batches are read through
// per-batch offsets, never copied.
#include "headgrad/ops/matmul.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "core/cuda_backend.hpp"
#include "core/dispatch.hpp"
#include "core/parallel.hpp"
#include "headgrad/autograd/function.hpp"
#include "headgrad/autograd/grad_mode.hpp"
#include "headgrad/ops/elementwise.hpp"
#include "headgrad/ops/reduce.hpp"
#include "headgrad/ops/shape_ops.hpp"
#include "ops/cpu/blas.hpp"
#include "ops/cpu/broadcast.hpp"
#include "ops/cpu/simd.hpp"

namespace headgrad {

namespace {

// A matmul problem after promoting 1-d operands to matrices: C[i] (m,n) = A[a_index[i]]
// (m,k) @ B[b_index[i]] (k,n) for each i of the broadcast batch.
struct MatmulPlan {
  Shape out_shape;  // with the promoted dims of 1-d operands removed again
  std::int64_t m = 1, k = 1, n = 1;
  std::int64_t batch = 1;       // matrices in C
  std::int64_t a_matrices = 1;  // matrices stored in A (fewer than batch if broadcast)
  std::int64_t b_matrices = 1;
  // B is one matrix shared by the whole batch and A is not broadcast: the batch folds
  // into the rows, and C (batch*m, n) = A (batch*m, k) @ B (k, n) is one GEMM.
  bool fold_batch_into_rows = false;
  // Element offsets of each batch's matrices (empty when folded).
  std::vector<std::int64_t> a_offsets, b_offsets, c_offsets;
  // Nonzero where batch i is the first to touch its A / B matrix: the backward GEMMs
  // that accumulate a broadcast operand's gradient start there with beta = 0.
  std::vector<std::uint8_t> a_first, b_first;
};

std::string pair_str(const Shape& a, const Shape& b) {
  return "matmul: " + shape_str(a) + " @ " + shape_str(b) + ": ";
}

// The batch dims of A and B broadcast right-aligned (ShapeError when they do not).
Shape broadcast_batch(const Shape& a_shape, const Shape& b_shape, const Shape& a_batch,
                      const Shape& b_batch) {
  Shape batch(std::max(a_batch.size(), b_batch.size()), 1);
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const std::int64_t da = i < a_batch.size() ? a_batch[a_batch.size() - 1 - i] : 1;
    const std::int64_t db = i < b_batch.size() ? b_batch[b_batch.size() - 1 - i] : 1;
    if (da != db && da != 1 && db != 1)
      throw ShapeError(pair_str(a_shape, b_shape) + "batch dimensions " + shape_str(a_batch) +
                       " and " + shape_str(b_batch) + " do not broadcast");
    batch[batch.size() - 1 - i] = da == 1 ? db : da;
  }
  return batch;
}

// Walks the broadcast batch in row-major order, tracking which stored matrix of A and B each
// batch entry reads (stride 0 along broadcast dims): p's offsets and first-touch flags.
void walk_batch(const Shape& a_batch, const Shape& b_batch, const Shape& batch, MatmulPlan& p) {
  const Shape a_strides = cpu::broadcast_strides(a_batch, batch);
  const Shape b_strides = cpu::broadcast_strides(b_batch, batch);
  p.a_offsets.resize(p.batch);
  p.b_offsets.resize(p.batch);
  p.c_offsets.resize(p.batch);
  p.a_first.assign(p.batch, 0);
  p.b_first.assign(p.batch, 0);
  std::vector<std::uint8_t> a_seen(p.a_matrices, 0), b_seen(p.b_matrices, 0);
  Shape counter(batch.size(), 0);
  std::int64_t a_index = 0, b_index = 0;
  for (std::int64_t i = 0; i < p.batch; ++i) {
    p.a_offsets[i] = a_index * p.m * p.k;
    p.b_offsets[i] = b_index * p.k * p.n;
    p.c_offsets[i] = i * p.m * p.n;
    p.a_first[i] = a_seen[a_index] == 0;
    p.b_first[i] = b_seen[b_index] == 0;
    a_seen[a_index] = b_seen[b_index] = 1;
    for (std::size_t d = batch.size(); d-- > 0;) {
      ++counter[d];
      a_index += a_strides[d];
      b_index += b_strides[d];
      if (counter[d] < batch[d]) break;
      a_index -= a_strides[d] * batch[d];
      b_index -= b_strides[d] * batch[d];
      counter[d] = 0;
    }
  }
}

MatmulPlan plan_matmul(const Shape& a_shape, const Shape& b_shape) {
  if (a_shape.empty() || b_shape.empty())
    throw ShapeError(pair_str(a_shape, b_shape) +
                     "both operands need at least 1 dimension (got a 0-d tensor)");
  const bool a_vector = a_shape.size() == 1;
  const bool b_vector = b_shape.size() == 1;
  MatmulPlan p;
  p.m = a_vector ? 1 : a_shape[a_shape.size() - 2];
  p.k = a_shape.back();
  const std::int64_t b_k = b_vector ? b_shape[0] : b_shape[b_shape.size() - 2];
  p.n = b_vector ? 1 : b_shape.back();
  if (p.k != b_k)
    throw ShapeError(pair_str(a_shape, b_shape) + "inner dimensions " + std::to_string(p.k) +
                     " and " + std::to_string(b_k) + " differ");

  // Batch dims: everything but the matrix dims, broadcast right-aligned.
  const Shape a_batch(a_shape.begin(), a_shape.end() - std::min<std::ptrdiff_t>(2, a_shape.size()));
  const Shape b_batch(b_shape.begin(), b_shape.end() - std::min<std::ptrdiff_t>(2, b_shape.size()));
  const Shape batch = broadcast_batch(a_shape, b_shape, a_batch, b_batch);
  p.batch = numel_of(batch);
  p.a_matrices = numel_of(a_batch);
  p.b_matrices = numel_of(b_batch);

  p.out_shape = batch;
  if (!a_vector) p.out_shape.push_back(p.m);
  if (!b_vector) p.out_shape.push_back(p.n);

  p.fold_batch_into_rows = p.b_matrices == 1 && p.a_matrices == p.batch;
  if (!p.fold_batch_into_rows) walk_batch(a_batch, b_batch, batch, p);
  return p;
}

// --- the GPU path: cuBLAS strided-batched GEMMs --------------------------------------
//
// Each operand's matrices are either one per batch entry (stride m*k / k*n) or a single
// matrix repeated (stride 0); an operand broadcast in any other way (batch (2,1) against
// (1,3)) is first expanded to the full batch. A gradient is computed per batch entry and
// summed back to its operand's shape with sum_to, which is the identity when nothing was
// broadcast.

struct DeviceOperand {
  Tensor matrices;      // the operand as stored, or expanded to the full batch
  std::int64_t stride;  // elements between batch entries (0: one shared matrix)
};

DeviceOperand device_operand(const Tensor& t, const Shape& promoted, std::int64_t matrices,
                             std::int64_t batch, const Shape& batch_shape) {
  const std::int64_t rows = promoted[promoted.size() - 2], cols = promoted.back();
  if (matrices == batch) return {t, rows * cols};
  if (matrices == 1) return {t, 0};
  Shape full = batch_shape;
  full.push_back(rows);
  full.push_back(cols);
  NoGradGuard no_grad;
  return {expand(detail::alias(t, promoted), full), rows * cols};
}

cuda::Gemm batched_gemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k,
                        std::int64_t lda, std::int64_t ldb, std::int64_t ldc, std::int64_t stride_a,
                        std::int64_t stride_b, std::int64_t stride_c, std::int64_t batch,
                        double beta = 0.0) {
  cuda::Gemm g;
  g.trans_a = ta;
  g.trans_b = tb;
  g.m = m;
  g.n = n;
  g.k = k;
  g.lda = lda;
  g.ldb = ldb;
  g.ldc = ldc;
  g.stride_a = stride_a;
  g.stride_b = stride_b;
  g.stride_c = stride_c;
  g.batch = batch;
  g.beta = beta;
  return g;
}

// The per-batch gradient `full` (batch_shape..., rows, cols) summed back to the operand.
Tensor reduce_to_operand(const Tensor& full, const Shape& batch_shape, const Shape& promoted,
                         const Shape& operand_shape, std::int64_t matrices, std::int64_t batch) {
  if (matrices == batch) return detail::alias(full, operand_shape);
  Shape full_shape = batch_shape;
  full_shape.push_back(promoted[promoted.size() - 2]);
  full_shape.push_back(promoted.back());
  NoGradGuard no_grad;
  return detail::alias(sum_to(detail::alias(full, full_shape), promoted), operand_shape);
}

// --- matmul's kernels, a forward and a backward per device ---------------------------

// The GPU's view of a matmul: promoted operand shapes (1-d operands as matrices) and the
// broadcast batch dims of the output.
struct DeviceBatch {
  Shape a_prom, b_prom, batch_shape;
};
DeviceBatch device_batch(const Tensor& a, const Tensor& b, const MatmulPlan& p) {
  DeviceBatch d;
  d.a_prom = a.dim() == 1 ? Shape{1, p.k} : a.shape();
  d.b_prom = b.dim() == 1 ? Shape{p.k, 1} : b.shape();
  d.batch_shape = p.out_shape;
  d.batch_shape.resize(d.batch_shape.size() - (a.dim() == 1 ? 0 : 1) - (b.dim() == 1 ? 0 : 1));
  return d;
}

void matmul_forward_cuda(const Tensor& a, const Tensor& b, const MatmulPlan& p, Tensor& out) {
  if (p.fold_batch_into_rows) {
    cuda::backend().gemm(
        batched_gemm(false, false, p.batch * p.m, p.n, p.k, p.k, p.n, p.n, 0, 0, 0, 1), a, b, out);
    return;
  }
  const DeviceBatch d = device_batch(a, b, p);
  const DeviceOperand da = device_operand(a, d.a_prom, p.a_matrices, p.batch, d.batch_shape);
  const DeviceOperand db = device_operand(b, d.b_prom, p.b_matrices, p.batch, d.batch_shape);
  cuda::backend().gemm(batched_gemm(false, false, p.m, p.n, p.k, p.k, p.n, p.n, da.stride,
                                    db.stride, p.m * p.n, p.batch),
                       da.matrices, db.matrices, out);
}

void matmul_backward_cuda(const Tensor& dc, const Tensor& a, const Tensor& b, const MatmulPlan& p,
                          bool need_a, bool need_b, Tensor& da, Tensor& db) {
  if (p.fold_batch_into_rows) {
    if (need_a) {  // dA (batch*m, k) = dC (batch*m, n) @ B^T
      da = detail::new_tensor(a.shape(), a.dtype(), a.device());
      cuda::backend().gemm(
          batched_gemm(false, true, p.batch * p.m, p.k, p.n, p.n, p.n, p.k, 0, 0, 0, 1), dc, b, da);
    }
    if (need_b) {  // dB (k, n) = A^T (k, batch*m) @ dC (batch*m, n)
      db = detail::new_tensor(b.shape(), b.dtype(), b.device());
      cuda::backend().gemm(
          batched_gemm(true, false, p.k, p.n, p.batch * p.m, p.k, p.n, p.n, 0, 0, 0, 1), a, dc, db);
    }
    return;
  }
  const DeviceBatch d = device_batch(a, b, p);
  const DeviceOperand oa = device_operand(a, d.a_prom, p.a_matrices, p.batch, d.batch_shape);
  const DeviceOperand ob = device_operand(b, d.b_prom, p.b_matrices, p.batch, d.batch_shape);
  if (need_a) {  // dA[i] (m, k) = dC[i] (m, n) @ B[i]^T
    Tensor full = detail::new_tensor({p.batch * p.m * p.k}, a.dtype(), a.device());
    cuda::backend().gemm(batched_gemm(false, true, p.m, p.k, p.n, p.n, p.n, p.k, p.m * p.n,
                                      ob.stride, p.m * p.k, p.batch),
                         dc, ob.matrices, full);
    da = reduce_to_operand(full, d.batch_shape, d.a_prom, a.shape(), p.a_matrices, p.batch);
  }
  if (need_b) {  // dB[i] (k, n) = A[i]^T (k, m) @ dC[i] (m, n)
    Tensor full = detail::new_tensor({p.batch * p.k * p.n}, b.dtype(), b.device());
    cuda::backend().gemm(batched_gemm(true, false, p.k, p.n, p.m, p.k, p.n, p.n, oa.stride,
                                      p.m * p.n, p.k * p.n, p.batch),
                         oa.matrices, dc, full);
    db = reduce_to_operand(full, d.batch_shape, d.b_prom, b.shape(), p.b_matrices, p.batch);
  }
}

void matmul_forward_cpu(const Tensor& a, const Tensor& b, const MatmulPlan& p, Tensor& out) {
  detail::dispatch_floating(a.dtype(), "matmul", [&]<typename T>() {
    const T* pa = detail::ptr<T>(a);
    const T* pb = detail::ptr<T>(b);
    T* pc = detail::ptr<T>(out);
    if (p.fold_batch_into_rows) {
      cpu::gemm(false, false, p.batch * p.m, p.n, p.k, T(1), pa, p.k, pb, p.n, T(0), pc, p.n);
    } else {
      cpu::gemm_batched(false, false, p.m, p.n, p.k, T(1), pa, p.k, p.a_offsets.data(), pb, p.n,
                        p.b_offsets.data(), T(0), pc, p.n, p.c_offsets.data(), p.batch);
    }
  });
}

void matmul_backward_cpu(const Tensor& dc, const Tensor& a, const Tensor& b, const MatmulPlan& p,
                         bool need_a, bool need_b, Tensor& da, Tensor& db) {
  detail::dispatch_floating(a.dtype(), "matmul backward", [&]<typename T>() {
    const T* pa = detail::ptr<T>(a);
    const T* pb = detail::ptr<T>(b);
    const T* pdc = detail::ptr<T>(dc);
    if (need_a) {  // dA (m,k) = dC (m,n) @ B^T (n,k)
      da = detail::new_tensor(a.shape(), a.dtype());
      T* pda = detail::ptr<T>(da);
      if (p.fold_batch_into_rows) {
        cpu::gemm(false, true, p.batch * p.m, p.k, p.n, T(1), pdc, p.n, pb, p.n, T(0), pda, p.k);
      } else {
        if (p.batch == 0) std::fill(pda, pda + da.numel(), T(0));
        cpu::gemm_batched(false, true, p.m, p.k, p.n, T(1), pdc, p.n, p.c_offsets.data(), pb, p.n,
                          p.b_offsets.data(), T(1), pda, p.k, p.a_offsets.data(), p.batch,
                          p.a_first.data());
      }
    }
    if (need_b) {  // dB (k,n) = A^T (k,m) @ dC (m,n)
      db = detail::new_tensor(b.shape(), b.dtype());
      T* pdb = detail::ptr<T>(db);
      if (p.fold_batch_into_rows) {
        cpu::gemm(true, false, p.k, p.n, p.batch * p.m, T(1), pa, p.k, pdc, p.n, T(0), pdb, p.n);
      } else {
        if (p.batch == 0) std::fill(pdb, pdb + db.numel(), T(0));
        cpu::gemm_batched(true, false, p.k, p.n, p.m, T(1), pa, p.k, p.a_offsets.data(), pdc, p.n,
                          p.c_offsets.data(), T(1), pdb, p.n, p.b_offsets.data(), p.batch,
                          p.b_first.data());
      }
    }
  });
}

// --- linear's kernels: x (rows, in), W (out, in), bias (out) ----------------------------

void linear_forward_cuda(const Tensor& x, const Tensor& weight, const Tensor& bias,
                         std::int64_t rows, std::int64_t in, std::int64_t out_features, Tensor& y) {
  double beta = 0.0;
  if (bias.defined() && rows > 0) {  // bias rows (a broadcast copy), then beta = 1
    cuda::backend().copy_strided(bias, 0, {0, 1}, y, 0, {out_features, 1}, {rows, out_features});
    beta = 1.0;
  }
  cuda::backend().gemm(
      batched_gemm(false, true, rows, out_features, in, in, in, out_features, 0, 0, 0, 1, beta), x,
      weight, y);
}

void linear_backward_cuda(const Tensor& dy, const Tensor& x, const Tensor& weight,
                          std::int64_t rows, std::int64_t in, std::int64_t out_features,
                          const autograd::BackwardContext& ctx, Tensor& dx, Tensor& dw,
                          Tensor& dbias) {
  if (ctx.needs_grad(0)) {
    dx = detail::new_tensor(x.shape(), x.dtype(), x.device());
    cuda::backend().gemm(
        batched_gemm(false, false, rows, in, out_features, out_features, in, in, 0, 0, 0, 1), dy,
        weight, dx);
  }
  if (ctx.needs_grad(1)) {
    dw = detail::new_tensor(weight.shape(), weight.dtype(), weight.device());
    cuda::backend().gemm(
        batched_gemm(true, false, out_features, in, rows, out_features, in, in, 0, 0, 0, 1), dy, x,
        dw);
  }
  if (ctx.needs_grad(2)) {  // column sums of dy (rows, out)
    dbias = detail::new_tensor({out_features}, x.dtype(), x.device());
    cuda::backend().reduce(cuda::Reduce::sum, detail::alias(dy, {rows, out_features}),
                           {1, out_features}, dbias);
  }
}

// One linear on raw pointers: y (rows, out) = x (rows, in) @ W^T + bias (bias may be null).
template <typename T>
void linear_forward_kernel(const T* x, const T* weight, const T* bias, std::int64_t rows,
                           std::int64_t in, std::int64_t out_features, T* y) {
  T beta = T(0);
  if (bias) {
    detail::parallel_for(rows,
                         std::max<std::int64_t>(1, 16384 / std::max<std::int64_t>(out_features, 1)),
                         [&](std::int64_t first, std::int64_t last) {
                           for (std::int64_t r = first; r < last; ++r)
                             std::copy(bias, bias + out_features, y + r * out_features);
                         });
    beta = T(1);
  }
  cpu::gemm(false, true, rows, out_features, in, T(1), x, in, weight, in, beta, y, out_features);
}

void linear_forward_cpu(const Tensor& x, const Tensor& weight, const Tensor& bias,
                        std::int64_t rows, std::int64_t in, std::int64_t out_features, Tensor& y) {
  detail::dispatch_floating(x.dtype(), "linear", [&]<typename T>() {
    linear_forward_kernel<T>(detail::ptr<T>(x), detail::ptr<T>(weight),
                             bias.defined() ? detail::ptr<T>(bias) : nullptr, rows, in,
                             out_features, detail::ptr<T>(y));
  });
}

// One linear's gradients on raw pointers; a null output is not wanted.
//   dx = dy @ W, dW = dy^T @ x, dbias = column sums of dy (each column sums its rows in order)
template <typename T>
void linear_backward_kernel(const T* dy, const T* x, const T* weight, std::int64_t rows,
                            std::int64_t in, std::int64_t out_features, T* dx, T* dw, T* dbias) {
  if (dx)
    cpu::gemm(false, false, rows, in, out_features, T(1), dy, out_features, weight, in, T(0), dx,
              in);
  if (dw)
    cpu::gemm(true, false, out_features, in, rows, T(1), dy, out_features, x, in, T(0), dw, in);
  if (!dbias) return;
  std::fill(dbias, dbias + out_features, T(0));
  // Split by 16-column pieces; each column still sums its rows in order.
  constexpr std::int64_t piece = 16;
  detail::parallel_for(
      (out_features + piece - 1) / piece,
      std::max<std::int64_t>(1, 16384 / std::max<std::int64_t>(rows * piece, 1)),
      [&](std::int64_t first, std::int64_t last) {
        const std::int64_t begin = first * piece, end = std::min(out_features, last * piece);
        for (std::int64_t r = 0; r < rows; ++r)
          cpu::simd_map2(dbias + begin, dy + r * out_features + begin, dbias + begin, end - begin,
                         [](auto acc, auto v) { return acc + v; });
      });
}

void linear_backward_cpu(const Tensor& dy, const Tensor& x, const Tensor& weight, std::int64_t rows,
                         std::int64_t in, std::int64_t out_features,
                         const autograd::BackwardContext& ctx, Tensor& dx, Tensor& dw,
                         Tensor& dbias) {
  if (ctx.needs_grad(0)) dx = detail::new_tensor(x.shape(), x.dtype());
  if (ctx.needs_grad(1)) dw = detail::new_tensor(weight.shape(), weight.dtype());
  if (ctx.needs_grad(2)) dbias = detail::new_tensor({out_features}, x.dtype());
  detail::dispatch_floating(x.dtype(), "linear backward", [&]<typename T>() {
    auto maybe = [](Tensor& t) { return t.defined() ? detail::ptr<T>(t) : nullptr; };
    linear_backward_kernel<T>(detail::ptr<T>(dy), detail::ptr<T>(x), detail::ptr<T>(weight), rows,
                              in, out_features, maybe(dx), maybe(dw), maybe(dbias));
  });
}

// --- grouped_linear: G independent linears, x (G, rows, in), W (G, out, in), bias (G, out)

// The CPU runs linear's own kernels once per group on that group's slices, so group g's
// values are bitwise those of linear(x[g], W[g], bias[g]).
void grouped_linear_forward_cpu(const Tensor& x, const Tensor& weight, const Tensor& bias,
                                std::int64_t groups, std::int64_t rows, std::int64_t in,
                                std::int64_t out_features, Tensor& y) {
  detail::dispatch_floating(x.dtype(), "grouped_linear", [&]<typename T>() {
    const T* px = detail::ptr<T>(x);
    const T* pw = detail::ptr<T>(weight);
    const T* pb = bias.defined() ? detail::ptr<T>(bias) : nullptr;
    T* py = detail::ptr<T>(y);
    for (std::int64_t g = 0; g < groups; ++g)
      linear_forward_kernel<T>(px + g * rows * in, pw + g * out_features * in,
                               pb ? pb + g * out_features : nullptr, rows, in, out_features,
                               py + g * rows * out_features);
  });
}

void grouped_linear_backward_cpu(const Tensor& dy, const Tensor& x, const Tensor& weight,
                                 std::int64_t groups, std::int64_t rows, std::int64_t in,
                                 std::int64_t out_features, const autograd::BackwardContext& ctx,
                                 Tensor& dx, Tensor& dw, Tensor& dbias) {
  if (ctx.needs_grad(0)) dx = detail::new_tensor(x.shape(), x.dtype());
  if (ctx.needs_grad(1)) dw = detail::new_tensor(weight.shape(), weight.dtype());
  if (ctx.needs_grad(2)) dbias = detail::new_tensor({groups, out_features}, x.dtype());
  detail::dispatch_floating(x.dtype(), "grouped_linear backward", [&]<typename T>() {
    auto at = [](Tensor& t, std::int64_t offset) {
      return t.defined() ? detail::ptr<T>(t) + offset : nullptr;
    };
    const T* pdy = detail::ptr<T>(dy);
    const T* px = detail::ptr<T>(x);
    const T* pw = detail::ptr<T>(weight);
    for (std::int64_t g = 0; g < groups; ++g)
      linear_backward_kernel<T>(pdy + g * rows * out_features, px + g * rows * in,
                                pw + g * out_features * in, rows, in, out_features,
                                at(dx, g * rows * in), at(dw, g * out_features * in),
                                at(dbias, g * out_features));
  });
}

// The GPU: one strided-batched GEMM per product over the groups; the bias through
// broadcasting ops (the same values up to the GEMMs' rounding).
Tensor grouped_linear_cuda(const Tensor& x3, const Tensor& weight, const Tensor& bias) {
  Tensor y = matmul(x3, transpose(weight, 1, 2));
  if (bias.defined()) y = add(y, unsqueeze(bias, 1));
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
  const MatmulPlan plan = plan_matmul(a.shape(), b.shape());
  Tensor out = detail::new_tensor(plan.out_shape, a.dtype(), a.device());
  if (a.device().is_cuda())
    matmul_forward_cuda(a, b, plan, out);
  else
    matmul_forward_cpu(a, b, plan, out);
  autograd::record(
      "matmul", {a, b}, {&out}, {a, b},
      [plan](const std::vector<Tensor>& grads,
             const autograd::BackwardContext& ctx) -> std::vector<Tensor> {
        const Tensor& dc = grads[0];
        if (!dc.defined()) return {Tensor(), Tensor()};
        const Tensor& a = ctx.saved(0);
        const Tensor& b = ctx.saved(1);
        Tensor da, db;
        if (a.device().is_cuda())
          matmul_backward_cuda(dc, a, b, plan, ctx.needs_grad(0), ctx.needs_grad(1), da, db);
        else
          matmul_backward_cpu(dc, a, b, plan, ctx.needs_grad(0), ctx.needs_grad(1), da, db);
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
  Tensor y = detail::new_tensor(y_shape, x.dtype(), x.device());
  if (x.device().is_cuda())
    linear_forward_cuda(x, weight, bias, rows, in, out_features, y);
  else
    linear_forward_cpu(x, weight, bias, rows, in, out_features, y);
  autograd::record(
      "linear", {x, weight, bias}, {&y}, {x, weight},
      [rows, in, out_features](const std::vector<Tensor>& grads,
                               const autograd::BackwardContext& ctx) -> std::vector<Tensor> {
        const Tensor& dy = grads[0];
        if (!dy.defined()) return {Tensor(), Tensor(), Tensor()};
        const Tensor& x = ctx.saved(0);
        const Tensor& weight = ctx.saved(1);
        Tensor dx, dw, dbias;
        if (x.device().is_cuda())
          linear_backward_cuda(dy, x, weight, rows, in, out_features, ctx, dx, dw, dbias);
        else
          linear_backward_cpu(dy, x, weight, rows, in, out_features, ctx, dx, dw, dbias);
        return {dx, dw, dbias};
      });
  return y;
}

}  // namespace headgrad

namespace headgrad {

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
  if (x.device().is_cuda())
    return reshape(grouped_linear_cuda(reshape(x, {groups, rows, in}), weight, bias), y_shape);
  Tensor y = detail::new_tensor(y_shape, x.dtype(), x.device());
  grouped_linear_forward_cpu(x, weight, bias, groups, rows, in, out_features, y);
  autograd::record("grouped_linear", {x, weight, bias}, {&y}, {x, weight},
                   [groups, rows, in, out_features](
                       const std::vector<Tensor>& grads,
                       const autograd::BackwardContext& ctx) -> std::vector<Tensor> {
                     const Tensor& dy = grads[0];
                     if (!dy.defined()) return {Tensor(), Tensor(), Tensor()};
                     Tensor dx, dw, dbias;
                     grouped_linear_backward_cpu(dy, ctx.saved(0), ctx.saved(1), groups, rows, in,
                                                 out_features, ctx, dx, dw, dbias);
                     return {dx, dw, dbias};
                   });
  return y;
}

}  // namespace headgrad
