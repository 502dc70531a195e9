// The .npy format, shared by the .npy and .npz readers and writers (train/npy.hpp,
// train/npz.hpp): the prefix numpy writes, and a reader that validates a whole .npy
// before allocating its tensor.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "headgrad/core/tensor.hpp"

namespace headgrad::train::detail {

// The bytes before the data of an .npy file, exactly as numpy (1.24) writes them.
std::string npy_prefix(DType dtype, const Shape& shape);

// A problem with the bytes of an .npy file; the caller names the file and entry.
struct NpyProblem {
  std::string why;
};

// Reads exactly `n` bytes into `out` or throws.
using ReadExact = std::function<void(void* out, std::uint64_t n)>;

// Reads an .npy file of `size` bytes through `read`, validating the prefix, the header and
// the data length against `size` before the tensor is allocated (see train/npy.hpp).
// `holder` names what holds the bytes in messages ("file", "member"). Throws NpyProblem
// for a malformed file, and whatever `read` throws.
Tensor read_npy(std::uint64_t size, const ReadExact& read, const char* holder);

}  // namespace headgrad::train::detail
