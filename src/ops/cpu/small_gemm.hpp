// Small GEMMs (the attention core's per-head products) through JIT kernels.
//
// OpenBLAS spends most of a 32 x 64 x 32 product packing its operands and walking its
// driver: 1.65 us per call on this project's reference machine against 0.64 us for a
// kernel generated for the exact shape and leading dimensions by libxsmm's code generator
// (docs/performance.md, "Small GEMMs"). small_gemm hands such products to those kernels
// and everything else to gemm() (OpenBLAS).
//
// Only libxsmm's generator library (libxsmmgen) is used, not its dispatcher: the
// dispatcher's registry alone costs 10 MiB of resident memory. Kernels are generated on
// first use of a shape, kept for the life of the process (one executable mapping each, at
// most kMaxKernels of them) and looked up through a per-thread cache.
#pragma once

#include <cstdint>

namespace headgrad::cpu {

// C (m,n) = op(A) (m,k) @ B (k,n) + beta * C, row-major, op(A) = A (stored (m,k)) or A^T
// (trans_a: stored (k,m)); beta is 0 (C is overwritten, NaN-safe) or 1. Alpha is always 1.
// float32 products with m, n, k <= kMaxSmallDim and m*n*k <= kMaxSmallWork run on a JIT
// kernel when the generator is available and HEADGRAD_SMALL_GEMM is not "0"; all others,
// and every float64 product, go to gemm(). Throws ValueError for beta other than 0 or 1.
void small_gemm(bool trans_a, std::int64_t m, std::int64_t n, std::int64_t k, const float* a,
                std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c,
                std::int64_t ldc);
void small_gemm(bool trans_a, std::int64_t m, std::int64_t n, std::int64_t k, const double* a,
                std::int64_t lda, const double* b, std::int64_t ldb, double beta, double* c,
                std::int64_t ldc);

// dst (cols, rows) = src (rows, cols)^T, src with row stride ld, dst tight: the B^T operand
// small_gemm does not take, made explicit. float32 moves 8 x 8 blocks in AVX registers.
void transpose_into(const float* src, std::int64_t rows, std::int64_t cols, std::int64_t ld,
                    float* dst);
void transpose_into(const double* src, std::int64_t rows, std::int64_t cols, std::int64_t ld,
                    double* dst);

constexpr std::int64_t kMaxSmallDim = 256;
constexpr std::int64_t kMaxSmallWork = std::int64_t{1} << 20;

// Whether float32 small products run on JIT kernels in this process: libheadgrad was built
// with libxsmm's generator, the CPU has AVX2 at least, and HEADGRAD_SMALL_GEMM is not "0".
bool small_gemm_jit_enabled();

// How many distinct kernels this process has generated (for tests).
std::int64_t small_gemm_kernel_count();

}  // namespace headgrad::cpu
