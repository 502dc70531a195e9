// jit_gemm and small_gemm (see small_gemm.hpp): a cache of JIT kernels from libxsmm's code
// generator, with gemm() (OpenBLAS) for everything the kernels do not cover.
//
// libxsmm is column-major. A row-major (m,n) matrix with row stride ld is, read
// column-major, its transpose with leading dimension ld, so
//   row-major   C (m,n) = op(A) (m,k) @ B (k,n)
//   column-major C^T (n,m) = B^T (n,k) @ op(A)^T (k,m)
// which is a column-major kernel of shape (M, N, K) = (n, m, k) whose first operand is B
// (leading dimension ldb) and second is A (leading dimension lda), transposed by the kernel
// (LIBXSMM_GEMM_FLAG_TRANS_B) exactly when trans_a. The generator cannot transpose the
// first operand, so jit_gemm copies a B^T operand transposed into a per-thread scratch.
//
// A kernel repeats bitwise. Kernels of different shapes may order an element's
// multiply-adds differently, so a product split into row or column blocks (blas.cpp, at 2
// threads and more) agrees with the whole to rounding, like OpenBLAS's.
#include "ops/cpu/small_gemm.hpp"

#include <immintrin.h>
#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "headgrad/core/error.hpp"
#include "ops/cpu/blas.hpp"

#if HEADGRAD_HAVE_XSMMGEN
#include <libxsmm_cpuid.h>
#include <libxsmm_generator.h>
#endif

