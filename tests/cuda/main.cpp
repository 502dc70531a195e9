// headgrad_cuda_tests: the GPU parity suite. Without a usable GPU (a build without CUDA, no
// driver, no device) it prints "SKIPPED: no CUDA GPU (<reason>)" and exits 77, which CTest
// reports as skipped (SKIP_RETURN_CODE 77, tests/CMakeLists.txt). Listing the test cases
// (--list-test-cases, which doctest_discover_tests runs at build time) and --help work
// without a GPU.
//
// HEADGRAD_CUDA_TESTS_ON_CPU=1 runs the suite with the CPU standing in for the GPU (see
// parity.hpp), leaving out the test suite "gpu_only": a check of the suite itself.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "headgrad/core/cuda.hpp"
#include "parity.hpp"

namespace {

// True when the command line only asks doctest for information (lists, counts, help,
// version), which needs no GPU. Options read -x, --x or --dt-x, with or without =value.
bool informational(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string_view a(argv[i]);
    if (a.empty() || a.front() != '-') continue;
    while (!a.empty() && a.front() == '-') a.remove_prefix(1);
    if (a.substr(0, 3) == "dt-") a.remove_prefix(3);
    a = a.substr(0, a.find('='));
    if (a.substr(0, 5) == "list-" || a == "ltc" || a == "lts" || a == "lr" || a == "count" ||
        a == "c" || a == "help" || a == "h" || a == "?" || a == "version" || a == "v")
      return true;
  }
  return false;
}

std::string no_gpu_reason() {
  if (!headgrad::cuda_built()) return "headgrad was built without CUDA";
  std::string reason = "cuda_device_count() is 0: no NVIDIA driver or no GPU visible";
  if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES"))
    reason += " (CUDA_VISIBLE_DEVICES=" + std::string(visible) + ")";
  return reason;
}

}  // namespace

int main(int argc, char** argv) {
  doctest::Context context;
  const bool self_check = headgrad::cuda_testing::cpu_self_check();
  if (self_check) context.addFilter("test-suite-exclude", "gpu_only");
  context.applyCommandLine(argc, argv);
  if (!informational(argc, argv) && !self_check) {
    if (!headgrad::cuda_is_available()) {
      std::printf("SKIPPED: no CUDA GPU (%s)\n", no_gpu_reason().c_str());
      std::fflush(stdout);
      return 77;
    }
    std::printf("headgrad_cuda_tests on %s\n", headgrad::cuda_device_name(0).c_str());
  }
  if (self_check) std::printf("headgrad_cuda_tests: self-check, the CPU stands in for the GPU\n");
  return context.run();
}
