// Tensor's own methods: metadata, the autograd state it carries, detach, element access.
// Tensor declares its whole API (as torch::Tensor does), and each method is defined in the
// layer that implements it: the graph-facing ones (backward, hooks, retain_grad) in
// src/autograd/engine.cpp, the math, the conversions and the in-place writes in
// src/ops/tensor_methods.cpp. So this file needs nothing above core.
#include "headgrad/core/tensor.hpp"

#include "core/cuda_backend.hpp"
#include "core/dispatch.hpp"

namespace headgrad {

using detail::dispatch_all;

const Tensor& Tensor::check_defined(const char* op) const {
  if (!impl_) throw Error(std::string(op) + ": the tensor is undefined (holds no data)");
  return *this;
}

const Shape& Tensor::shape() const { return check_defined("shape").impl_->shape; }
std::int64_t Tensor::dim() const { return static_cast<std::int64_t>(shape().size()); }
std::int64_t Tensor::size(std::int64_t d) const {
  if (dim() == 0)
    throw IndexError("size: a 0-d tensor has no dims (asked for dim " + std::to_string(d) + ")");
  return shape()[static_cast<std::size_t>(normalize_dim(d, dim(), "size"))];
}
std::int64_t Tensor::numel() const { return numel_of(shape()); }
DType Tensor::dtype() const { return check_defined("dtype").impl_->dtype; }
Device Tensor::device() const { return check_defined("device").impl_->device(); }
const std::string& Tensor::name() const { return check_defined("name").impl_->name; }
Tensor& Tensor::set_name(std::string name) {
  check_defined("set_name").impl_->name = std::move(name);
  return *this;
}
std::string Tensor::describe() const { return detail::describe(*this); }

bool Tensor::requires_grad() const {
  return impl_ && (impl_->requires_grad || impl_->grad_fn != nullptr);
}

Tensor& Tensor::requires_grad_(bool requires_grad) {
  check_defined("requires_grad_");
  if (!is_leaf()) {
    if (!requires_grad)
      throw AutogradError("requires_grad_: " + describe() +
                          " is not a leaf; use detach() to get a tensor outside the graph");
    return *this;
  }
  if (requires_grad && !is_floating(impl_->dtype))
    throw DTypeError("requires_grad_: only floating tensors can require gradients, got " +
                     describe());
  impl_->requires_grad = requires_grad;
  return *this;
}

bool Tensor::is_leaf() const { return !check_defined("is_leaf").impl_->grad_fn; }
Tensor Tensor::grad() const { return check_defined("grad").impl_->grad; }

void Tensor::set_grad(const Tensor& grad) {
  check_defined("set_grad");
  if (grad.defined() && (grad.shape() != shape() || grad.dtype() != dtype()))
    throw ShapeError("set_grad: gradient " + grad.describe() + " does not match tensor " +
                     describe());
  impl_->grad = grad;
}

void Tensor::zero_grad() { check_defined("zero_grad").impl_->grad = Tensor(); }
const std::shared_ptr<autograd::Node>& Tensor::grad_fn() const {
  return check_defined("grad_fn").impl_->grad_fn;
}
int Tensor::output_nr() const { return check_defined("output_nr").impl_->output_nr; }
bool Tensor::retains_grad() const { return check_defined("retains_grad").impl_->retains_grad; }

Tensor Tensor::detach() const {
  check_defined("detach");
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = impl_->storage;
  impl->offset = impl_->offset;
  impl->shape = impl_->shape;
  impl->dtype = impl_->dtype;
  impl->name = impl_->name;
  return Tensor(std::move(impl));
}

namespace {
// The tensor's values on the CPU: itself, or a detached copy of a device tensor.
Tensor on_cpu(const Tensor& t) { return t.device().is_cpu() ? t : t.detach().to(Device::cpu()); }
}  // namespace

namespace {
// Flat element index of a multi-index (negative entries count from the end).
std::int64_t flat_index(const Tensor& t, const Shape& index, const char* op) {
  const Shape& shape = t.shape();
  if (index.size() != shape.size())
    throw IndexError(std::string(op) + ": index of rank " + std::to_string(index.size()) +
                     " for a tensor of shape " + shape_str(shape));
  std::int64_t flat = 0;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    std::int64_t i = index[d] < 0 ? index[d] + shape[d] : index[d];
    if (i < 0 || i >= shape[d])
      throw IndexError(std::string(op) + ": index " + std::to_string(index[d]) +
                       " is out of range for dim " + std::to_string(d) + " of size " +
                       std::to_string(shape[d]));
    flat = flat * shape[d] + i;
  }
  return flat;
}
}  // namespace

