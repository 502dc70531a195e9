// Fuzz target: train::load_npz on arbitrary bytes (the zip directory, members stored or
// deflated, and each member's .npy). Every input must end in entries or a headgrad error.
#include <cstddef>
#include <cstdint>

#include "headgrad/core/storage.hpp"
#include "headgrad/train/npz.hpp"
#include "memory_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static headgrad::fuzz::MemoryFile file;
  headgrad::set_max_tensor_bytes(std::size_t{64} << 20);
  try {
    const headgrad::nn::StateDict entries = headgrad::train::load_npz(file.hold(data, size));
    (void)entries.size();
  } catch (const headgrad::Error&) {
  }
  return 0;
}
