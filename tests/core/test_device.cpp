// Device and the CUDA entry points (core/device.hpp, core/cuda.hpp) as every build and
// machine sees them: Device values, and on a machine without a usable GPU (a build without
// CUDA, or no driver or device) clear DeviceErrors instead of crashes, zero memory
// statistics and harmless no-ops. The cases about a missing GPU return early where a GPU
// is available; the GPU suite (tests/cuda, headgrad_cuda_tests) covers that machine.
#include <cstdlib>
#include <string>

#include "headgrad/core/cuda.hpp"
#include "headgrad/core/process.hpp"
#include "helpers.hpp"

namespace hg = headgrad;
using hg::Device;
using hg::DeviceType;
using hg::Tensor;
using hg::TensorOptions;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A DeviceError message for a missing GPU names the device and says why it is missing.
void check_no_gpu_message(const std::string& message, const std::string& device) {
  INFO(message);
  CHECK(contains(message, device));
  CHECK((contains(message, "no usable GPU") || contains(message, "without CUDA") ||
         contains(message, "not available")));
}

}  // namespace

TEST_CASE("Device values: cpu by default, cuda:N with an index, equal when type and index are") {
  static_assert(Device() == Device::cpu());
  static_assert(Device::cuda() == Device::cuda(0));
  static_assert(Device::cuda(1).index() == 1);
  static_assert(Device::cuda(2).type() == DeviceType::cuda);
  constexpr Device gpu1 = Device::cuda(1);
  CHECK(gpu1.is_cuda());
  CHECK_FALSE(gpu1.is_cpu());
  CHECK(Device::cpu().is_cpu());
  CHECK(Device::cpu().type() == DeviceType::cpu);
  CHECK(Device::cpu().str() == "cpu");
  CHECK(Device::cuda().str() == "cuda:0");
  CHECK(gpu1.str() == "cuda:1");
  CHECK(Device::cuda(12).str() == "cuda:12");
  CHECK(Device(DeviceType::cuda, 1) == gpu1);
  CHECK(Device::cuda(0) != gpu1);
  CHECK(Device::cpu() != Device::cuda(0));
  // Tensors and factories default to the CPU.
  CHECK(hg::zeros({2, 3}).device() == Device::cpu());
  CHECK(hg::randn({4}, hg::kFloat64).device() == Device::cpu());
  CHECK(TensorOptions().device_ == Device::cpu());
  CHECK(TensorOptions().device(gpu1).device_ == gpu1);
}

TEST_CASE("cuda_built tells whether the CUDA backend library was built and loads") {
  // The build tells the tests whether it built libheadgrad_cuda (tests/CMakeLists.txt).
  CHECK(hg::cuda_built() == static_cast<bool>(HEADGRAD_TEST_CUDA_BACKEND_BUILT));
  if (!hg::cuda_built()) CHECK_FALSE(hg::cuda_is_available());
  CHECK(hg::cuda_is_available() == (hg::cuda_device_count() > 0));
  CHECK(hg::cuda_device_count() >= 0);
  // Exactly one of: a GPU, or a reason naming what is missing.
  CHECK(hg::cuda_is_available() == hg::cuda_unavailable_reason().empty());
  // The backend loaded but found no device (no driver, or no GPU): the reason quotes the
  // driver's answer, or says there is no GPU.
  if (hg::cuda_built() && !hg::cuda_is_available()) {
    const std::string why = hg::cuda_unavailable_reason();
    CHECK((why.find("cudaGetDeviceCount") != std::string::npos ||
           why.find("no GPU") != std::string::npos));
  }
}

TEST_CASE("without the backend library, CUDA is unavailable and the reason names the library") {
  // A fresh process where the backend path points at a file that does not exist.
  if (std::getenv("HEADGRAD_TEST_CHILD") != nullptr) return;
  const int status = hg::run_program(
      {HEADGRAD_TEST_BINARY, "--test-case=*reports the missing backend*", "--no-intro",
       "--no-version"},
      hg::ProgramOptions()
          .with_stdout_to(hg::Redirect::discard())
          .with_stderr_to(hg::Redirect::discard())
          .with_environment(
              {"HEADGRAD_TEST_CHILD=1", "HEADGRAD_CUDA_BACKEND=/nonexistent/libheadgrad_cuda.so"}));
  CHECK(status == 0);
}

TEST_CASE("child: reports the missing backend") {
  if (std::getenv("HEADGRAD_TEST_CHILD") == nullptr) return;  // run by the case above
  CHECK_FALSE(hg::cuda_built());
  CHECK_FALSE(hg::cuda_is_available());
  CHECK(hg::cuda_device_count() == 0);
  const std::string why = hg::cuda_unavailable_reason();
  CHECK(why.find("libheadgrad_cuda.so") != std::string::npos);
  CHECK(why.find("/nonexistent/") != std::string::npos);
  try {
    (void)hg::ones({2}).to(Device::cuda());
    FAIL("expected DeviceError");
  } catch (const hg::DeviceError& e) {
    CHECK(std::string(e.what()).find("libheadgrad_cuda.so") != std::string::npos);
  }
}

