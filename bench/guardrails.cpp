// Performance guardrails, single-threaded (headgrad::set_num_threads(1)):
//   a + b over 1M float32                    ~0.15 ms
//   bias add (4096,256) + (256), exp over 1M floats
//   softmax over the last dim of (4096,256)   well under 1 ms
//   matmul vs a direct cblas_sgemm on the same raw buffers: within a few percent
// Run: bench_guardrails --benchmark_min_time=0.2
#include <benchmark/benchmark.h>

#include <cstdint>

#include "headgrad/headgrad.hpp"

// bench/cblas_direct.cpp: C (m,n) = A (m,k) @ B (k,n) through cblas_sgemm.
void direct_sgemm(int m, int n, int k, const float* a, const float* b, float* c);

namespace {

using headgrad::Shape;
using headgrad::Tensor;

Tensor random_tensor(const Shape& shape, std::uint64_t seed) {
  headgrad::Generator gen(seed);
  return headgrad::randn(shape, headgrad::kFloat32, &gen);
}

void set_bytes(benchmark::State& state, std::int64_t bytes_per_iteration) {
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * bytes_per_iteration);
}

void BM_add_1M(benchmark::State& state) {
  const std::int64_t n = 1 << 20;
  Tensor a = random_tensor({n}, 1), b = random_tensor({n}, 2);
  for (auto _ : state) {
    Tensor c = a + b;
    benchmark::DoNotOptimize(c.raw_data());
  }
  set_bytes(state, 3 * n * 4);
}
BENCHMARK(BM_add_1M)->Unit(benchmark::kMicrosecond);

// The memory-bandwidth reference for BM_add_1M: a plain loop into a preallocated buffer.
void BM_add_1M_raw_loop(benchmark::State& state) {
  const std::int64_t n = 1 << 20;
  Tensor a = random_tensor({n}, 1), b = random_tensor({n}, 2);
  Tensor c = headgrad::empty({n});
  const float* pa = a.data<float>();
  const float* pb = b.data<float>();
  float* pc = c.data<float>();
  for (auto _ : state) {
    for (std::int64_t i = 0; i < n; ++i) pc[i] = pa[i] + pb[i];
    benchmark::ClobberMemory();
  }
  set_bytes(state, 3 * n * 4);
}
BENCHMARK(BM_add_1M_raw_loop)->Unit(benchmark::kMicrosecond);

void BM_bias_add_4096x256(benchmark::State& state) {
  Tensor x = random_tensor({4096, 256}, 1), bias = random_tensor({256}, 2);
  for (auto _ : state) {
    Tensor y = x + bias;
    benchmark::DoNotOptimize(y.raw_data());
  }
  set_bytes(state, 2 * 4096 * 256 * 4);
}
BENCHMARK(BM_bias_add_4096x256)->Unit(benchmark::kMicrosecond);

void BM_exp_1M(benchmark::State& state) {
  const std::int64_t n = 1 << 20;
  Tensor x = random_tensor({n}, 1);
  for (auto _ : state) {
    Tensor y = headgrad::exp(x);
    benchmark::DoNotOptimize(y.raw_data());
  }
  set_bytes(state, 2 * n * 4);
}
BENCHMARK(BM_exp_1M)->Unit(benchmark::kMicrosecond);

void BM_softmax_4096x256(benchmark::State& state) {
  Tensor x = random_tensor({4096, 256}, 1);
  for (auto _ : state) {
    Tensor y = headgrad::softmax(x, -1);
    benchmark::DoNotOptimize(y.raw_data());
  }
  set_bytes(state, 2 * 4096 * 256 * 4);
}
BENCHMARK(BM_softmax_4096x256)->Unit(benchmark::kMicrosecond);

void set_gflops(benchmark::State& state, std::int64_t m, std::int64_t n, std::int64_t k) {
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * m * n * k * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// headgrad::matmul of A (*batch, m, k) @ B (k, n); the batch folds into one GEMM.
void BM_matmul(benchmark::State& state) {
  const std::int64_t batch = state.range(0), m = state.range(1), k = state.range(2),
                     n = state.range(3);
  Shape a_shape{m, k};
  if (batch > 1) a_shape.insert(a_shape.begin(), batch);
  Tensor a = random_tensor(a_shape, 1), b = random_tensor({k, n}, 2);
  for (auto _ : state) {
    Tensor c = headgrad::matmul(a, b);
    benchmark::DoNotOptimize(c.raw_data());
  }
  set_gflops(state, batch * m, n, k);
}

// cblas_sgemm called directly on the same kind of buffers (allocated through headgrad,
// output allocated once).
void BM_cblas_sgemm_direct(benchmark::State& state) {
  const std::int64_t batch = state.range(0), m = state.range(1), k = state.range(2),
                     n = state.range(3);
  Tensor a = random_tensor({batch * m, k}, 1), b = random_tensor({k, n}, 2);
  Tensor c = headgrad::empty({batch * m, n});
  for (auto _ : state) {
    direct_sgemm(static_cast<int>(batch * m), static_cast<int>(n), static_cast<int>(k),
                 a.data<float>(), b.data<float>(), c.data<float>());
    benchmark::DoNotOptimize(c.raw_data());
    benchmark::ClobberMemory();
  }
  set_gflops(state, batch * m, n, k);
}

// args: batch, m, k, n
#define MATMUL_SHAPES(bench)               \
  BENCHMARK(bench)                         \
      ->Args({1, 256, 256, 256})           \
      ->Args({1, 64 * 16, 64, 192})        \
      ->Args({16, 64, 64, 192})            \
      ->ArgNames({"batch", "m", "k", "n"}) \
      ->Unit(benchmark::kMicrosecond)
MATMUL_SHAPES(BM_matmul);
MATMUL_SHAPES(BM_cblas_sgemm_direct);

}  // namespace

int main(int argc, char** argv) {
  headgrad::set_num_threads(1);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
