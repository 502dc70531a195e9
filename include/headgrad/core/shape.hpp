// Shapes and the helpers every op uses to validate and describe them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace headgrad {

using Shape = std::vector<std::int64_t>;

// Number of elements of a shape (1 for the 0-d shape {}). Throws ShapeError naming the
// shape when a dim is negative or the count does not fit in int64.
std::int64_t numel_of(const Shape& shape);

// Bytes of a contiguous tensor of `shape` with elements of `element_bytes` bytes. Throws
// ShapeError naming `what` and the shape when a dim is negative or the bytes do not fit in
// int64. Every shape -> numel -> bytes computation for an allocation goes through here.
std::int64_t checked_nbytes(const Shape& shape, std::size_t element_bytes, const char* what);

// Row-major (C order) strides in elements.
Shape contiguous_strides(const Shape& shape);

// The row-major multi-index of flat element index `flat` in `shape`.
Shape unravel_index(std::int64_t flat, const Shape& shape);

// Prints "(2, 3)", "(3,)", "()" (Python's tuple). Shape is a std::vector, so this is
// found with `using namespace headgrad` (or headgrad::operator<<).
std::ostream& operator<<(std::ostream& os, const Shape& shape);

// "(32,64,128)"; "()" for a 0-d shape.
std::string shape_str(const Shape& shape);

// Wraps a possibly negative dim into [0, rank); throws IndexError naming `op` otherwise.
// A 0-d tensor accepts dims -1 and 0, as in PyTorch.
std::int64_t normalize_dim(std::int64_t dim, std::int64_t rank, const char* op);

// The broadcast of two shapes following NumPy/PyTorch rules; throws ShapeError naming
// `op` and both shapes when they are incompatible.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

}  // namespace headgrad
