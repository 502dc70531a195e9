// cpu::small_gemm, cpu::jit_gemm and cpu::transpose_into (src/ops/cpu/small_gemm.hpp)
// against naive loops in double precision: every shape class the attention core uses, the
// linear layers' shapes with B transposed, padded leading dimensions, both betas, the
// OpenBLAS fallback beyond the size limits, products that repeat bitwise and agree with
// themselves split into blocks, and concurrent first calls from several threads.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

#include "headgrad/core/error.hpp"
#include "ops/cpu/small_gemm.hpp"

namespace cpu = headgrad::cpu;

namespace {

struct Case {
  bool trans_a;
  std::int64_t m, n, k;
  std::int64_t pad;  // extra elements per row of A, B and C
  float beta;
};

std::vector<float> random_values(std::size_t count, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(count);
  for (float& x : v) x = dist(rng);
  return v;
}

// Runs small_gemm on random operands and returns max |C - reference| / max |reference|, the
// reference computed in double from the stored operands.
double relative_error(const Case& c, std::uint32_t seed) {
  const std::int64_t a_rows = c.trans_a ? c.k : c.m, a_cols = c.trans_a ? c.m : c.k;
  const std::int64_t lda = a_cols + c.pad, ldb = c.n + c.pad, ldc = c.n + c.pad;
  const std::vector<float> a = random_values(static_cast<std::size_t>(a_rows * lda), seed);
  const std::vector<float> b = random_values(static_cast<std::size_t>(c.k * ldb), seed + 1);
  std::vector<float> out = random_values(static_cast<std::size_t>(c.m * ldc), seed + 2);
  const std::vector<float> before = out;
  cpu::small_gemm(c.trans_a, c.m, c.n, c.k, a.data(), lda, b.data(), ldb, c.beta, out.data(), ldc);
  double worst = 0.0, scale = 1e-30;
  for (std::int64_t i = 0; i < c.m; ++i) {
    for (std::int64_t j = 0; j < c.n; ++j) {
      double expected = c.beta * static_cast<double>(before[i * ldc + j]);
      for (std::int64_t p = 0; p < c.k; ++p) {
        const double a_ip = c.trans_a ? a[p * lda + i] : a[i * lda + p];
        expected += a_ip * static_cast<double>(b[p * ldb + j]);
      }
      worst = std::max(worst, std::abs(out[i * ldc + j] - expected));
      scale = std::max(scale, std::abs(expected));
    }
    for (std::int64_t j = c.n; j < ldc; ++j)  // the padding is not written
      CHECK(out[i * ldc + j] == before[i * ldc + j]);
  }
  return worst / scale;
}

}  // namespace

TEST_CASE("small_gemm matches a double-precision loop for the attention core's shape classes") {
  std::uint32_t seed = 1;
  for (bool trans_a : {false, true}) {
    for (float beta : {0.0f, 1.0f}) {
      // the toy GPT's causal blocks, the study's head dims, odd and unit sizes, and shapes
      // past the JIT limits (OpenBLAS)
      for (const auto& [m, n, k] : std::vector<std::array<std::int64_t, 3>>{{32, 32, 32},
                                                                            {32, 64, 32},
                                                                            {64, 32, 64},
                                                                            {19, 19, 8},
                                                                            {19, 64, 19},
                                                                            {7, 13, 5},
                                                                            {1, 1, 1},
                                                                            {1, 17, 3},
                                                                            {256, 256, 16},
                                                                            {300, 4, 4},
                                                                            {128, 128, 128}}) {
        for (std::int64_t pad : {0, 3}) {
          const Case c{trans_a, m, n, k, pad, beta};
          CAPTURE(trans_a);
          CAPTURE(beta);
          CAPTURE(m);
          CAPTURE(n);
          CAPTURE(k);
          CAPTURE(pad);
          CHECK(relative_error(c, seed) < 1e-5);
          seed += 3;
        }
      }
    }
  }
}

