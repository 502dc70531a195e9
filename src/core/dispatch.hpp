// Internal helpers shared by the op implementations: dtype dispatch, argument checks that
// produce the project's error messages, and result allocation.
#pragma once

#include <string>
#include <utility>

#include "headgrad/core/error.hpp"
#include "headgrad/core/tensor.hpp"

namespace headgrad::detail {

// Calls f.template operator()<T>() with T = float or double for the tensor's dtype:
//   dispatch_floating(x.dtype(), "exp", [&]<typename T>() { ... });
template <typename F>
decltype(auto) dispatch_floating(DType dtype, const char* op, F&& f) {
  switch (dtype) {
    case DType::float32:
      return std::forward<F>(f).template operator()<float>();
    case DType::float64:
      return std::forward<F>(f).template operator()<double>();
    default:
      throw DTypeError(std::string(op) + ": expected a floating dtype (float32 or float64), got " +
                       to_string(dtype));
  }
}

// Same, for every dtype (float, double, int64_t, bool).
template <typename F>
decltype(auto) dispatch_all(DType dtype, F&& f) {
  switch (dtype) {
    case DType::float32:
      return std::forward<F>(f).template operator()<float>();
    case DType::float64:
      return std::forward<F>(f).template operator()<double>();
    case DType::int64:
      return std::forward<F>(f).template operator()<std::int64_t>();
    case DType::boolean:
      return std::forward<F>(f).template operator()<bool>();
  }
  throw DTypeError("unknown dtype");
}

// "a (2,3) float32" style description used in messages.
std::string describe(const Tensor& t);
// How messages name a device after a tensor's shape and dtype: "" for the CPU, else
// " on cuda:N".
std::string device_suffix(const Device& device);

void check_defined(const char* op, const Tensor& t, const char* what = "input");
// Throws DTypeError unless x is float32/float64.
void check_floating(const char* op, const Tensor& x);
// Throws DTypeError unless x has `dtype`.
void check_dtype(const char* op, const Tensor& x, DType dtype, const char* what);
// Throws DTypeError / DeviceError naming both operands when they differ.
void check_same_dtype(const char* op, const Tensor& a, const Tensor& b);
void check_same_device(const char* op, const Tensor& a, const Tensor& b);
// For the few functions that only work on CPU tensors: throws DeviceError otherwise.
void check_cpu(const char* op, const Tensor& x);
// Defined, floating, and for pairs same dtype and device: the usual prelude. (Each op then
// takes its kernels from its inputs' device, kernels_for(device) in core/kernels.hpp.)
void check_float_op(const char* op, const Tensor& x);
void check_float_op(const char* op, const Tensor& a, const Tensor& b);

// The bytes of a contiguous tensor of `shape`, checked: ShapeError when a dim is negative
// or the count overflows, MemoryError (naming the shape) when a CPU tensor is larger than
// max_tensor_bytes() or than the memory available (see core/storage.hpp).
std::size_t checked_tensor_bytes(const Shape& shape, DType dtype, Device device);

// A fresh uninitialized contiguous tensor, its size checked first (checked_tensor_bytes).
Tensor new_tensor(const Shape& shape, DType dtype, Device device = Device::cpu());

// A detached handle on t's storage with another shape of the same numel (no graph).
Tensor alias(const Tensor& t, const Shape& shape);

// Copies the elements of src into dst (same numel and dtype; any devices).
void copy_elements(const Tensor& src, Tensor& dst);
// Throws DeviceError naming `what` unless `device` can be used here (a CPU always can; a
// GPU needs the CUDA backend, a driver and that device).
void check_device_usable(const Device& device, const std::string& what);

[[noreturn]] void throw_cpu_kernel_on_device(const Tensor& t);

// Typed raw pointer to a CPU tensor's elements, for CPU kernels. The const overload takes
// const Tensor. A device tensor here is a bug (an op without its device branch): it throws
// instead of handing a device address to a CPU loop.
template <typename T>
T* ptr(Tensor& t) {
  if (!t.impl()->storage->device().is_cpu()) [[unlikely]]
    throw_cpu_kernel_on_device(t);
  return static_cast<T*>(t.impl()->data());
}
template <typename T>
const T* ptr(const Tensor& t) {
  if (!t.impl()->storage->device().is_cpu()) [[unlikely]]
    throw_cpu_kernel_on_device(t);
  return static_cast<const T*>(t.impl()->data());
}

}  // namespace headgrad::detail