namespace headgrad::cpu {

namespace {

// A generated kernel: column-major C' = first @ second (+ C' when beta is 1).
using Kernel = void (*)(const float* first, const float* second, float* c);

// Kernels are few (the attention core uses a handful of shapes per model); the cap bounds
// the executable mappings a process with ever-changing shapes could accumulate.
constexpr std::size_t kMaxKernels = 1024;

struct Key {
  std::int32_t m, n, k, lda, ldb, ldc;
  bool trans_a, beta_one;
  bool operator==(const Key&) const = default;
};

struct KeyHash {
  std::size_t operator()(const Key& key) const {
    std::size_t h = 1469598103934665603ull;
    for (std::int64_t v : {std::int64_t{key.m}, std::int64_t{key.n}, std::int64_t{key.k},
                           std::int64_t{key.lda}, std::int64_t{key.ldb}, std::int64_t{key.ldc},
                           std::int64_t{key.trans_a} * 2 + std::int64_t{key.beta_one}})
      h = (h ^ static_cast<std::size_t>(v)) * 1099511628211ull;
    return h;
  }
};

using KernelMap = std::unordered_map<Key, Kernel, KeyHash>;

#if HEADGRAD_HAVE_XSMMGEN

// HEADGRAD_SMALL_GEMM: unset or anything else: the policy; "0": no JIT kernel at all;
// "small": JIT kernels for the small products only.
std::string jit_setting() {
  const char* value = std::getenv("HEADGRAD_SMALL_GEMM");
  return value == nullptr ? std::string() : std::string(value);
}

bool env_allows_jit() { return jit_setting() != "0"; }

int target_arch() {
  static const int arch = libxsmm_cpuid();
  return arch;
}

bool jit_enabled() {
  static const bool enabled = env_allows_jit() && target_arch() >= LIBXSMM_X86_AVX2;
  return enabled;
}

// The largest product (multiply-adds) jit_gemm takes beyond the small ones: see
// jit_gemm_max_work() in small_gemm.hpp.
std::int64_t max_work() {
  static const std::int64_t work = [] {
    if (!jit_enabled()) return std::int64_t{0};
    const std::string setting = jit_setting();
    if (setting == "small" || target_arch() < LIBXSMM_X86_AVX512_CORE) return std::int64_t{0};
    if (setting == "all" || !blas_uses_avx512()) return std::numeric_limits<std::int64_t>::max();
    return kMaxMediumWork;
  }();
  return work;
}

// Generates the kernel for `key` into its own read+execute mapping; nullptr when the
// generator declines the shape (the caller then uses OpenBLAS).
Kernel generate(const Key& key) {
  libxsmm_descriptor_blob blob;
  const libxsmm_gemm_descriptor* desc = libxsmm_sgemm_descriptor_init(
      &blob, key.n, key.m, key.k, key.ldb, key.lda, key.ldc, 1.0f, key.beta_one ? 1.0f : 0.0f,
      key.trans_a ? LIBXSMM_GEMM_FLAG_TRANS_B : LIBXSMM_GEMM_FLAG_NONE, LIBXSMM_GEMM_PREFETCH_NONE);
  if (desc == nullptr) return nullptr;
  // Under the registry mutex. Left uninitialized: only the pages the generator writes
  // become resident (a zero-filled megabyte would add 1 MiB to every process's peak).
  constexpr std::size_t kBufferSize = std::size_t{1} << 20;
  static const std::unique_ptr<unsigned char[]> buffer(new unsigned char[kBufferSize]);
  libxsmm_generated_code code;
  std::memset(&code, 0, sizeof(code));
  code.generated_code = buffer.get();
  code.buffer_size = static_cast<unsigned int>(kBufferSize);
  code.code_type = 2;  // machine code
  code.arch = static_cast<unsigned int>(target_arch());
  libxsmm_generator_gemm_kernel(&code, desc);
  if (code.last_error != 0 || code.code_size == 0) return nullptr;
  void* memory =
      mmap(nullptr, code.code_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) return nullptr;
  std::memcpy(memory, buffer.get(), code.code_size);
  if (mprotect(memory, code.code_size, PROT_READ | PROT_EXEC) != 0) {
    munmap(memory, code.code_size);
    return nullptr;
  }
  return reinterpret_cast<Kernel>(memory);
}

std::mutex& registry_mutex() {
  static std::mutex mutex;
  return mutex;
}

KernelMap& registry() {  // every kernel ever generated (nullptr: declined); under the mutex
  static KernelMap map;
  return map;
}

// The kernel for `key`: the thread's own cache first, then the shared registry, then the
// generator. nullptr means "use OpenBLAS".
Kernel kernel_for(const Key& key) {
  thread_local KernelMap local;
  if (auto it = local.find(key); it != local.end()) return it->second;
  Kernel kernel = nullptr;
  {
    std::lock_guard<std::mutex> lock(registry_mutex());
    KernelMap& shared = registry();
    if (auto it = shared.find(key); it != shared.end()) {
      kernel = it->second;
    } else if (shared.size() < kMaxKernels) {
      kernel = generate(key);
      shared.emplace(key, kernel);
    } else {
      return nullptr;  // over the cap: not remembered, so the thread asks again next time
    }
  }
  local.emplace(key, kernel);
  return kernel;
}

#else  // built without libxsmm's generator

bool jit_enabled() { return false; }
std::int64_t max_work() { return 0; }
Kernel kernel_for(const Key&) { return nullptr; }

#endif

void check_beta(double beta) {
  if (beta != 0.0 && beta != 1.0)
    throw ValueError("small_gemm: beta must be 0 or 1, got " + std::to_string(beta));
}

bool fits_kernel(std::int64_t m, std::int64_t n, std::int64_t k) {
  return m >= 1 && n >= 1 && k >= 1 && m <= kMaxSmallDim && n <= kMaxSmallDim &&
         k <= kMaxSmallDim && m * n * k <= kMaxSmallWork;
}

// Sizes and row strides a kernel can take: strides at least the stored row length, and
// everything 32-bit.
bool strides_fit(bool trans_a, std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t lda,
                 std::int64_t ldb, std::int64_t ldc) {
  constexpr std::int64_t max = std::numeric_limits<std::int32_t>::max();
  return lda >= (trans_a ? m : k) && ldb >= n && ldc >= n && m <= max && n <= max && k <= max &&
         lda <= max && ldb <= max && ldc <= max;
}

// Whether the policy puts this product on a JIT kernel (small_gemm.hpp, jit_gemm).
bool jit_takes(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
               std::int64_t lda, std::int64_t ldb, std::int64_t ldc) {
  if (!jit_enabled() || m < 1 || n < 1 || k < 1) return false;
  if (trans_b && k * n > kMaxTransposedB) return false;
  if (!strides_fit(trans_a, m, n, k, lda, trans_b ? n : ldb, ldc)) return false;
  // in double: m * n * k of 32-bit sizes can overflow int64
  return fits_kernel(m, n, k) ||
         static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) <=
             static_cast<double>(max_work());
}

// B (n,k) with row stride ldb, transposed into this thread's scratch: (k,n), tight.
const float* transposed_b(const float* b, std::int64_t n, std::int64_t k, std::int64_t ldb) {
  thread_local std::vector<float> scratch;
  scratch.resize(static_cast<std::size_t>(k * n));
  transpose_into(b, n, k, ldb, scratch.data());
  return scratch.data();
}

}  // namespace