TEST_CASE("small_gemm with beta 0 overwrites C without reading it, NaN included") {
  const std::int64_t m = 32, n = 32, k = 16;
  const std::vector<float> a(static_cast<std::size_t>(m * k), 0.5f);
  const std::vector<float> b(static_cast<std::size_t>(k * n), 0.25f);
  std::vector<float> out(static_cast<std::size_t>(m * n), std::numeric_limits<float>::quiet_NaN());
  cpu::small_gemm(false, m, n, k, a.data(), k, b.data(), n, 0.0f, out.data(), n);
  for (float x : out) REQUIRE(x == doctest::Approx(16 * 0.125));
}

TEST_CASE("small_gemm rejects a beta other than 0 or 1 and handles empty products") {
  std::vector<float> a(4, 1.0f), b(4, 1.0f), out(4, 7.0f);
  CHECK_THROWS_AS(cpu::small_gemm(false, 2, 2, 2, a.data(), 2, b.data(), 2, 0.5f, out.data(), 2),
                  headgrad::ValueError);
  std::vector<double> ad(4, 1.0), bd(4, 1.0), outd(4, 7.0);
  CHECK_THROWS_AS(cpu::small_gemm(false, 2, 2, 2, ad.data(), 2, bd.data(), 2, 2.0, outd.data(), 2),
                  headgrad::ValueError);
  // k = 0: C = beta * C
  cpu::small_gemm(false, 2, 2, 0, a.data(), 1, b.data(), 2, 0.0f, out.data(), 2);
  for (float x : out) CHECK(x == 0.0f);
  std::fill(out.begin(), out.end(), 7.0f);
  cpu::small_gemm(false, 2, 2, 0, a.data(), 1, b.data(), 2, 1.0f, out.data(), 2);
  for (float x : out) CHECK(x == 7.0f);
}

TEST_CASE("small_gemm in float64 goes through OpenBLAS and matches the loop") {
  const std::int64_t m = 5, n = 6, k = 7;
  std::vector<double> a(static_cast<std::size_t>(k * m)), b(static_cast<std::size_t>(k * n));
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = std::sin(0.3 * static_cast<double>(i));
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = std::cos(0.7 * static_cast<double>(i));
  std::vector<double> out(static_cast<std::size_t>(m * n), 1.0);
  cpu::small_gemm(true, m, n, k, a.data(), m, b.data(), n, 1.0, out.data(), n);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      double expected = 1.0;
      for (std::int64_t p = 0; p < k; ++p) expected += a[p * m + i] * b[p * n + j];
      CHECK(out[i * n + j] == doctest::Approx(expected).epsilon(1e-14));
    }
}

TEST_CASE("small_gemm generates one kernel per shape and reuses it") {
  const std::int64_t m = 11, n = 23, k = 9;  // a shape no other test uses
  const std::vector<float> a = random_values(static_cast<std::size_t>(m * k), 5);
  const std::vector<float> b = random_values(static_cast<std::size_t>(k * n), 6);
  std::vector<float> out(static_cast<std::size_t>(m * n));
  const std::int64_t before = cpu::small_gemm_kernel_count();
  for (int i = 0; i < 5; ++i)
    cpu::small_gemm(false, m, n, k, a.data(), k, b.data(), n, 0.0f, out.data(), n);
  const std::int64_t after = cpu::small_gemm_kernel_count();
  if (cpu::small_gemm_jit_enabled())
    CHECK(after == before + 1);
  else
    CHECK(after == 0);
}

