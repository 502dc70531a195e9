// kernels_for (src/core/kernels.hpp): the CPU's kernels for a CPU tensor, the CUDA
// backend's for a GPU tensor, and a clear error naming the op where that cannot load.
#include <doctest/doctest.h>

#include <cmath>

#include "core/cuda_backend.hpp"
#include "core/kernels.hpp"
#include "headgrad/core/cuda.hpp"
#include "headgrad/headgrad.hpp"
#include "ops/cpu/cpu_kernels.hpp"

namespace hg = headgrad;

TEST_CASE("kernels_for gives the CPU's kernels for the CPU, and they run an op's kernel") {
  hg::Kernels& kernels = hg::kernels_for(hg::Device::cpu(), "test");
  CHECK(dynamic_cast<hg::cpu::CpuKernels*>(&kernels) != nullptr);
  hg::Tensor x = hg::zeros({2, 3}, hg::kFloat32);
  kernels.fill(x, 2.5);
  CHECK(x.to_vector<double>() == std::vector<double>(6, 2.5));
}

TEST_CASE("kernels_for a GPU is the CUDA backend, or an error naming the op without it") {
  std::string why;
  hg::cuda::Backend* backend = hg::cuda::try_backend(&why);
  if (backend != nullptr) {  // the library loads (with or without a GPU)
    CHECK(&hg::kernels_for(hg::Device::cuda(0), "softmax") == static_cast<hg::Kernels*>(backend));
  } else {
    CHECK_THROWS_WITH_AS(hg::kernels_for(hg::Device::cuda(0), "softmax"),
                         doctest::Contains("softmax: "), hg::DeviceError);
  }
}

TEST_CASE("the CPU's reduce kernel agrees with the ops for sum, amax and argmax") {
  // argmax is the GPU's half of max over a dim; the CPU's ops take max_dim, so it is checked
  // here against max's indices (first maximum, NaN maximal).
  hg::Kernels& kernels = hg::kernels_for(hg::Device::cpu(), "test");
  const hg::Tensor x = hg::from_vector<double>({1, 7, 7, -2, NAN, 3, 0, 0, -1, 5, 5, 4}, {2, 2, 3});
  hg::Tensor indices = hg::zeros({2, 1, 3}, hg::kInt64);
  kernels.reduce(hg::Reduce::argmax, x, {2, 1, 3}, indices);
  CHECK(indices.to_vector<double>() == hg::max(x, 1).indices.to_vector<double>());
  const hg::Tensor finite = hg::where(hg::ne(x, x), hg::zeros({}, hg::kFloat64), x);
  hg::Tensor sums = hg::zeros({1, 2, 3}, hg::kFloat64);
  kernels.reduce(hg::Reduce::sum, finite, {1, 2, 3}, sums);
  CHECK(sums.to_vector<double>() == hg::sum(finite, {0}).to_vector<double>());
  hg::Tensor maxima = hg::zeros({2, 2, 1}, hg::kFloat64);
  kernels.reduce(hg::Reduce::amax, finite, {2, 2, 1}, maxima);
  CHECK(maxima.to_vector<double>() == hg::amax(finite, {2}).to_vector<double>());
}
