// Fuzz target: train::load_npy on arbitrary bytes. Every input must end in a tensor or a
// headgrad error; a crash, a sanitizer report, a leak or an allocation past the limit
// (-rss_limit_mb, -malloc_limit_mb) is a finding.
#include <cstddef>
#include <cstdint>

#include "headgrad/core/storage.hpp"
#include "headgrad/train/npy.hpp"
#include "memory_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static headgrad::fuzz::MemoryFile file;
  headgrad::set_max_tensor_bytes(std::size_t{64} << 20);
  try {
    const headgrad::Tensor t = headgrad::train::load_npy(file.hold(data, size));
    (void)t.numel();
  } catch (const headgrad::Error&) {
  }
  return 0;
}
