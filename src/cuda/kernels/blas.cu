// Matrix products on the GPU through cuBLAS (the contract is Backend::gemm in
// src/core/cuda_backend.hpp).
//
// headgrad's matrices are row-major; cuBLAS's are column-major. A row-major (r, c) matrix
// with row stride ld is, read column-major, its transpose (c, r) with leading dimension ld.
// So the row-major C = op(A) op(B) is computed as the column-major C^T = op(B)^T op(A)^T:
// cuBLAS gets B first, then A, with n and m swapped, and each operand's own transpose flag.
#include <cublas_v2.h>

#include <array>
#include <climits>
#include <mutex>

#include "cuda/backend.hpp"
#include "cuda/common.cuh"
#include "headgrad/core/cuda.hpp"

namespace headgrad::cuda {

namespace {

const char* status_name(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH:
      return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR:
      return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "CUBLAS_STATUS_NOT_SUPPORTED";
    default:
      return "cuBLAS error";
  }
}

void check_blas(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw DeviceError(std::string(what) + ": " + status_name(s) + " (" + std::to_string(int(s)) +
                      ")");
}

// One handle per device, bound to the device's stream; created on first use and kept for
// the life of the process.
cublasHandle_t handle(int index) {
  static std::mutex mutex;
  static std::array<cublasHandle_t, 64> handles{};
  cudaStream_t s = stream(index);  // also makes `index` current
  std::lock_guard lock(mutex);
  if (handles[index] == nullptr) {
    check_blas(cublasCreate(&handles[index]), "matmul: cublasCreate");
    check_blas(cublasSetStream(handles[index], s), "matmul: cublasSetStream");
  }
  return handles[index];
}

int to_int(std::int64_t v, const char* what) {
  if (v < 0 || v > INT_MAX)
    throw ShapeError(std::string("matmul: ") + what + " " + std::to_string(v) +
                     " exceeds cuBLAS's 32-bit limit");
  return static_cast<int>(v);
}

}  // namespace

// C[b] = alpha op(A[b]) op(B[b]) + beta C[b], row-major (see the top of the file).
void CudaBackend::gemm(const Gemm& g, const Tensor& a, const Tensor& b, Tensor& c) {
  if (g.batch == 0 || g.m == 0 || g.n == 0) return;
  if (g.k == 0) {  // an empty sum: C = beta * C; headgrad only asks for beta 0 or 1 here
    if (g.beta == 0.0) {
      for (std::int64_t i = 0; i < g.batch; ++i) {
        Tensor block = c.detach();
        block.impl()->offset += g.offset_c + i * g.stride_c;
        block.impl()->shape = {g.m, g.ldc};
        fill(block, 0.0);
      }
    }
    return;
  }
  cublasHandle_t h = handle(c.device().index());
  const int m = to_int(g.m, "m"), n = to_int(g.n, "n"), k = to_int(g.k, "k");
  const int lda = to_int(g.lda, "lda"), ldb = to_int(g.ldb, "ldb"), ldc = to_int(g.ldc, "ldc");
  const int batch = to_int(g.batch, "batch");
  const cublasOperation_t op_a = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  switch (c.dtype()) {
    case DType::float32: {
      check_blas(cublasSetMathMode(
                     h, cuda_allow_tf32() ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH),
                 "matmul: cublasSetMathMode");
      const float alpha = static_cast<float>(g.alpha), beta = static_cast<float>(g.beta);
      const float* pa = dptr<float>(a) + g.offset_a;
      const float* pb = dptr<float>(b) + g.offset_b;
      float* pc = dptr<float>(c) + g.offset_c;
      if (batch == 1)
        check_blas(cublasSgemm(h, op_b, op_a, n, m, k, &alpha, pb, ldb, pa, lda, &beta, pc, ldc),
                   "matmul: cublasSgemm");
      else
        check_blas(
            cublasSgemmStridedBatched(h, op_b, op_a, n, m, k, &alpha, pb, ldb, g.stride_b, pa, lda,
                                      g.stride_a, &beta, pc, ldc, g.stride_c, batch),
            "matmul: cublasSgemmStridedBatched");
      break;
    }
    case DType::float64: {
      const double alpha = g.alpha, beta = g.beta;
      const double* pa = dptr<double>(a) + g.offset_a;
      const double* pb = dptr<double>(b) + g.offset_b;
      double* pc = dptr<double>(c) + g.offset_c;
      if (batch == 1)
        check_blas(cublasDgemm(h, op_b, op_a, n, m, k, &alpha, pb, ldb, pa, lda, &beta, pc, ldc),
                   "matmul: cublasDgemm");
      else
        check_blas(
            cublasDgemmStridedBatched(h, op_b, op_a, n, m, k, &alpha, pb, ldb, g.stride_b, pa, lda,
                                      g.stride_a, &beta, pc, ldc, g.stride_c, batch),
            "matmul: cublasDgemmStridedBatched");
      break;
    }
    default:
      throw DTypeError("matmul: cuBLAS needs float32 or float64, got " + to_string(c.dtype()));
  }
}

}  // namespace headgrad::cuda