bool jit_gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
              const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta,
              float* c, std::int64_t ldc) {
  if ((beta != 0.0f && beta != 1.0f) || !jit_takes(trans_a, trans_b, m, n, k, lda, ldb, ldc))
    return false;
  const std::int64_t ldb_used = trans_b ? n : ldb;
  const Key key{static_cast<std::int32_t>(m),
                static_cast<std::int32_t>(n),
                static_cast<std::int32_t>(k),
                static_cast<std::int32_t>(lda),
                static_cast<std::int32_t>(ldb_used),
                static_cast<std::int32_t>(ldc),
                trans_a,
                beta == 1.0f};
  Kernel kernel = kernel_for(key);
  if (kernel == nullptr) return false;
  kernel(trans_b ? transposed_b(b, n, k, ldb) : b, a, c);
  return true;
}

void small_gemm(bool trans_a, std::int64_t m, std::int64_t n, std::int64_t k, const float* a,
                std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c,
                std::int64_t ldc) {
  check_beta(beta);
  if (jit_gemm(trans_a, false, m, n, k, a, lda, b, ldb, beta, c, ldc)) return;
  gemm(trans_a, false, m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc);
}

void small_gemm(bool trans_a, std::int64_t m, std::int64_t n, std::int64_t k, const double* a,
                std::int64_t lda, const double* b, std::int64_t ldb, double beta, double* c,
                std::int64_t ldc) {
  check_beta(beta);
  gemm(trans_a, false, m, n, k, 1.0, a, lda, b, ldb, beta, c, ldc);
}

namespace {

template <typename T>
void transpose_scalar(const T* src, std::int64_t row_begin, std::int64_t row_end,
                      std::int64_t col_begin, std::int64_t col_end, std::int64_t rows,
                      std::int64_t ld, T* dst) {
  for (std::int64_t c = col_begin; c < col_end; ++c)
    for (std::int64_t r = row_begin; r < row_end; ++r) dst[c * rows + r] = src[r * ld + c];
}

#if defined(__AVX__)
// One 8 x 8 block: rows r..r+7 of src (stride ld) become rows of dst (stride rows).
void transpose_block8(const float* src, std::int64_t ld, float* dst, std::int64_t rows) {
  __m256 x[8], t[8], u[8];
  for (int i = 0; i < 8; ++i) x[i] = _mm256_loadu_ps(src + i * ld);
  for (int i = 0; i < 8; i += 2) {  // interleave pairs of rows
    t[i] = _mm256_unpacklo_ps(x[i], x[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(x[i], x[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {  // then pairs of pairs, within each 128-bit lane
    u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
    u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
    u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
  }
  for (int i = 0; i < 4; ++i) {  // and across lanes: rows 0-3 and 4-7 of the result
    _mm256_storeu_ps(dst + i * rows, _mm256_permute2f128_ps(u[i], u[i + 4], 0x20));
    _mm256_storeu_ps(dst + (i + 4) * rows, _mm256_permute2f128_ps(u[i], u[i + 4], 0x31));
  }
}
#endif

}  // namespace

void transpose_into(const float* src, std::int64_t rows, std::int64_t cols, std::int64_t ld,
                    float* dst) {
  std::int64_t full_rows = 0, full_cols = 0;
#if defined(__AVX__)
  full_rows = rows / 8 * 8;
  full_cols = cols / 8 * 8;
  for (std::int64_t r = 0; r < full_rows; r += 8)
    for (std::int64_t c = 0; c < full_cols; c += 8)
      transpose_block8(src + r * ld + c, ld, dst + c * rows + r, rows);
#endif
  transpose_scalar(src, 0, full_rows, full_cols, cols, rows, ld, dst);  // right edge
  transpose_scalar(src, full_rows, rows, 0, cols, rows, ld, dst);       // bottom edge
}

void transpose_into(const double* src, std::int64_t rows, std::int64_t cols, std::int64_t ld,
                    double* dst) {
  transpose_scalar(src, 0, rows, 0, cols, rows, ld, dst);
}

bool small_gemm_jit_enabled() { return jit_enabled(); }

std::int64_t jit_gemm_max_work() { return max_work(); }

std::int64_t small_gemm_kernel_count() {
#if HEADGRAD_HAVE_XSMMGEN
  std::lock_guard<std::mutex> lock(registry_mutex());
  std::int64_t count = 0;
  for (const auto& [key, kernel] : registry()) count += kernel != nullptr ? 1 : 0;
  return count;
#else
  return 0;
#endif
}

}  // namespace headgrad::cpu