TEST_CASE("without a GPU, moving a tensor to cuda throws DeviceError naming the device") {
  if (hg::cuda_is_available()) return;  // tests/cuda covers a machine with a GPU
  const Tensor t = hg::ones({2, 3});
  CHECK_THROWS_AS((void)t.to(Device::cuda()), hg::DeviceError);
  check_no_gpu_message(HG_ERROR_MESSAGE(t.to(Device::cuda())), "cuda:0");
  check_no_gpu_message(HG_ERROR_MESSAGE(t.to(Device::cuda(1))), "cuda:1");
  // The tensor is untouched and still usable.
  CHECK(t.device() == Device::cpu());
  CHECK(hg::sum(t).item() == 6.0);
}

TEST_CASE("without a GPU, factories for a cuda device throw DeviceError naming the device") {
  if (hg::cuda_is_available()) return;
  const auto on = [](Device d) { return TensorOptions(hg::kFloat32).device(d); };
  CHECK_THROWS_AS((void)hg::zeros({2}, on(Device::cuda())), hg::DeviceError);
  check_no_gpu_message(HG_ERROR_MESSAGE(hg::zeros({2}, on(Device::cuda()))), "cuda:0");
  check_no_gpu_message(HG_ERROR_MESSAGE(hg::ones({2, 2}, on(Device::cuda(1)))), "cuda:1");
  check_no_gpu_message(HG_ERROR_MESSAGE(hg::full({3}, 1.0, on(Device::cuda()))), "cuda:0");
  check_no_gpu_message(HG_ERROR_MESSAGE(hg::empty({3}, on(Device::cuda()))), "cuda:0");
  hg::Generator gen(1);
  check_no_gpu_message(HG_ERROR_MESSAGE(hg::randn({3}, on(Device::cuda()), &gen)), "cuda:0");
  check_no_gpu_message(HG_ERROR_MESSAGE(hg::arange(5.0, on(Device::cuda()))), "cuda:0");
}

TEST_CASE("without a GPU, moving a module to cuda throws DeviceError and leaves it on the CPU") {
  if (hg::cuda_is_available()) return;
  hg::Generator gen(2);
  hg::nn::Linear linear(3, 2, true, &gen);
  const Tensor before = linear.weight.detach().clone();
  CHECK_THROWS_AS(linear.to(Device::cuda()), hg::DeviceError);
  check_no_gpu_message(HG_ERROR_MESSAGE(linear.to(Device::cuda())), "cuda:0");
  for (const auto& [name, p] : linear.named_parameters()) {
    CAPTURE(name);
    CHECK(p.device() == Device::cpu());
  }
  CHECK(hg::testing::max_abs_diff(linear.weight, before) == 0.0);
  // Moving to the CPU, where it already is, is a no-op.
  linear.to(Device::cpu());
  CHECK(linear.weight.device() == Device::cpu());
}

TEST_CASE("without a GPU, the CUDA queries report none and the caching allocator is empty") {
  if (hg::cuda_is_available()) return;
  CHECK(hg::cuda_device_count() == 0);
  CHECK_FALSE(hg::cuda_is_available());
  CHECK_THROWS_AS((void)hg::cuda_device_name(), hg::DeviceError);
  check_no_gpu_message(HG_ERROR_MESSAGE(hg::cuda_device_name(0)), "cuda:0");
  const hg::CudaMemoryStats stats = hg::cuda_memory_stats();
  CHECK(stats.allocated_bytes == 0);
  CHECK(stats.reserved_bytes == 0);
  CHECK(stats.peak_allocated_bytes == 0);
  CHECK(stats.cuda_malloc_calls == 0);
  CHECK(hg::cuda_memory_stats(3).reserved_bytes == 0);  // any index, no error
  // No-ops that must not throw: a program may call them unconditionally.
  CHECK_NOTHROW(hg::empty_cuda_cache());
  CHECK_NOTHROW(hg::reset_cuda_peak_memory());
  CHECK(hg::cuda_memory_stats().reserved_bytes == 0);
  const bool tf32 = hg::cuda_allow_tf32();
  CHECK_NOTHROW(hg::set_cuda_allow_tf32(tf32));
}

TEST_CASE("Device::parse reads what str() writes, cuda as cuda:0, and names what it accepts") {
  using headgrad::Device;
  for (const Device d : {Device::cpu(), Device::cuda(0), Device::cuda(3), Device::cuda(12)})
    CHECK(Device::parse(d.str()) == d);
  CHECK(Device::parse("cuda") == Device::cuda(0));
  for (const char* bad : {"", "CPU", "gpu", "cuda:", "cuda:-1", "cuda:1x", "cuda:99999", "cuda0"}) {
    CAPTURE(bad);
    CHECK_THROWS_WITH_AS(Device::parse(bad),
                         doctest::Contains("is not a device: expected cpu, cuda"),
                         headgrad::ValueError);
  }
}
