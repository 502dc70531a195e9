// headgrad exception hierarchy. Library code reports every failure by throwing one of
// these; it never calls exit() or abort().
#pragma once

#include <stdexcept>
#include <string>

namespace headgrad {

// Base of every error headgrad throws.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// Shapes do not fit the op (rank, broadcasting, inner dimensions, ...).
class ShapeError : public Error {
 public:
  using Error::Error;
};

// Dtypes differ or the op does not support the dtype.
class DTypeError : public Error {
 public:
  using Error::Error;
};

// Tensors live on different devices, or the device is not available.
class DeviceError : public Error {
 public:
  using Error::Error;
};

// An index or dimension is out of range.
class IndexError : public Error {
 public:
  using Error::Error;
};

// An argument has an invalid value (negative probability, bad reduction name, ...).
class ValueError : public Error {
 public:
  using Error::Error;
};

// A tensor would not fit: larger than the allocation limit (set_max_tensor_bytes), than
// the memory the system has available, or the allocator refused it. The message names
// the shape and the bytes.
class MemoryError : public Error {
 public:
  using Error::Error;
};

// Misuse of the autograd engine (backward on a non-scalar, freed graph, ...).
class AutogradError : public Error {
 public:
  using Error::Error;
};

}  // namespace headgrad
