// .npy files: one tensor in NumPy's format (numpy.save / numpy.load).
//
// Reading accepts format versions 1.0 to 3.0, dtypes <f4 (float32), <f8 (float64), <i8
// (int64) and |b1 (bool), C or Fortran order (a Fortran-order file comes back row-major).
// Everything is validated before the tensor is allocated: the magic, the version, the
// header length against the file's size, the header dict, the dtype, the shape (no
// overflow), and the data length against what is left of the file; a larger tensor than
// the allocation limit (core/storage.hpp) is refused too. Bool bytes other than 0 read as
// true, as numpy reads them. Every refusal is an IOError naming the file and the problem.
#pragma once

#include <string>

#include "headgrad/core/tensor.hpp"
#include "headgrad/train/npz.hpp"

namespace headgrad::train {

// Reads the .npy file at `path` as a CPU tensor. Throws IOError (see above).
Tensor load_npy(const std::string& path);

// Writes `t` (any device; copied to the CPU) to `path` as an .npy file (format 1.0, C
// order), atomically: a file already there is replaced whole or not at all. Throws
// ValueError for an undefined tensor and IOError when the file cannot be written.
void save_npy(const std::string& path, const Tensor& t);

}  // namespace headgrad::train