TEST_CASE("small_gemm's first calls from several threads at once give correct results") {
  std::vector<std::thread> threads;
  std::vector<double> errors(6, 1.0);
  for (int t = 0; t < 6; ++t)
    threads.emplace_back([t, &errors] {
      // distinct new shapes per thread, each generated while the others generate theirs
      const Case c{t % 2 == 1, 13 + t, 29 - t, 6 + t, 1, 1.0f};
      double worst = 0.0;
      for (int round = 0; round < 20; ++round)
        worst = std::max(worst, relative_error(c, static_cast<std::uint32_t>(100 + t * 7 + round)));
      errors[static_cast<std::size_t>(t)] = worst;
    });
  for (std::thread& th : threads) th.join();
  for (double e : errors) CHECK(e < 1e-5);
}

TEST_CASE("transpose_into matches a loop for every small size, padded or not") {
  for (std::int64_t rows = 0; rows <= 19; ++rows)
    for (std::int64_t cols = 0; cols <= 19; ++cols)
      for (std::int64_t pad : {0, 5}) {
        const std::int64_t ld = cols + pad;
        std::vector<float> src(static_cast<std::size_t>(std::max<std::int64_t>(rows * ld, 1)));
        std::vector<double> src_d(src.size());
        for (std::size_t i = 0; i < src.size(); ++i) {
          src[i] = static_cast<float>(i) + 0.5f;
          src_d[i] = static_cast<double>(i) - 0.25;
        }
        std::vector<float> dst(static_cast<std::size_t>(rows * cols) + 1, -1.0f);
        std::vector<double> dst_d(dst.size(), -1.0);
        cpu::transpose_into(src.data(), rows, cols, ld, dst.data());
        cpu::transpose_into(src_d.data(), rows, cols, ld, dst_d.data());
        bool ok = dst.back() == -1.0f && dst_d.back() == -1.0;  // nothing past the end
        for (std::int64_t r = 0; r < rows; ++r)
          for (std::int64_t c = 0; c < cols; ++c)
            ok = ok && dst[c * rows + r] == src[r * ld + c] &&
                 dst_d[c * rows + r] == src_d[r * ld + c];
        CAPTURE(rows);
        CAPTURE(cols);
        CAPTURE(pad);
        CHECK(ok);
      }
}

namespace {

// op(A) (m,k) @ op(B) (k,n) in double from the stored operands (row strides lda, ldb).
double product_entry(bool trans_a, bool trans_b, const std::vector<float>& a, std::int64_t lda,
                     const std::vector<float>& b, std::int64_t ldb, std::int64_t k, std::int64_t i,
                     std::int64_t j) {
  double sum = 0.0;
  for (std::int64_t p = 0; p < k; ++p) {
    const double a_ip = trans_a ? a[p * lda + i] : a[i * lda + p];
    const double b_pj = trans_b ? b[j * ldb + p] : b[p * ldb + j];
    sum += a_ip * b_pj;
  }
  return sum;
}

}  // namespace

