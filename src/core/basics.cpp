// DType, Device and Shape helpers.
#include <cctype>
#include <ostream>
#include <sstream>

#include "headgrad/core/device.hpp"
#include "headgrad/core/dtype.hpp"
#include "headgrad/core/error.hpp"
#include "headgrad/core/shape.hpp"

namespace headgrad {

std::size_t element_size(DType dtype) {
  switch (dtype) {
    case DType::float32:
      return 4;
    case DType::float64:
      return 8;
    case DType::int64:
      return 8;
    case DType::boolean:
      return 1;
  }
  throw DTypeError("unknown dtype");
}

std::string to_string(DType dtype) {
  switch (dtype) {
    case DType::float32:
      return "float32";
    case DType::float64:
      return "float64";
    case DType::int64:
      return "int64";
    case DType::boolean:
      return "bool";
  }
  return "unknown";
}

std::ostream& operator<<(std::ostream& os, const Shape& shape) {
  os << '(';
  for (std::size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  return os << (shape.size() == 1 ? ",)" : ")");
}

std::ostream& operator<<(std::ostream& os, DType dtype) { return os << to_string(dtype); }

std::ostream& operator<<(std::ostream& os, const Device& device) { return os << device.str(); }

std::string Device::str() const {
  return type_ == DeviceType::cpu ? std::string("cpu") : "cuda:" + std::to_string(index_);
}

Device Device::parse(const std::string& text) {
  if (text == "cpu") return Device::cpu();
  if (text == "cuda") return Device::cuda(0);
  const std::string prefix = "cuda:";
  if (text.rfind(prefix, 0) == 0 && text.size() > prefix.size() &&
      text.size() <= prefix.size() + 4) {
    bool digits = true;
    for (std::size_t i = prefix.size(); i < text.size(); ++i)
      digits = digits && std::isdigit(static_cast<unsigned char>(text[i]));
    if (digits) return Device::cuda(std::stoi(text.substr(prefix.size())));
  }
  throw ValueError("'" + text +
                   "' is not a device: expected cpu, cuda (the first GPU) or cuda:N (N = 0, 1, "
                   "...)");
}

namespace {
enum class SizeProblem { none, negative_dim, overflow };

// factor * the product of the dims into `out`. A shape with a zero dim has no elements
// whatever its other dims, so that product is 0 and never overflows.
SizeProblem checked_product(const Shape& shape, std::int64_t factor, std::int64_t& out) {
  out = factor;
  bool empty = false;
  for (auto s : shape) {
    if (s < 0) return SizeProblem::negative_dim;
    empty = empty || s == 0;
  }
  if (empty) {
    out = 0;
    return SizeProblem::none;
  }
  for (auto s : shape)
    if (__builtin_mul_overflow(out, s, &out)) return SizeProblem::overflow;
  return SizeProblem::none;
}

[[noreturn]] void throw_size_problem(SizeProblem problem, const Shape& shape, const char* what,
                                     const char* counted) {
  const std::string prefix =
      (what ? std::string(what) + ": shape " : std::string("shape ")) + shape_str(shape);
  if (problem == SizeProblem::negative_dim) throw ShapeError(prefix + " has a negative dimension");
  throw ShapeError(prefix + " is too large: its " + counted +
                   " do not fit in a signed 64-bit integer (at most 2^63 - 1)");
}
}  // namespace

std::int64_t numel_of(const Shape& shape) {
  std::int64_t n = 1;
  const SizeProblem problem = checked_product(shape, 1, n);
  if (problem != SizeProblem::none) [[unlikely]]
    throw_size_problem(problem, shape, nullptr, "elements");
  return n;
}

std::int64_t checked_nbytes(const Shape& shape, std::size_t element_bytes, const char* what) {
  std::int64_t n = 0;
  const SizeProblem problem = checked_product(shape, static_cast<std::int64_t>(element_bytes), n);
  if (problem != SizeProblem::none) [[unlikely]]
    throw_size_problem(problem, shape, what, "bytes");
  return n;
}

// A shape with a zero dim has no elements whatever its other dims, so the product of the
// dims right of some dim may not fit int64 ((0, 2^40, 2^40) is a valid empty tensor). No
// element is ever addressed through such a stride; it is 0.
Shape contiguous_strides(const Shape& shape) {
  Shape strides(shape.size(), 1);
  for (std::size_t i = shape.size(); i-- > 1;)
    if (__builtin_mul_overflow(strides[i], shape[i], &strides[i - 1])) strides[i - 1] = 0;
  return strides;
}

Shape unravel_index(std::int64_t flat, const Shape& shape) {
  Shape index(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    index[d] = flat % shape[d];
    flat /= shape[d];
  }
  return index;
}

std::string shape_str(const Shape& shape) {
  std::ostringstream os;
  os << '(';
  for (std::size_t i = 0; i < shape.size(); ++i) os << (i ? "," : "") << shape[i];
  os << ')';
  return os.str();
}

std::int64_t normalize_dim(std::int64_t dim, std::int64_t rank, const char* op) {
  const std::int64_t r = rank == 0 ? 1 : rank;
  if (dim < -r || dim >= r) {
    throw IndexError(std::string(op) + ": dim " + std::to_string(dim) +
                     " is out of range for a tensor of rank " + std::to_string(rank) +
                     " (expected a dim in [" + std::to_string(-r) + ", " + std::to_string(r - 1) +
                     "])");
  }
  return dim < 0 ? dim + r : dim;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  const std::size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (std::size_t i = 0; i < rank; ++i) {
    const std::int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const std::int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) {
      throw ShapeError(std::string(op) + ": shapes " + shape_str(a) + " and " + shape_str(b) +
                       " cannot be broadcast: dim " + std::to_string(i) + " has sizes " +
                       std::to_string(da) + " and " + std::to_string(db));
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

}  // namespace headgrad
