// The linear layers' GEMM shapes, one thread: cblas_sgemm (OpenBLAS, whichever kernels it
// runs here: an inherited OPENBLAS_CORETYPE pins them) against a kernel from libxsmm's
// code generator for the same row-major product. jit_gemm (src/ops/cpu/small_gemm.cpp)
// copies a B^T operand transposed before its kernel runs; the JIT column times the kernel
// alone and the next one that copy, as a 16 x 16-tiled loop (headgrad's 8 x 8 AVX blocks
// are faster). Prints a Markdown table: the best of 7 rounds per shape, GFLOP/s, the ratio
// of kernel plus copy to OpenBLAS and the largest difference between the two results.
// docs/performance.md, "GEMMs on JIT kernels", quotes it.
//   build/release/bench/bench_jit_shapes
#include <cblas.h>
#include <libxsmm_cpuid.h>
#include <libxsmm_generator.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

namespace {

using Kernel = void (*)(const float* first, const float* second, float* c);

// Row-major C (m,n) = op(A) (m,k) @ B (k,n): a column-major kernel (n, m, k) on (B, A).
Kernel generate(int m, int n, int k, int lda, int ldb, int ldc, bool trans_a) {
  libxsmm_descriptor_blob blob;
  const libxsmm_gemm_descriptor* desc = libxsmm_sgemm_descriptor_init(
      &blob, n, m, k, ldb, lda, ldc, 1.0f, 0.0f,
      trans_a ? LIBXSMM_GEMM_FLAG_TRANS_B : LIBXSMM_GEMM_FLAG_NONE, LIBXSMM_GEMM_PREFETCH_NONE);
  if (desc == nullptr) return nullptr;
  static std::vector<unsigned char> buffer(std::size_t{1} << 20);
  libxsmm_generated_code code;
  std::memset(&code, 0, sizeof(code));
  code.generated_code = buffer.data();
  code.buffer_size = static_cast<unsigned int>(buffer.size());
  code.code_type = 2;
  code.arch = static_cast<unsigned int>(libxsmm_cpuid());
  libxsmm_generator_gemm_kernel(&code, desc);
  if (code.last_error != 0 || code.code_size == 0) return nullptr;
  void* memory =
      mmap(nullptr, code.code_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) return nullptr;
  std::memcpy(memory, buffer.data(), code.code_size);
  if (mprotect(memory, code.code_size, PROT_READ | PROT_EXEC) != 0) return nullptr;
  return reinterpret_cast<Kernel>(memory);
}

template <typename F>
double best_microseconds(F f, int calls) {
  double best = 1e300;
  for (int round = 0; round < 7; ++round) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) f();
    const std::chrono::duration<double, std::micro> took = std::chrono::steady_clock::now() - start;
    best = std::min(best, took.count() / calls);
  }
  return best;
}

struct Shape {
  const char* what;
  int m, n, k;
  bool trans_a, trans_b;
};

// Times one product both ways and prints its table row.
void time_shape(const Shape& s, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  const int m = s.m, n = s.n, k = s.k;
  std::vector<float> a(static_cast<std::size_t>(m) * k), b(static_cast<std::size_t>(k) * n);
  std::vector<float> b_t(b.size()), c_blas(static_cast<std::size_t>(m) * n), c_jit(c_blas.size());
  for (float& x : a) x = dist(rng);
  for (float& x : b) x = dist(rng);
  const int lda = s.trans_a ? m : k, ldb = s.trans_b ? k : n;
  const Kernel kernel = generate(m, n, k, lda, n, n, s.trans_a);
  if (kernel == nullptr) {
    std::printf("| %s | %d x %d x %d | the generator declined |\n", s.what, m, n, k);
    return;
  }
  auto blas = [&] {
    cblas_sgemm(CblasRowMajor, s.trans_a ? CblasTrans : CblasNoTrans,
                s.trans_b ? CblasTrans : CblasNoTrans, m, n, k, 1.0f, a.data(), lda, b.data(), ldb,
                0.0f, c_blas.data(), n);
  };
  // B stored (n,k) for a B^T operand: the kernel reads it (k,n)
  auto transpose = [&] {
    constexpr int tile = 16;
    for (int i0 = 0; i0 < n; i0 += tile)
      for (int j0 = 0; j0 < k; j0 += tile)
        for (int i = i0; i < std::min(n, i0 + tile); ++i)
          for (int j = j0; j < std::min(k, j0 + tile); ++j)
            b_t[static_cast<std::size_t>(j) * n + i] = b[static_cast<std::size_t>(i) * k + j];
  };
  if (s.trans_b) transpose();
  const float* first = s.trans_b ? b_t.data() : b.data();
  auto jit = [&] { kernel(first, a.data(), c_jit.data()); };
  blas();
  jit();
  double difference = 0.0;
  for (std::size_t i = 0; i < c_blas.size(); ++i)
    difference = std::max(difference, static_cast<double>(std::fabs(c_blas[i] - c_jit[i])));
  const double flops = 2.0 * m * n * k;
  const int calls = std::max(1, static_cast<int>(2e8 / flops));
  const double t_blas = best_microseconds(blas, calls), t_jit = best_microseconds(jit, calls);
  const double t_copy = s.trans_b ? best_microseconds(transpose, calls) : 0.0;
  std::printf("| %s | %d x %d x %d | %.1f | %.0f | %.1f | %.0f | %.1f | %.2f | %.1e |\n", s.what, m,
              n, k, t_blas, flops / t_blas / 1e3, t_jit, flops / t_jit / 1e3, t_copy,
              (t_jit + t_copy) / t_blas, difference);
}

}  // namespace

int main() {
  const Shape shapes[] = {
      {"study: q/k/v projection, forward", 608, 192, 64, false, true},
      {"study: out projection, forward", 608, 64, 64, false, true},
      {"study: feed-forward in, forward", 608, 256, 64, false, true},
      {"study: feed-forward out, forward", 608, 64, 256, false, true},
      {"study: q/k/v projection, dx", 608, 64, 192, false, false},
      {"study: feed-forward in, dx", 608, 64, 256, false, false},
      {"study: feed-forward out, dx", 608, 256, 64, false, false},
      {"study: q/k/v projection, dW", 192, 64, 608, true, false},
      {"study: feed-forward in, dW", 256, 64, 608, true, false},
      {"study: unembedding, forward", 608, 22, 64, false, true},
      {"toy GPT: q/k/v projection, forward", 2048, 384, 128, false, true},
      {"toy GPT: feed-forward out, forward", 2048, 128, 512, false, true},
      {"toy GPT: feed-forward in, dx", 2048, 128, 512, false, false},
      {"toy GPT: feed-forward in, dW", 512, 128, 2048, true, false},
      {"toy GPT: feed-forward out, dW", 128, 512, 2048, true, false},
      {"square", 1024, 1024, 1024, false, false},
  };
  openblas_set_num_threads(1);
  std::printf("OpenBLAS core: %s; generator arch: %d\n\n", openblas_get_corename(),
              libxsmm_cpuid());
  std::printf(
      "| product | m x n x k | OpenBLAS us | GFLOP/s | JIT kernel us | GFLOP/s | B^T copy us "
      "| (JIT + copy) / OpenBLAS | max difference |\n|---|---|---|---|---|---|---|---|---|\n");
  std::mt19937 rng(1);
  for (const Shape& s : shapes) time_shape(s, rng);
}
