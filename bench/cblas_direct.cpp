// The baseline for matmul: cblas_sgemm called directly on raw row-major buffers. Only
// <cblas.h> here (it clashes with xtensor-blas, which headgrad's headers pull in).
#include <cblas.h>

// C (m,n) = A (m,k) @ B (k,n), row-major, contiguous.
void direct_sgemm(int m, int n, int k, const float* a, const float* b, float* c) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a, k, b, n, 0.0f, c, n);
}
