// The matrix products on the GPU (Kernels::matmul*, linear*; spec: src/core/kernels.hpp):
// every product is one cuBLAS strided-batched GEMM (Backend::gemm, blas.cu).
//
// matmul: each operand's matrices are either one per batch entry (stride m*k / k*n) or a
// single matrix repeated (stride 0); an operand broadcast in any other way (batch (2,1)
// against (1,3)) is first expanded to the full batch. A gradient is computed per batch entry
// and summed back to its operand's shape (the identity when nothing was broadcast).
// linear: the groups are the GEMM's batch; the bias rows are a broadcast copy written before
// a GEMM with beta = 1.
#include "core/dispatch.hpp"
#include "cuda/backend.hpp"

namespace headgrad::cuda {

namespace {

// An operand's matrices as the GEMM reads them.
struct Operand {
  Tensor matrices;      // the operand as stored, or expanded to the full batch
  std::int64_t stride;  // elements between batch entries (0: one shared matrix)
};

Shape with_matrix(const Shape& batch_shape, const Shape& promoted) {
  Shape full = batch_shape;
  full.push_back(promoted[promoted.size() - 2]);
  full.push_back(promoted.back());
  return full;
}

// The operand `t` (promoted shape `promoted`, `matrices` stored) read by every batch entry.
Operand batch_operand(CudaBackend& gpu, const Tensor& t, const Shape& promoted,
                      std::int64_t matrices, const headgrad::detail::MatmulPlan& p) {
  const std::int64_t rows = promoted[promoted.size() - 2], cols = promoted.back();
  if (matrices == p.batch) return {t, rows * cols};
  if (matrices == 1) return {t, 0};
  Tensor full = detail::new_tensor(with_matrix(p.batch_shape, promoted), t.dtype(), t.device());
  gpu.expand(detail::alias(t, promoted), full);
  return {full, rows * cols};
}

// `full` (one matrix per batch entry) summed into the gradient `out` of an operand whose
// matrices are broadcast (fewer than the batch's).
void sum_to_operand(CudaBackend& gpu, const Tensor& full, const Shape& promoted,
                    const headgrad::detail::MatmulPlan& p, Tensor& out) {
  const Shape full_shape = with_matrix(p.batch_shape, promoted);
  Shape keep(full_shape.size() - promoted.size(), 1);
  keep.insert(keep.end(), promoted.begin(), promoted.end());
  gpu.reduce(Reduce::sum, detail::alias(full, full_shape), keep, out);
}

}  // namespace

void CudaBackend::matmul(const Tensor& a, const Tensor& b, const headgrad::detail::MatmulPlan& p,
                         Tensor& out) {
  if (p.fold_batch_into_rows) {
    gemm(Gemm{.m = p.batch * p.m, .n = p.n, .k = p.k, .lda = p.k, .ldb = p.n, .ldc = p.n}, a, b,
         out);
    return;
  }
  const Operand oa = batch_operand(*this, a, p.a_promoted, p.a_matrices, p);
  const Operand ob = batch_operand(*this, b, p.b_promoted, p.b_matrices, p);
  gemm(Gemm{.m = p.m,
            .n = p.n,
            .k = p.k,
            .lda = p.k,
            .ldb = p.n,
            .ldc = p.n,
            .stride_a = oa.stride,
            .stride_b = ob.stride,
            .stride_c = p.m * p.n,
            .batch = p.batch},
       oa.matrices, ob.matrices, out);
}

void CudaBackend::matmul_backward(const Tensor& dc, const Tensor& a, const Tensor& b,
                                  const headgrad::detail::MatmulPlan& p, Tensor& da, Tensor& db) {
  if (p.fold_batch_into_rows) {
    if (da.defined())  // dA (batch*m, k) = dC (batch*m, n) @ B^T
      gemm(Gemm{.trans_b = true,
                .m = p.batch * p.m,
                .n = p.k,
                .k = p.n,
                .lda = p.n,
                .ldb = p.n,
                .ldc = p.k},
           dc, b, da);
    if (db.defined())  // dB (k, n) = A^T (k, batch*m) @ dC (batch*m, n)
      gemm(Gemm{.trans_a = true,
                .m = p.k,
                .n = p.n,
                .k = p.batch * p.m,
                .lda = p.k,
                .ldb = p.n,
                .ldc = p.n},
           a, dc, db);
    return;
  }
  const Operand oa = batch_operand(*this, a, p.a_promoted, p.a_matrices, p);
  const Operand ob = batch_operand(*this, b, p.b_promoted, p.b_matrices, p);
  if (da.defined()) {  // dA[i] (m, k) = dC[i] (m, n) @ B[i]^T
    const bool direct = p.a_matrices == p.batch;
    Tensor full = direct ? da : detail::new_tensor({p.batch * p.m * p.k}, a.dtype(), a.device());
    gemm(Gemm{.trans_b = true,
              .m = p.m,
              .n = p.k,
              .k = p.n,
              .lda = p.n,
              .ldb = p.n,
              .ldc = p.k,
              .stride_a = p.m * p.n,
              .stride_b = ob.stride,
              .stride_c = p.m * p.k,
              .batch = p.batch},
         dc, ob.matrices, full);
    if (!direct) sum_to_operand(*this, full, p.a_promoted, p, da);
  }
  if (db.defined()) {  // dB[i] (k, n) = A[i]^T (k, m) @ dC[i] (m, n)
    const bool direct = p.b_matrices == p.batch;
    Tensor full = direct ? db : detail::new_tensor({p.batch * p.k * p.n}, b.dtype(), b.device());
    gemm(Gemm{.trans_a = true,
              .m = p.k,
              .n = p.n,
              .k = p.m,
              .lda = p.k,
              .ldb = p.n,
              .ldc = p.n,
              .stride_a = oa.stride,
              .stride_b = p.m * p.n,
              .stride_c = p.k * p.n,
              .batch = p.batch},
         oa.matrices, dc, full);
    if (!direct) sum_to_operand(*this, full, p.b_promoted, p, db);
  }
}

void CudaBackend::linear(const Tensor& x, const Tensor& weight, const Tensor& bias,
                         const LinearProblem& s, Tensor& y) {
  double beta = 0.0;
  if (bias.defined() && s.rows > 0) {  // bias rows (a broadcast copy), then beta = 1
    Tensor rows = detail::alias(y, {s.groups, s.rows, s.out});
    expand(detail::alias(bias, {s.groups, 1, s.out}), rows);
    beta = 1.0;
  }
  gemm(Gemm{.trans_b = true,
            .m = s.rows,
            .n = s.out,
            .k = s.in,
            .lda = s.in,
            .ldb = s.in,
            .ldc = s.out,
            .stride_a = s.rows * s.in,
            .stride_b = s.out * s.in,
            .stride_c = s.rows * s.out,
            .batch = s.groups,
            .beta = beta},
       x, weight, y);
}

void CudaBackend::linear_backward(const Tensor& dy, const Tensor& x, const Tensor& weight,
                                  const LinearProblem& s, Tensor& dx, Tensor& dweight,
                                  Tensor& dbias) {
  if (dx.defined())  // dx[g] (rows, in) = dy[g] (rows, out) @ W[g] (out, in)
    gemm(Gemm{.m = s.rows,
              .n = s.in,
              .k = s.out,
              .lda = s.out,
              .ldb = s.in,
              .ldc = s.in,
              .stride_a = s.rows * s.out,
              .stride_b = s.out * s.in,
              .stride_c = s.rows * s.in,
              .batch = s.groups},
         dy, weight, dx);
  if (dweight.defined())  // dW[g] (out, in) = dy[g]^T (out, rows) @ x[g] (rows, in)
    gemm(Gemm{.trans_a = true,
              .m = s.out,
              .n = s.in,
              .k = s.rows,
              .lda = s.out,
              .ldb = s.in,
              .ldc = s.in,
              .stride_a = s.rows * s.out,
              .stride_b = s.rows * s.in,
              .stride_c = s.out * s.in,
              .batch = s.groups},
         dy, x, dweight);
  if (dbias.defined())  // the column sums of each group's dy (rows, out)
    reduce(Reduce::sum, detail::alias(dy, {s.groups, s.rows, s.out}), {s.groups, 1, s.out}, dbias);
}

}  // namespace headgrad::cuda
