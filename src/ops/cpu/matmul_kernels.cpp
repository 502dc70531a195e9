// The matrix products' CPU kernels (Kernels::matmul*, linear*): every product is one
// cblas_sgemm / cblas_dgemm call on raw pointers (blas.hpp); transposes are GEMM flags, never
// materialized; broadcast batches are read through the plan's per-batch offsets, never copied.
#include <algorithm>
#include <cstdint>

#include "core/dispatch.hpp"
#include "core/parallel.hpp"
#include "ops/cpu/blas.hpp"
#include "ops/cpu/cpu_kernels.hpp"
#include "ops/cpu/simd.hpp"

namespace headgrad::cpu {

using headgrad::detail::dispatch_floating;
using headgrad::detail::MatmulPlan;
using headgrad::detail::ptr;

namespace {

// One linear on raw pointers: y (rows, out) = x (rows, in) @ W^T + bias (bias may be null).
template <typename T>
void linear_forward_rows(const T* x, const T* weight, const T* bias, std::int64_t rows,
                         std::int64_t in, std::int64_t out_features, T* y) {
  T beta = T(0);
  if (bias) {
    headgrad::detail::parallel_for(
        rows, std::max<std::int64_t>(1, 16384 / std::max<std::int64_t>(out_features, 1)),
        [&](std::int64_t first, std::int64_t last) {
          for (std::int64_t r = first; r < last; ++r)
            std::copy(bias, bias + out_features, y + r * out_features);
        });
    beta = T(1);
  }
  gemm(false, true, rows, out_features, in, T(1), x, in, weight, in, beta, y, out_features);
}

// One linear's gradients on raw pointers; a null output is not wanted.
//   dx = dy @ W, dW = dy^T @ x, dbias = column sums of dy (each column sums its rows in order)
template <typename T>
void linear_backward_rows(const T* dy, const T* x, const T* weight, std::int64_t rows,
                          std::int64_t in, std::int64_t out_features, T* dx, T* dw, T* dbias) {
  if (dx)
    gemm(false, false, rows, in, out_features, T(1), dy, out_features, weight, in, T(0), dx, in);
  if (dw) gemm(true, false, out_features, in, rows, T(1), dy, out_features, x, in, T(0), dw, in);
  if (!dbias) return;
  std::fill(dbias, dbias + out_features, T(0));
  // Split by 16-column pieces; each column still sums its rows in order.
  constexpr std::int64_t piece = 16;
  headgrad::detail::parallel_for(
      (out_features + piece - 1) / piece,
      std::max<std::int64_t>(1, 16384 / std::max<std::int64_t>(rows * piece, 1)),
      [&](std::int64_t first, std::int64_t last) {
        const std::int64_t begin = first * piece, end = std::min(out_features, last * piece);
        for (std::int64_t r = 0; r < rows; ++r)
          simd_map2(dbias + begin, dy + r * out_features + begin, dbias + begin, end - begin,
                    [](auto acc, auto v) { return acc + v; });
      });
}

}  // namespace

void CpuKernels::matmul(const Tensor& a, const Tensor& b, const MatmulPlan& p, Tensor& out) {
  dispatch_floating(a.dtype(), "matmul", [&]<typename T>() {
    const T* pa = ptr<T>(a);
    const T* pb = ptr<T>(b);
    T* pc = ptr<T>(out);
    if (p.fold_batch_into_rows) {
      gemm(false, false, p.batch * p.m, p.n, p.k, T(1), pa, p.k, pb, p.n, T(0), pc, p.n);
    } else {
      gemm_batched(false, false, p.m, p.n, p.k, T(1), pa, p.k, p.a_offsets.data(), pb, p.n,
                   p.b_offsets.data(), T(0), pc, p.n, p.c_offsets.data(), p.batch);
    }
  });
}

// A broadcast operand's gradient accumulates straight into its own buffer: the first GEMM
// touching a matrix writes it (beta = 0), later ones add (beta = 1).
void CpuKernels::matmul_backward(const Tensor& dc, const Tensor& a, const Tensor& b,
                                 const MatmulPlan& p, Tensor& da, Tensor& db) {
  dispatch_floating(a.dtype(), "matmul backward", [&]<typename T>() {
    const T* pa = ptr<T>(a);
    const T* pb = ptr<T>(b);
    const T* pdc = ptr<T>(dc);
    if (da.defined()) {  // dA (m,k) = dC (m,n) @ B^T (n,k)
      T* pda = ptr<T>(da);
      if (p.fold_batch_into_rows) {
        gemm(false, true, p.batch * p.m, p.k, p.n, T(1), pdc, p.n, pb, p.n, T(0), pda, p.k);
      } else {
        if (p.batch == 0) std::fill(pda, pda + da.numel(), T(0));
        gemm_batched(false, true, p.m, p.k, p.n, T(1), pdc, p.n, p.c_offsets.data(), pb, p.n,
                     p.b_offsets.data(), T(1), pda, p.k, p.a_offsets.data(), p.batch,
                     p.a_first.data());
      }
    }
    if (db.defined()) {  // dB (k,n) = A^T (k,m) @ dC (m,n)
      T* pdb = ptr<T>(db);
      if (p.fold_batch_into_rows) {
        gemm(true, false, p.k, p.n, p.batch * p.m, T(1), pa, p.k, pdc, p.n, T(0), pdb, p.n);
      } else {
        if (p.batch == 0) std::fill(pdb, pdb + db.numel(), T(0));
        gemm_batched(true, false, p.k, p.n, p.m, T(1), pa, p.k, p.a_offsets.data(), pdc, p.n,
                     p.c_offsets.data(), T(1), pdb, p.n, p.b_offsets.data(), p.batch,
                     p.b_first.data());
      }
    }
  });
}

// Group by group on that group's slices, so group g's values are bitwise linear's.
void CpuKernels::linear(const Tensor& x, const Tensor& weight, const Tensor& bias,
                        const LinearProblem& s, Tensor& y) {
  dispatch_floating(x.dtype(), "linear", [&]<typename T>() {
    const T* px = ptr<T>(x);
    const T* pw = ptr<T>(weight);
    const T* pb = bias.defined() ? ptr<T>(bias) : nullptr;
    T* py = ptr<T>(y);
    for (std::int64_t g = 0; g < s.groups; ++g)
      linear_forward_rows<T>(px + g * s.rows * s.in, pw + g * s.out * s.in,
                             pb ? pb + g * s.out : nullptr, s.rows, s.in, s.out,
                             py + g * s.rows * s.out);
  });
}

void CpuKernels::linear_backward(const Tensor& dy, const Tensor& x, const Tensor& weight,
                                 const LinearProblem& s, Tensor& dx, Tensor& dweight,
                                 Tensor& dbias) {
  dispatch_floating(x.dtype(), "linear backward", [&]<typename T>() {
    auto at = [](Tensor& t, std::int64_t offset) {
      return t.defined() ? ptr<T>(t) + offset : nullptr;
    };
    const T* pdy = ptr<T>(dy);
    const T* px = ptr<T>(x);
    const T* pw = ptr<T>(weight);
    for (std::int64_t g = 0; g < s.groups; ++g)
      linear_backward_rows<T>(pdy + g * s.rows * s.out, px + g * s.rows * s.in,
                              pw + g * s.out * s.in, s.rows, s.in, s.out, at(dx, g * s.rows * s.in),
                              at(dweight, g * s.out * s.in), at(dbias, g * s.out));
  });
}

}  // namespace headgrad::cpu
