// GEMM on raw row-major pointers, backed by OpenBLAS. Only blas.cpp includes <cblas.h>
// (its CBLAS_ORDER clashes with xtensor-blas), so this header names plain C++ types only.
#pragma once

#include <cstdint>

namespace headgrad::cpu {

// C (m,n) = alpha * op(A) (m,k) @ op(B) (k,n) + beta * C, all row-major, where op(X) is X
// or X^T (trans_a / trans_b: the stored matrix is then (k,m) / (n,k)). lda/ldb/ldc are
// the row strides of the stored matrices. Empty products are handled here: m or n == 0
// writes nothing; k == 0 leaves beta * C (zeros when beta == 0, even over garbage).
// Throws ValueError if a size does not fit OpenBLAS's 32-bit integers.
void gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
          const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c,
          std::int64_t ldc);
void gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, double alpha,
          const double* a, std::int64_t lda, const double* b, std::int64_t ldb, double beta,
          double* c, std::int64_t ldc);

// `batch` GEMMs of the same sizes: C_i = alpha * op(A_i) @ op(B_i) + beta_i * C_i with
// A_i = a + a_offsets[i] (elements), likewise B_i and C_i. When `first_write` is given,
// beta_i is 0 for the batches where first_write[i] is nonzero and `beta` otherwise, so that a
// broadcast operand's gradient can be initialized by its first GEMM and accumulated by the
// later ones (beta = 1) without a separate zero fill.
void gemm_batched(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
                  float alpha, const float* a, std::int64_t lda, const std::int64_t* a_offsets,
                  const float* b, std::int64_t ldb, const std::int64_t* b_offsets, float beta,
                  float* c, std::int64_t ldc, const std::int64_t* c_offsets, std::int64_t batch,
                  const std::uint8_t* first_write = nullptr);
void gemm_batched(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
                  double alpha, const double* a, std::int64_t lda, const std::int64_t* a_offsets,
                  const double* b, std::int64_t ldb, const std::int64_t* b_offsets, double beta,
                  double* c, std::int64_t ldc, const std::int64_t* c_offsets, std::int64_t batch,
                  const std::uint8_t* first_write = nullptr);

// Whether OpenBLAS runs AVX-512 kernels in this process: its core (openblas_get_corename(),
// which OPENBLAS_CORETYPE can pin) is SkylakeX, Cooperlake or Sapphirerapids. Read once.
bool blas_uses_avx512();

}  // namespace headgrad::cpu
