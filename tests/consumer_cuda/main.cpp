// The installed CUDA backend loads from beside the installed libheadgrad. Without a GPU
// (CI) it must still load and say why no device is usable; with one, a matmul on it must
// match the CPU's.
#include <headgrad/headgrad.hpp>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <vector>

int main() {
  using namespace headgrad;
  if (!cuda_built()) {
    std::cerr << "consumer_cuda: the backend did not load: " << cuda_unavailable_reason() << "\n";
    return 1;
  }
  if (!cuda_is_available()) {
    std::cout << "consumer_cuda: backend loaded; no GPU here (" << cuda_unavailable_reason()
              << ")\n";
    return cuda_unavailable_reason().empty() ? 1 : 0;
  }
  manual_seed(0);
  const Tensor a = randn({32, 16}, kFloat64), b = randn({16, 8}, kFloat64);
  const Tensor on_gpu = matmul(a.to(Device::cuda()), b.to(Device::cuda())).to(Device::cpu());
  const std::vector<double> got = on_gpu.to_vector<double>(),
                            want = matmul(a, b).to_vector<double>();
  double diff = 0;
  for (std::size_t i = 0; i < got.size(); ++i) diff = std::max(diff, std::abs(got[i] - want[i]));
  std::cout << "consumer_cuda: " << cuda_device_name() << ", max |gpu - cpu| = " << diff << "\n";
  return diff < 1e-10 ? 0 : 1;
}
