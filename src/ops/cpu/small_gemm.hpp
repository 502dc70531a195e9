// GEMMs on JIT kernels from libxsmm's code generator.
//
// OpenBLAS spends most of a 32 x 64 x 32 product packing its operands and walking its
// driver: 1.65 us per call on this project's reference machine against 0.64 us for a
// kernel generated for the exact shape and leading dimensions by libxsmm's code generator
// (docs/performance.md, "Small GEMMs"). And where the generator writes AVX-512 kernels
// while OpenBLAS runs AVX2 ones (an OpenBLAS that does not know the CPU, or one pinned by
// OPENBLAS_CORETYPE), a generated kernel is about twice as fast on every shape measured,
// up to 2048 x 512 x 128 and 1024^3 ("GEMMs on JIT kernels"). jit_gemm takes the products
// of those two kinds; gemm() (OpenBLAS) everything else.
//
// Only libxsmm's generator library (libxsmmgen) is used, not its dispatcher: the
// dispatcher's registry alone costs 10 MiB of resident memory. Kernels are generated on
// first use of a shape, kept for the life of the process (one executable mapping each, at
// most kMaxKernels of them) and looked up through a per-thread cache.
#pragma once

#include <cstdint>

namespace headgrad::cpu {

// C (m,n) = op(A) (m,k) @ op(B) (k,n) + beta * C, row-major, op(X) = X or X^T (trans_a:
// A stored (k,m); trans_b: B stored (n,k)), beta 0 (C overwritten, NaN-safe) or 1, alpha 1.
// Runs the product on a JIT kernel and returns true when the policy takes it (float32;
// m, n, k >= 1; and either a small product, m, n, k <= kMaxSmallDim and m*n*k <=
// kMaxSmallWork, or at most jit_gemm_max_work() multiply-adds; a B^T operand of at most
// kMaxTransposedB elements, copied transposed into a per-thread scratch). Returns false,
// C untouched, otherwise: the caller then uses OpenBLAS.
bool jit_gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
              const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta,
              float* c, std::int64_t ldc);

// C (m,n) = op(A) (m,k) @ B (k,n) + beta * C as jit_gemm (B not transposed), and on gemm()
// (OpenBLAS) when jit_gemm declines; every float64 product goes to gemm(). Throws
// ValueError for beta other than 0 or 1.
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
constexpr std::int64_t kMaxMediumWork = std::int64_t{1} << 24;
constexpr std::int64_t kMaxTransposedB = std::int64_t{1} << 20;  // 4 MiB of float32 per thread

// Whether float32 products run on JIT kernels in this process: libheadgrad was built
// with libxsmm's generator, the CPU has AVX2 at least, and HEADGRAD_SMALL_GEMM is not "0".
bool small_gemm_jit_enabled();

// The most multiply-adds (m*n*k) of a product jit_gemm takes beyond the small ones, chosen
// once per process by measurement (docs/performance.md, "GEMMs on JIT kernels"): 0 (the
// small products only, or none without JIT kernels) where the generator writes AVX2, or
// with HEADGRAD_SMALL_GEMM=small; any size where it writes AVX-512 and OpenBLAS runs
// narrower kernels (its core is not SkylakeX, Cooperlake or Sapphirerapids), or with
// HEADGRAD_SMALL_GEMM=all; kMaxMediumWork where both run AVX-512 (there the generated
// kernels won on the study's shapes, up to 608 x 256 x 64, and lost on the toy GPT's,
// from 2048 x 128 x 128).
std::int64_t jit_gemm_max_work();

// How many distinct kernels this process has generated (for tests).
std::int64_t small_gemm_kernel_count();

}  // namespace headgrad::cpu
