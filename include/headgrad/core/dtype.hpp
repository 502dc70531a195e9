// Runtime element types. Floating types are differentiable; int64 holds indices
// (embedding, index_select, class targets) and bool holds masks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <string>

namespace headgrad {

enum class DType { float32, float64, int64, boolean };

inline constexpr DType kFloat32 = DType::float32;
inline constexpr DType kFloat64 = DType::float64;
inline constexpr DType kInt64 = DType::int64;
inline constexpr DType kBool = DType::boolean;

std::size_t element_size(DType dtype);
std::string to_string(DType dtype);
std::ostream& operator<<(std::ostream& os, DType dtype);  // "float32"
inline bool is_floating(DType dtype) { return dtype == DType::float32 || dtype == DType::float64; }

// The DType that stores C++ type T.
template <typename T>
constexpr DType dtype_of();
template <>
constexpr DType dtype_of<float>() {
  return DType::float32;
}
template <>
constexpr DType dtype_of<double>() {
  return DType::float64;
}
template <>
constexpr DType dtype_of<std::int64_t>() {
  return DType::int64;
}
template <>
constexpr DType dtype_of<int>() {
  return DType::int64;
}  // ints are stored as int64
template <>
constexpr DType dtype_of<bool>() {
  return DType::boolean;
}

}  // namespace headgrad
