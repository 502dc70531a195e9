// The GEMM wrappers of blas.hpp. This translation unit includes <cblas.h> and nothing from
// xtensor-blas (the two define CBLAS_ORDER differently).
//
// Kernels: a float32 product that jit_gemm (small_gemm.hpp) takes runs on a kernel from
// libxsmm's generator, everything else on OpenBLAS.
//
// Threads: OpenBLAS runs single-threaded and headgrad's pool (core/parallel.hpp) splits the
// work: one product into blocks of whole 16-row (or 16-column) panels of C, the larger of
// its two dimensions, one block per thread; a batch of products by product. The sum over k
// is never split, so no partial results are added up across threads. On the toy GPT
// step's shapes this gives 1.7-2.0x from a second thread where OpenBLAS's own threading
// gives 1.3-1.5x (docs/performance.md).
#include "ops/cpu/blas.hpp"

#include <cblas.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <string>
#include <type_traits>

#include "core/parallel.hpp"
#include "headgrad/core/error.hpp"
#include "ops/cpu/small_gemm.hpp"

namespace headgrad::cpu {

namespace {

blasint to_blasint(std::int64_t v, const char* what) {
  if (v < 0 || v > static_cast<std::int64_t>(INT_MAX))
    throw ValueError(std::string("gemm: ") + what + " = " + std::to_string(v) +
                     " does not fit OpenBLAS's 32-bit integers");
  return static_cast<blasint>(v);
}

// C = beta * C over an (m,n) block with row stride ldc; beta == 0 overwrites (NaN-safe).
template <typename T>
void scale_block(std::int64_t m, std::int64_t n, T beta, T* c, std::int64_t ldc) {
  for (std::int64_t i = 0; i < m; ++i) {
    T* row = c + i * ldc;
    if (beta == T(0)) {
      std::fill(row, row + n, T(0));
    } else if (beta != T(1)) {
      for (std::int64_t j = 0; j < n; ++j) row[j] *= beta;
    }
  }
}

template <typename T>
void call_gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, T alpha,
               const T* a, std::int64_t lda, const T* b, std::int64_t ldb, T beta, T* c,
               std::int64_t ldc) {
  const CBLAS_TRANSPOSE ta = trans_a ? CblasTrans : CblasNoTrans;
  const CBLAS_TRANSPOSE tb = trans_b ? CblasTrans : CblasNoTrans;
  // CBLAS requires leading dimensions >= 1 even when a dimension is empty.
  const blasint bm = to_blasint(m, "m"), bn = to_blasint(n, "n"), bk = to_blasint(k, "k");
  const blasint blda = to_blasint(std::max<std::int64_t>(lda, 1), "lda");
  const blasint bldb = to_blasint(std::max<std::int64_t>(ldb, 1), "ldb");
  const blasint bldc = to_blasint(std::max<std::int64_t>(ldc, 1), "ldc");
  if constexpr (std::is_same_v<T, float>) {
    if (alpha == 1.0f && (beta == 0.0f || beta == 1.0f) &&
        jit_gemm(trans_a, trans_b, m, n, k, a, lda, b, ldb, beta, c, ldc))
      return;
    cblas_sgemm(CblasRowMajor, ta, tb, bm, bn, bk, alpha, a, blda, b, bldb, beta, c, bldc);
  } else {
    cblas_dgemm(CblasRowMajor, ta, tb, bm, bn, bk, alpha, a, blda, b, bldb, beta, c, bldc);
  }
}

// Products with fewer multiply-adds than this stay on one thread (a split costs a few
// microseconds of handing over and waiting).
constexpr std::int64_t kParallelGemmWork = std::int64_t{1} << 18;
constexpr std::int64_t kPanel = 16;

template <typename T>
void call_gemm_split(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
                     T alpha, const T* a, std::int64_t lda, const T* b, std::int64_t ldb, T beta,
                     T* c, std::int64_t ldc) {
  const bool split_rows = m >= n;
  const std::int64_t extent = split_rows ? m : n;
  const std::int64_t panels = (extent + kPanel - 1) / kPanel;
  if (m * n * k < kParallelGemmWork || detail::parallel_chunks(panels, 1) < 2) {
    call_gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  detail::parallel_for(panels, 1, [&](std::int64_t first, std::int64_t last) {
    const std::int64_t begin = first * kPanel, end = std::min(extent, last * kPanel);
    if (split_rows)  // rows [begin, end) of op(A) and C
      call_gemm(trans_a, trans_b, end - begin, n, k, alpha, trans_a ? a + begin : a + begin * lda,
                lda, b, ldb, beta, c + begin * ldc, ldc);
    else  // columns [begin, end) of op(B) and C
      call_gemm(trans_a, trans_b, m, end - begin, k, alpha, a, lda,
                trans_b ? b + begin * ldb : b + begin, ldb, beta, c + begin, ldc);
  });
}

template <typename T>
void gemm_impl(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, T alpha,
               const T* a, std::int64_t lda, const T* b, std::int64_t ldb, T beta, T* c,
               std::int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {  // an empty sum: BLAS may skip C entirely, so scale it here
    scale_block(m, n, beta, c, ldc);
    return;
  }
  call_gemm_split(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

template <typename T>
void gemm_batched_impl(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
                       T alpha, const T* a, std::int64_t lda, const std::int64_t* a_offsets,
                       const T* b, std::int64_t ldb, const std::int64_t* b_offsets, T beta, T* c,
                       std::int64_t ldc, const std::int64_t* c_offsets, std::int64_t batch,
                       const std::uint8_t* first_write) {
  auto products = [&](std::int64_t first, std::int64_t last) {
    for (std::int64_t i = first; i < last; ++i) {
      const T beta_i = (first_write != nullptr && first_write[i] != 0) ? T(0) : beta;
      gemm_impl(trans_a, trans_b, m, n, k, alpha, a + a_offsets[i], lda, b + b_offsets[i], ldb,
                beta_i, c + c_offsets[i], ldc);
    }
  };
  // Split by product when there are enough of them; otherwise each product splits itself.
  // Products of one batch may share an output (c_offsets repeat when a broadcast operand is
  // reduced), so the batch is split only when the outputs are distinct.
  const bool distinct = std::adjacent_find(c_offsets, c_offsets + batch,
                                           [](std::int64_t x, std::int64_t y) { return y <= x; }) ==
                        c_offsets + batch;
  if (batch >= 2 * detail::parallel_chunks(batch, 1) && distinct &&
      batch * m * n * k >= kParallelGemmWork)
    detail::parallel_for(batch, 1, products);
  else
    products(0, batch);
}

}  // namespace

bool blas_uses_avx512() {
  static const bool avx512 = [] {
    const char* name = openblas_get_corename();
    std::string core = name != nullptr ? name : "";
    for (char& ch : core) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return core == "skylakex" || core == "cooperlake" || core == "sapphirerapids";
  }();
  return avx512;
}

void gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
          const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c,
          std::int64_t ldc) {
  gemm_impl(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, double alpha,
          const double* a, std::int64_t lda, const double* b, std::int64_t ldb, double beta,
          double* c, std::int64_t ldc) {
  gemm_impl(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void gemm_batched(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
                  float alpha, const float* a, std::int64_t lda, const std::int64_t* a_offsets,
                  const float* b, std::int64_t ldb, const std::int64_t* b_offsets, float beta,
                  float* c, std::int64_t ldc, const std::int64_t* c_offsets, std::int64_t batch,
                  const std::uint8_t* first_write) {
  gemm_batched_impl(trans_a, trans_b, m, n, k, alpha, a, lda, a_offsets, b, ldb, b_offsets, beta, c,
                    ldc, c_offsets, batch, first_write);
}

void gemm_batched(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
                  double alpha, const double* a, std::int64_t lda, const std::int64_t* a_offsets,
                  const double* b, std::int64_t ldb, const std::int64_t* b_offsets, double beta,
                  double* c, std::int64_t ldc, const std::int64_t* c_offsets, std::int64_t batch,
                  const std::uint8_t* first_write) {
  gemm_batched_impl(trans_a, trans_b, m, n, k, alpha, a, lda, a_offsets, b, ldb, b_offsets, beta, c,
                    ldc, c_offsets, batch, first_write);
}

}  // namespace headgrad::cpu
