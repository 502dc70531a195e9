// Tensor factories: constant fills, ranges, random tensors and tensors from host data.
// On a GPU, constant fills run there; ranges, random tensors and host data are made on the
// CPU and copied over, so a seeded generator gives the same values on every device (a
// model initialized on the GPU equals the one initialized on the CPU).
#include <cmath>
#include <cstdio>
#include <cstring>

#include "core/cuda_backend.hpp"
#include "core/dispatch.hpp"
#include "headgrad/core/generator.hpp"
#include "headgrad/core/tensor.hpp"

namespace headgrad {

using detail::dispatch_all;
using detail::new_tensor;

namespace {
// Moves a tensor built on the CPU to the requested device, then sets requires_grad.
Tensor finish(Tensor t, const TensorOptions& options) {
  if (t.device() != options.device_) t = t.to(options.device_);
  if (options.requires_grad_) t.requires_grad_(true);
  return t;
}
Generator& pick(Generator* generator) { return generator ? *generator : default_generator(); }
}  // namespace

Tensor empty(const Shape& shape, TensorOptions options) {
  return finish(new_tensor(shape, options.dtype_or(kFloat32), options.device_), options);
}

Tensor full(const Shape& shape, double value, TensorOptions options) {
  // A double outside int64's range has no int64 value (the cast would be undefined).
  if (options.dtype_or(kFloat32) == kInt64 && !(value >= -0x1p63 && value < 0x1p63)) {
    char text[32];
    std::snprintf(text, sizeof text, "%.17g", value);
    throw ValueError(std::string("full: the fill value ") + text +
                     " does not fit int64 (-2^63 to 2^63 - 1)");
  }
  Tensor t = new_tensor(shape, options.dtype_or(kFloat32), options.device_);
  if (t.device().is_cuda()) {
    cuda::backend().fill(t, value);
    return finish(t, options);
  }
  const std::int64_t n = t.numel();
  dispatch_all(t.dtype(), [&]<typename T>() {
    T* p = detail::ptr<T>(t);
    const T v = static_cast<T>(value);
    for (std::int64_t i = 0; i < n; ++i) p[i] = v;
  });
  return finish(t, options);
}

Tensor zeros(const Shape& shape, TensorOptions options) { return full(shape, 0.0, options); }
Tensor ones(const Shape& shape, TensorOptions options) { return full(shape, 1.0, options); }
Tensor scalar_tensor(double value, TensorOptions options) { return full({}, value, options); }
Tensor zeros_like(const Tensor& t) { return zeros(t.shape(), t.options()); }
Tensor ones_like(const Tensor& t) { return ones(t.shape(), t.options()); }
Tensor empty_like(const Tensor& t) { return empty(t.shape(), t.options()); }
Tensor full_like(const Tensor& t, double value) { return full(t.shape(), value, t.options()); }

Tensor arange(double end, TensorOptions options) { return arange(0.0, end, 1.0, options); }

Tensor arange(double start, double end, double step, TensorOptions options) {
  if (step == 0.0) throw ValueError("arange: step must be nonzero");
  if (!std::isfinite(start) || !std::isfinite(end) || !std::isfinite(step))
    throw ValueError("arange: start, end and step must be finite");
  const double count = std::ceil((end - start) / step);
  const std::int64_t n = count > 0 ? static_cast<std::int64_t>(count) : 0;
  Tensor t = new_tensor({n}, options.dtype_or(kFloat32), Device::cpu());
  dispatch_all(t.dtype(), [&]<typename T>() {
    T* p = detail::ptr<T>(t);
    for (std::int64_t i = 0; i < n; ++i)
      p[i] = static_cast<T>(start + static_cast<double>(i) * step);
  });
  return finish(t, options);
}

namespace {
// Fills a floating tensor with draw(gen) per element. Draws are doubles; when converted to
// T they can round up to an exclusive upper bound (a double in [1 - 2^-25, 1) becomes
// 1.0f), so values at or above `exclusive_high` (NaN: no bound) step down to the next T.
template <typename Draw>
Tensor random_tensor(const char* op, const Shape& shape, TensorOptions options,
                     Generator* generator, Draw&& draw, double exclusive_high = NAN) {
  Tensor t = new_tensor(shape, options.dtype_or(kFloat32), Device::cpu());
  Generator& gen = pick(generator);
  const std::int64_t n = t.numel();
  detail::dispatch_floating(t.dtype(), op, [&]<typename T>() {
    T* p = detail::ptr<T>(t);
    for (std::int64_t i = 0; i < n; ++i) {
      T v = static_cast<T>(draw(gen));
      if (static_cast<double>(v) >= exclusive_high)
        v = std::nextafter(v, static_cast<T>(-INFINITY));
      p[i] = v;
    }
  });
  return finish(t, options);
}
}  // namespace

Tensor rand(const Shape& shape, TensorOptions options, Generator* generator) {
  return random_tensor(
      "rand", shape, options, generator, [](Generator& g) { return g.next_double(); }, 1.0);
}

Tensor randn(const Shape& shape, TensorOptions options, Generator* generator) {
  return random_tensor("randn", shape, options, generator,
                       [](Generator& g) { return g.next_normal(); });
}

Tensor uniform(const Shape& shape, double low, double high, TensorOptions options,
               Generator* generator) {
  if (!(low <= high))
    throw ValueError("uniform: expected low <= high, got " + std::to_string(low) + " and " +
                     std::to_string(high));
  return random_tensor(
      "uniform", shape, options, generator,
      [=](Generator& g) { return low + (high - low) * g.next_double(); }, low < high ? high : NAN);
}

Tensor normal(const Shape& shape, double mean, double stddev, TensorOptions options,
              Generator* generator) {
  if (!(stddev >= 0))
    throw ValueError("normal: expected stddev >= 0, got " + std::to_string(stddev));
  return random_tensor("normal", shape, options, generator,
                       [=](Generator& g) { return mean + stddev * g.next_normal(); });
}

Tensor randint(std::int64_t low, std::int64_t high, const Shape& shape, TensorOptions options,
               Generator* generator) {
  if (high <= low)
    throw ValueError("randint: expected low < high, got [" + std::to_string(low) + ", " +
                     std::to_string(high) + ")");
  Tensor t = new_tensor(shape, options.dtype_or(kInt64), Device::cpu());
  Generator& gen = pick(generator);
  const auto range = static_cast<std::uint64_t>(high) - static_cast<std::uint64_t>(low);
  const std::int64_t n = t.numel();
  dispatch_all(t.dtype(), [&]<typename T>() {
    T* p = detail::ptr<T>(t);
    for (std::int64_t i = 0; i < n; ++i)
      p[i] = static_cast<T>(static_cast<std::uint64_t>(low) + gen.next_u64() % range);
  });
  return finish(t, TensorOptions().device(options.device_));
}

template <typename S>
Tensor from_vector(const std::vector<S>& values, const Shape& shape, TensorOptions options) {
  if (static_cast<std::int64_t>(values.size()) != numel_of(shape))
    throw ShapeError("from_vector: " + std::to_string(values.size()) +
                     " values do not fill shape " + shape_str(shape) + " (" +
                     std::to_string(numel_of(shape)) + " elements)");
  Tensor t = new_tensor(shape, options.dtype_or(dtype_of<S>()), Device::cpu());
  dispatch_all(t.dtype(), [&]<typename T>() {
    T* p = detail::ptr<T>(t);
    for (std::size_t i = 0; i < values.size(); ++i) p[i] = static_cast<T>(values[i]);
  });
  return finish(t, options);
}
template Tensor from_vector<float>(const std::vector<float>&, const Shape&, TensorOptions);
template Tensor from_vector<double>(const std::vector<double>&, const Shape&, TensorOptions);
template Tensor from_vector<std::int64_t>(const std::vector<std::int64_t>&, const Shape&,
                                          TensorOptions);
template Tensor from_vector<int>(const std::vector<int>&, const Shape&, TensorOptions);
template Tensor from_vector<bool>(const std::vector<bool>&, const Shape&, TensorOptions);

Tensor from_blob(void* data, const Shape& shape, DType dtype, std::function<void()> release) {
  const auto bytes =
      static_cast<std::size_t>(checked_nbytes(shape, element_size(dtype), "from_blob"));
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<Storage>(data, bytes, std::move(release));
  impl->shape = shape;
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}

Tensor tensor(std::initializer_list<double> values, TensorOptions options) {
  if (!options.dtype_) options.dtype(kFloat32);
  return from_vector(std::vector<double>(values), {static_cast<std::int64_t>(values.size())},
                     options);
}

}  // namespace headgrad