double Tensor::item() const { return item<double>(); }

template <typename T>
T Tensor::item() const {
  check_defined("item");
  if (numel() != 1)
    throw ShapeError("item: expected a tensor with one element, got shape " + shape_str(shape()));
  const Tensor host = on_cpu(*this);
  return dispatch_all(dtype(),
                      [&]<typename S>() { return static_cast<T>(detail::ptr<S>(host)[0]); });
}
template float Tensor::item<float>() const;
template double Tensor::item<double>() const;
template std::int64_t Tensor::item<std::int64_t>() const;
template bool Tensor::item<bool>() const;

double Tensor::at(const Shape& index) const {
  check_defined("at");
  const std::int64_t flat = flat_index(*this, index, "at");
  const Tensor element = on_cpu(detail::alias(*this, {numel()}).narrow(0, flat, 1));
  return dispatch_all(
      dtype(), [&]<typename S>() { return static_cast<double>(detail::ptr<S>(element)[0]); });
}

void Tensor::set_at(const Shape& index, double value) {
  check_defined("set_at");
  const std::int64_t flat = flat_index(*this, index, "set_at");
  if (device().is_cuda()) {
    dispatch_all(dtype(), [&]<typename S>() {
      const S v = static_cast<S>(value);
      cuda::backend().copy_host_to_device(static_cast<S*>(impl_->data()) + flat, &v, sizeof(S),
                                          device().index());
    });
  } else {
    dispatch_all(dtype(),
                 [&]<typename S>() { detail::ptr<S>(*this)[flat] = static_cast<S>(value); });
  }
  impl_->storage->bump_version();
}

template <typename T>
std::vector<T> Tensor::to_vector() const {
  check_defined("to_vector");
  const Tensor host = on_cpu(*this);
  std::vector<T> out(static_cast<std::size_t>(numel()));
  dispatch_all(dtype(), [&]<typename S>() {
    const S* src = detail::ptr<S>(host);
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<T>(src[i]);
  });
  return out;
}
template std::vector<float> Tensor::to_vector<float>() const;
template std::vector<double> Tensor::to_vector<double>() const;
template std::vector<std::int64_t> Tensor::to_vector<std::int64_t>() const;
template std::vector<bool> Tensor::to_vector<bool>() const;

template <typename T>
T* Tensor::data() {
  check_defined("data");
  detail::check_cpu("data", *this);
  if (dtype_of<T>() != dtype())
    throw DTypeError("data: requested " + to_string(dtype_of<T>()) + " pointer to " + describe());
  return static_cast<T*>(impl_->data());
}
template <typename T>
const T* Tensor::data() const {
  return const_cast<Tensor*>(this)->data<T>();
}
template float* Tensor::data<float>();
template double* Tensor::data<double>();
template std::int64_t* Tensor::data<std::int64_t>();
template bool* Tensor::data<bool>();
template const float* Tensor::data<float>() const;
template const double* Tensor::data<double>() const;
template const std::int64_t* Tensor::data<std::int64_t>() const;
template const bool* Tensor::data<bool>() const;

void* Tensor::raw_data() { return check_defined("raw_data").impl_->data(); }
const void* Tensor::raw_data() const { return check_defined("raw_data").impl_->data(); }

}  // namespace headgrad
