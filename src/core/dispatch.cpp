#include "core/dispatch.hpp"

#include <cstdio>
#include <cstring>

#include "core/cuda_backend.hpp"

namespace headgrad::detail {

std::string describe(const Tensor& t) {
  if (!t.defined()) return "an undefined tensor";
  const TensorImpl* impl = t.impl();
  std::string s = impl->name.empty() ? "" : "'" + impl->name + "' ";
  return s + shape_str(impl->shape) + " " + to_string(impl->dtype) + device_suffix(impl->device());
}

std::string device_suffix(const Device& device) {
  return device.is_cpu() ? "" : " on " + device.str();
}

void check_defined(const char* op, const Tensor& t, const char* what) {
  if (!t.defined()) throw Error(std::string(op) + ": " + what + " is an undefined tensor");
}

void check_floating(const char* op, const Tensor& x) {
  check_defined(op, x);
  if (!is_floating(x.dtype()))
    throw DTypeError(std::string(op) + ": expected a floating tensor (float32 or float64), got " +
                     describe(x));
}

void check_dtype(const char* op, const Tensor& x, DType dtype, const char* what) {
  check_defined(op, x, what);
  if (x.dtype() != dtype)
    throw DTypeError(std::string(op) + ": expected " + what + " to be " + to_string(dtype) +
                     ", got " + describe(x));
}

void check_same_dtype(const char* op, const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype())
    throw DTypeError(std::string(op) + ": dtypes differ: " + describe(a) + " and " + describe(b) +
                     " (convert one with .to(dtype))");
}

void check_same_device(const char* op, const Tensor& a, const Tensor& b) {
  if (a.device() != b.device())
    throw DeviceError(std::string(op) + ": tensors are on different devices: " + a.device().str() +
                      " " + describe(a) + " and " + b.device().str() + " " + describe(b));
}

void check_cpu(const char* op, const Tensor& x) {
  if (!x.device().is_cpu())
    throw DeviceError(std::string(op) + ": works on cpu tensors only, got " + describe(x) +
                      " (copy it with .to(Device::cpu()))");
}

void check_float_op(const char* op, const Tensor& x) { check_floating(op, x); }

void check_float_op(const char* op, const Tensor& a, const Tensor& b) {
  check_floating(op, a);
  check_floating(op, b);
  check_same_device(op, a, b);
  check_same_dtype(op, a, b);
}

void throw_cpu_kernel_on_device(const Tensor& t) {
  throw DeviceError("internal error: a cpu kernel was handed " + describe(t) +
                    "; this op has no path for " + t.device().str());
}

void copy_elements(const Tensor& src, Tensor& dst) {
  const std::size_t n = static_cast<std::size_t>(src.numel()) * element_size(src.dtype());
  const Device from = src.device(), to = dst.device();
  if (from.is_cpu() && to.is_cpu())
    std::memmove(dst.raw_data(), src.raw_data(), n);
  else if (from.is_cpu())
    cuda::backend().copy_host_to_device(dst.raw_data(), src.raw_data(), n, to.index());
  else if (to.is_cpu())
    cuda::backend().copy_device_to_host(dst.raw_data(), src.raw_data(), n, from.index());
  else
    cuda::backend().copy_device_to_device(dst.raw_data(), to.index(), src.raw_data(), from.index(),
                                          n);
}

void check_device_usable(const Device& device, const std::string& what) {
  if (device.is_cuda()) cuda::check_device(device.index(), what.c_str());
}

namespace {
// "1.5 GiB": a byte count for messages.
std::string gib(std::size_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g GiB", static_cast<double>(bytes) / (1 << 30));
  return text;
}
}  // namespace

std::size_t checked_tensor_bytes(const Shape& shape, DType dtype, Device device) {
  const auto bytes =
      static_cast<std::size_t>(checked_nbytes(shape, element_size(dtype), "new tensor"));
  if (!device.is_cpu()) return bytes;
  auto refuse = [&](const std::string& why) {
    throw MemoryError("new tensor: a " + to_string(dtype) + " tensor of shape " + shape_str(shape) +
                      " needs " + std::to_string(bytes) + " bytes (" + gib(bytes) + "), " + why);
  };
  if (const std::size_t limit = max_tensor_bytes(); bytes > limit)
    refuse("more than the limit of " + gib(limit) +
           " for one tensor (the machine's memory unless set_max_tensor_bytes changed it)");
  constexpr std::size_t kCheckAvailableFrom = std::size_t{64} << 20;
  if (bytes >= kCheckAvailableFrom)
    if (const auto available = available_cpu_memory(); available && bytes > *available)
      refuse("more than the " + gib(*available) + " of memory available now");
  return bytes;
}

Tensor new_tensor(const Shape& shape, DType dtype, Device device) {
  const std::size_t bytes = checked_tensor_bytes(shape, dtype, device);
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<Storage>(bytes, device);
  impl->shape = shape;
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}

Tensor alias(const Tensor& t, const Shape& shape) {
  if (numel_of(shape) != t.numel())
    throw ShapeError("alias: shape " + shape_str(shape) + " does not fit " + describe(t));
  Tensor a = t.detach();
  a.impl()->shape = shape;
  return a;
}

}  // namespace headgrad::detail
