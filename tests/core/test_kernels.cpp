// kernels_for (src/core/kernels.hpp): the CPU's kernels for a CPU tensor, the CUDA
// backend's for a GPU tensor, and a clear error naming the op where that cannot load.
#include <doctest/doctest.h>

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
