// Tensor's methods that are ops (declared in headgrad/core/tensor.hpp, defined here in the
// ops layer, as torch::Tensor's methods dispatch to ATen): clone and the conversions, which
// record graph nodes; the in-place writes, which run the ops' kernels; and the method forms
// of the free ops (x.sum() is sum(x)).
#include <cstdio>

#include "core/dispatch.hpp"
#include "core/kernels.hpp"
#include "headgrad/autograd/function.hpp"
#include "headgrad/autograd/grad_mode.hpp"
#include "headgrad/core/tensor.hpp"
#include "headgrad/ops/elementwise.hpp"
#include "headgrad/ops/index.hpp"
#include "headgrad/ops/mask.hpp"
#include "headgrad/ops/matmul.hpp"
#include "headgrad/ops/reduce.hpp"
#include "headgrad/ops/shape_ops.hpp"
#include "headgrad/ops/softmax.hpp"
#include "ops/inplace.hpp"

namespace headgrad {

Tensor Tensor::clone() const {
  check_defined("clone");
  Tensor out = detail::new_tensor(shape(), dtype(), device());
  detail::copy_elements(*this, out);
  autograd::record("clone", {*this}, {&out}, {},
                   [](const std::vector<Tensor>& g, const autograd::BackwardContext&) {
                     return std::vector<Tensor>{g[0]};
                   });
  return out;
}

// Converts between any two dtypes; differentiable between floating dtypes.
Tensor Tensor::to(DType target) const {
  check_defined("to");
  if (target == dtype()) return *this;
  Tensor out = detail::new_tensor(shape(), target, device());
  kernels_for(device(), "to").convert(*this, out);
  if (is_floating(dtype()) && is_floating(target)) {
    const DType source = dtype();
    autograd::record("to", {*this}, {&out}, {},
                     [source](const std::vector<Tensor>& g, const autograd::BackwardContext&) {
                       return std::vector<Tensor>{g[0].to(source)};
                     });
  }
  return out;
}

// A copy on another device (same dtype); differentiable: the gradient goes back to the
// source device.
Tensor Tensor::to(Device target) const {
  check_defined("to");
  if (target == device()) return *this;
  detail::check_device_usable(target, "to: cannot move " + describe());
  Tensor out = detail::new_tensor(shape(), dtype(), target);
  detail::copy_elements(*this, out);
  if (is_floating(dtype())) {
    const Device source = device();
    autograd::record("to", {*this}, {&out}, {},
                     [source](const std::vector<Tensor>& g, const autograd::BackwardContext&) {
                       return std::vector<Tensor>{g[0].to(source)};
                     });
  }
  return out;
}

// --- in-place writes ---------------------------------------------------------------
void detail::check_inplace(const Tensor& t, const char* op) {
  t.check_defined(op);
  if (is_grad_enabled() && t.requires_grad())
    throw AutogradError(std::string(op) + ": " + t.describe() +
                        " requires grad; in-place writes to it would corrupt the graph (use "
                        "NoGradGuard, e.g. for optimizer updates)");
}
using detail::check_inplace;

Tensor& Tensor::zero_() { return fill_(0.0); }

Tensor& Tensor::fill_(double value) {
  check_inplace(*this, "fill_");
  // A double outside int64's range has no int64 value (the cast would be undefined).
  if (dtype() == kInt64 && !(value >= -0x1p63 && value < 0x1p63)) {
    char text[32];
    std::snprintf(text, sizeof text, "%.17g", value);
    throw ValueError(std::string("fill_: the fill value ") + text + " does not fit " + describe() +
                     " (int64 holds -2^63 to 2^63 - 1)");
  }
  kernels_for(device(), "fill_").fill(*this, value);
  impl_->storage->bump_version();
  return *this;
}

Tensor& Tensor::copy_(const Tensor& src) {
  check_inplace(*this, "copy_");
  src.check_defined("copy_");
  if (src.shape() != shape())
    throw ShapeError("copy_: source " + src.describe() + " does not match destination " +
                     describe());
  // Convert on the source's device, then copy the bytes (across devices if need be).
  Tensor converted = src.dtype() == dtype() ? src.detach() : src.detach().to(dtype());
  detail::copy_elements(converted, *this);
  impl_->storage->bump_version();
  return *this;
}

Tensor& Tensor::add_(const Tensor& other, double alpha) {
  check_inplace(*this, "add_");
  detail::check_float_op("add_", *this, other);
  if (broadcast_shapes(shape(), other.shape(), "add_") != shape())
    throw ShapeError("add_: " + other.describe() + " cannot be broadcast to " + describe());
  // In place, element by element: each output element reads only its own position of
  // *this (and other's broadcast position), so aliasing is harmless.
  Tensor self = *this;
  kernels_for(device(), "add_").binary(Binary::add, self, other, self, alpha);
  impl_->storage->bump_version();
  return *this;
}

Tensor& Tensor::mul_(double factor) {
  check_inplace(*this, "mul_");
  detail::check_floating("mul_", *this);
  Tensor self = *this;
  kernels_for(device(), "mul_").unary(Unary::mul_scalar, self, self, factor, 0.0);
  impl_->storage->bump_version();
  return *this;
}

// --- method forms --------------------------------------------------------------------
Tensor Tensor::reshape(const Shape& s) const { return headgrad::reshape(*this, s); }
Tensor Tensor::view(const Shape& s) const { return headgrad::view(*this, s); }
Tensor Tensor::flatten(std::int64_t s, std::int64_t e) const {
  return headgrad::flatten(*this, s, e);
}
Tensor Tensor::transpose(std::int64_t d0, std::int64_t d1) const {
  return headgrad::transpose(*this, d0, d1);
}
Tensor Tensor::t() const {
  if (dim() != 2) throw ShapeError("t: expected a 2-d tensor, got " + describe());
  return headgrad::transpose(*this, 0, 1);
}
Tensor Tensor::permute(const Shape& dims) const { return headgrad::permute(*this, dims); }
Tensor Tensor::unsqueeze(std::int64_t d) const { return headgrad::unsqueeze(*this, d); }
Tensor Tensor::squeeze() const { return headgrad::squeeze(*this); }
Tensor Tensor::squeeze(std::int64_t d) const { return headgrad::squeeze(*this, d); }
Tensor Tensor::expand(const Shape& s) const { return headgrad::expand(*this, s); }
Tensor Tensor::narrow(std::int64_t d, std::int64_t start, std::int64_t len) const {
  return headgrad::narrow(*this, d, start, len);
}
Tensor Tensor::sum() const { return headgrad::sum(*this); }
Tensor Tensor::sum(const Shape& dims, bool keepdim) const {
  return headgrad::sum(*this, dims, keepdim);
}
Tensor Tensor::mean() const { return headgrad::mean(*this); }
Tensor Tensor::mean(const Shape& dims, bool keepdim) const {
  return headgrad::mean(*this, dims, keepdim);
}
Tensor Tensor::var() const { return headgrad::var(*this); }
Tensor Tensor::var(const Shape& dims, bool keepdim, std::int64_t correction) const {
  return headgrad::var(*this, dims, keepdim, correction);
}
Tensor Tensor::max() const { return headgrad::max(*this); }
std::tuple<Tensor, Tensor> Tensor::max(std::int64_t dim, bool keepdim) const {
  MaxResult r = headgrad::max(*this, dim, keepdim);
  return {std::move(r.values), std::move(r.indices)};
}
Tensor Tensor::amax(const Shape& dims, bool keepdim) const {
  return headgrad::amax(*this, dims, keepdim);
}
Tensor Tensor::argmax(std::int64_t dim, bool keepdim) const {
  return headgrad::argmax(*this, dim, keepdim);
}
Tensor Tensor::slice(std::int64_t dim, std::int64_t start, std::int64_t end,
                     std::int64_t step) const {
  return headgrad::slice(*this, dim, start, end, step);
}
Tensor Tensor::select(std::int64_t dim, std::int64_t i) const {
  return headgrad::select(*this, dim, i);
}
Tensor Tensor::index_select(std::int64_t dim, const Tensor& index) const {
  return headgrad::index_select(*this, dim, index);
}
std::vector<Tensor> Tensor::split(std::int64_t size, std::int64_t dim) const {
  return headgrad::split(*this, size, dim);
}
std::vector<Tensor> Tensor::chunk(std::int64_t chunks, std::int64_t dim) const {
  return headgrad::chunk(*this, chunks, dim);
}
Tensor Tensor::matmul(const Tensor& other) const { return headgrad::matmul(*this, other); }
Tensor Tensor::add(const Tensor& o, double alpha) const { return headgrad::add(*this, o, alpha); }
Tensor Tensor::sub(const Tensor& o, double alpha) const { return headgrad::sub(*this, o, alpha); }
Tensor Tensor::mul(const Tensor& o) const { return headgrad::mul(*this, o); }
Tensor Tensor::div(const Tensor& o) const { return headgrad::div(*this, o); }
Tensor Tensor::neg() const { return headgrad::neg(*this); }
Tensor Tensor::exp() const { return headgrad::exp(*this); }
Tensor Tensor::log() const { return headgrad::log(*this); }
Tensor Tensor::sqrt() const { return headgrad::sqrt(*this); }
Tensor Tensor::rsqrt() const { return headgrad::rsqrt(*this); }
Tensor Tensor::abs() const { return headgrad::abs(*this); }
Tensor Tensor::tanh() const { return headgrad::tanh(*this); }
Tensor Tensor::sigmoid() const { return headgrad::sigmoid(*this); }
Tensor Tensor::relu() const { return headgrad::relu(*this); }
Tensor Tensor::gelu() const { return headgrad::gelu(*this); }
Tensor Tensor::clamp(double lo, double hi) const { return headgrad::clamp(*this, lo, hi); }
Tensor Tensor::pow(double e) const { return headgrad::pow(*this, e); }
Tensor Tensor::softmax(std::int64_t d) const { return headgrad::softmax(*this, d); }
Tensor Tensor::log_softmax(std::int64_t d) const { return headgrad::log_softmax(*this, d); }
Tensor Tensor::eq(const Tensor& o) const { return headgrad::eq(*this, o); }
Tensor Tensor::ne(const Tensor& o) const { return headgrad::ne(*this, o); }
Tensor Tensor::lt(const Tensor& o) const { return headgrad::lt(*this, o); }
Tensor Tensor::le(const Tensor& o) const { return headgrad::le(*this, o); }
Tensor Tensor::gt(const Tensor& o) const { return headgrad::gt(*this, o); }
Tensor Tensor::ge(const Tensor& o) const { return headgrad::ge(*this, o); }
Tensor Tensor::eq(double o) const { return *this == o; }
Tensor Tensor::ne(double o) const { return *this != o; }
Tensor Tensor::lt(double o) const { return *this < o; }
Tensor Tensor::le(double o) const { return *this <= o; }
Tensor Tensor::gt(double o) const { return *this > o; }
Tensor Tensor::ge(double o) const { return *this >= o; }
Tensor Tensor::logical_not() const { return headgrad::logical_not(*this); }
Tensor Tensor::masked_fill(const Tensor& mask, double value) const {
  return headgrad::masked_fill(*this, mask, value);
}

}  // namespace headgrad