TEST_CASE("jit_gemm matches a double loop on the linear layers' shapes, B transposed or not") {
  // The study GPT's projections (608 rows), its weight gradients (k = 608) and a product
  // past the small limits in every dimension; jit_gemm_max_work() says which it takes.
  struct Shape {
    bool trans_a, trans_b;
    std::int64_t m, n, k;
  };
  std::uint32_t seed = 40;
  for (const Shape& s : {Shape{false, true, 608, 192, 64}, Shape{false, false, 608, 64, 256},
                         Shape{true, false, 64, 256, 608}, Shape{false, true, 300, 270, 260},
                         Shape{true, true, 33, 17, 9}}) {
    for (float beta : {0.0f, 1.0f}) {
      const std::int64_t pad = 3;
      const std::int64_t lda = (s.trans_a ? s.m : s.k) + pad, ldb = (s.trans_b ? s.k : s.n) + pad;
      const std::int64_t ldc = s.n + pad;
      const std::vector<float> a =
          random_values(static_cast<std::size_t>((s.trans_a ? s.k : s.m) * lda), seed);
      const std::vector<float> b =
          random_values(static_cast<std::size_t>((s.trans_b ? s.n : s.k) * ldb), seed + 1);
      std::vector<float> out = random_values(static_cast<std::size_t>(s.m * ldc), seed + 2);
      const std::vector<float> before = out;
      seed += 3;
      const bool taken = cpu::jit_gemm(s.trans_a, s.trans_b, s.m, s.n, s.k, a.data(), lda, b.data(),
                                       ldb, beta, out.data(), ldc);
      CAPTURE(s.m);
      CAPTURE(s.n);
      CAPTURE(s.k);
      CAPTURE(beta);
      const bool small = s.m <= 256 && s.n <= 256 && s.k <= 256 && s.m * s.n * s.k <= (1 << 20);
      CHECK(taken == (cpu::small_gemm_jit_enabled() &&
                      (small || s.m * s.n * s.k <= cpu::jit_gemm_max_work())));
      if (!taken) {
        CHECK(out == before);  // declined: C untouched
        continue;
      }
      double worst = 0.0;
      bool padding_kept = true;
      for (std::int64_t i = 0; i < s.m; ++i) {
        for (std::int64_t j = 0; j < s.n; ++j) {
          const double expected = beta * static_cast<double>(before[i * ldc + j]) +
                                  product_entry(s.trans_a, s.trans_b, a, lda, b, ldb, s.k, i, j);
          worst = std::max(worst, std::abs(out[i * ldc + j] - expected));
        }
        for (std::int64_t j = s.n; j < ldc; ++j)
          padding_kept = padding_kept && out[i * ldc + j] == before[i * ldc + j];
      }
      CHECK(padding_kept);
      CHECK(worst < 1e-4 * std::sqrt(static_cast<double>(s.k)));
    }
  }
}

TEST_CASE("jit_gemm repeats bitwise and agrees with itself split into row or column blocks") {
  // blas.cpp splits a product into blocks of rows or columns across threads; each block is
  // a kernel of another shape, whose multiply-adds may run in another order: the same
  // split repeats bitwise, another split agrees to rounding.
  if (!cpu::small_gemm_jit_enabled()) return;
  const std::int64_t m = 96, n = 80, k = 72;
  const std::vector<float> a = random_values(static_cast<std::size_t>(m * k), 7);
  const std::vector<float> b = random_values(static_cast<std::size_t>(n * k), 8);  // B^T
  for (bool trans_b : {false, true}) {
    const std::int64_t ldb = trans_b ? k : n;
    std::vector<float> whole(static_cast<std::size_t>(m * n)), again(whole.size()),
        rows(whole.size()), cols(whole.size());
    REQUIRE(
        cpu::jit_gemm(false, trans_b, m, n, k, a.data(), k, b.data(), ldb, 0.0f, whole.data(), n));
    REQUIRE(
        cpu::jit_gemm(false, trans_b, m, n, k, a.data(), k, b.data(), ldb, 0.0f, again.data(), n));
    for (const auto& [begin, end] :
         {std::pair<std::int64_t, std::int64_t>{0, 48}, {48, 80}, {80, 96}})
      REQUIRE(cpu::jit_gemm(false, trans_b, end - begin, n, k, a.data() + begin * k, k, b.data(),
                            ldb, 0.0f, rows.data() + begin * n, n));
    for (const auto& [begin, end] : {std::pair<std::int64_t, std::int64_t>{0, 16}, {16, 80}})
      REQUIRE(cpu::jit_gemm(false, trans_b, m, end - begin, k, a.data(), k,
                            trans_b ? b.data() + begin * ldb : b.data() + begin, ldb, 0.0f,
                            cols.data() + begin, n));
    CAPTURE(trans_b);
    CHECK(again == whole);
    float worst = 0.0f;
    for (std::size_t i = 0; i < whole.size(); ++i)
      worst = std::max({worst, std::abs(rows[i] - whole[i]), std::abs(cols[i] - whole[i])});
    CHECK(worst < 1e-5f);
  }
}
