// In-place parameter initializers (see nn/init.hpp). Values are drawn into a fresh tensor
// and copied in under NoGradGuard, so initializing a parameter records no graph.
#include "headgrad/nn/init.hpp"

#include <cmath>

#include "headgrad/autograd/grad_mode.hpp"
#include "headgrad/core/error.hpp"

namespace headgrad::nn::init {

namespace {

void check_floating(const char* op, const Tensor& t) {
  t.check_defined(op);
  if (!is_floating(t.dtype()))
    throw DTypeError(std::string("init::") + op + ": needs a floating tensor, got " + t.describe());
}

Tensor& assign(Tensor& t, const Tensor& values) {
  NoGradGuard no_grad;
  t.copy_(values);
  return t;
}

}  // namespace

double calculate_gain(Nonlinearity nonlinearity, double param) {
  switch (nonlinearity) {
    case Nonlinearity::linear:
    case Nonlinearity::sigmoid:
      return 1.0;
    case Nonlinearity::tanh:
      return 5.0 / 3.0;
    case Nonlinearity::relu:
      return std::sqrt(2.0);
    case Nonlinearity::leaky_relu:
      return std::sqrt(2.0 / (1.0 + param * param));
  }
  return 1.0;
}

// PyTorch: fan_in = size(1) * prod(size(2:)), fan_out = size(0) * prod(size(2:)).
std::pair<std::int64_t, std::int64_t> fan_in_and_fan_out(const Shape& shape) {
  if (shape.size() < 2)
    throw ShapeError("init: fan in and fan out need a tensor of at least 2 dims, got " +
                     shape_str(shape));
  std::int64_t receptive = 1;
  for (std::size_t i = 2; i < shape.size(); ++i) receptive *= shape[i];
  return {shape[1] * receptive, shape[0] * receptive};
}

// Keras (compute_fans): fan_in = shape[-2] * prod(shape[:-2]), fan_out = shape[-1] *
// prod(shape[:-2]); a 1-d shape has fan_in = fan_out = its size.
std::pair<std::int64_t, std::int64_t> keras_fan_in_and_fan_out(const Shape& shape) {
  if (shape.empty()) throw ShapeError("init: Keras fans need at least 1 dim, got a 0-d shape");
  if (shape.size() == 1) return {shape[0], shape[0]};
  std::int64_t receptive = 1;
  for (std::size_t i = 0; i + 2 < shape.size(); ++i) receptive *= shape[i];
  return {shape[shape.size() - 2] * receptive, shape.back() * receptive};
}

Tensor& uniform_(Tensor& t, double low, double high, Generator* generator) {
  check_floating("uniform_", t);
  return assign(t, uniform(t.shape(), low, high, t.dtype(), generator));
}

Tensor& normal_(Tensor& t, double mean, double stddev, Generator* generator) {
  check_floating("normal_", t);
  return assign(t, normal(t.shape(), mean, stddev, t.dtype(), generator));
}

Tensor& constant_(Tensor& t, double value) {
  check_floating("constant_", t);
  NoGradGuard no_grad;
  t.fill_(value);
  return t;
}

Tensor& zeros_(Tensor& t) { return constant_(t, 0.0); }
Tensor& ones_(Tensor& t) { return constant_(t, 1.0); }

Tensor& xavier_uniform_(Tensor& t, double gain, Generator* generator) {
  check_floating("xavier_uniform_", t);
  auto [fan_in, fan_out] = fan_in_and_fan_out(t.shape());
  const double bound = gain * std::sqrt(6.0 / static_cast<double>(fan_in + fan_out));
  return uniform_(t, -bound, bound, generator);
}

Tensor& xavier_normal_(Tensor& t, double gain, Generator* generator) {
  check_floating("xavier_normal_", t);
  auto [fan_in, fan_out] = fan_in_and_fan_out(t.shape());
  const double stddev = gain * std::sqrt(2.0 / static_cast<double>(fan_in + fan_out));
  return normal_(t, 0.0, stddev, generator);
}

namespace {
double kaiming_std(const Tensor& t, double a, FanMode mode, Nonlinearity nonlinearity) {
  auto [fan_in, fan_out] = fan_in_and_fan_out(t.shape());
  const auto fan = static_cast<double>(mode == FanMode::fan_in ? fan_in : fan_out);
  if (fan == 0) throw ShapeError("init::kaiming: zero fan for " + t.describe());
  return calculate_gain(nonlinearity, a) / std::sqrt(fan);
}
}  // namespace

Tensor& kaiming_uniform_(Tensor& t, double a, FanMode mode, Nonlinearity nonlinearity,
                         Generator* generator) {
  check_floating("kaiming_uniform_", t);
  const double bound = std::sqrt(3.0) * kaiming_std(t, a, mode, nonlinearity);
  return uniform_(t, -bound, bound, generator);
}

Tensor& kaiming_normal_(Tensor& t, double a, FanMode mode, Nonlinearity nonlinearity,
                        Generator* generator) {
  check_floating("kaiming_normal_", t);
  return normal_(t, 0.0, kaiming_std(t, a, mode, nonlinearity), generator);
}

Tensor& glorot_uniform_keras_(Tensor& t, Generator* generator) {
  check_floating("glorot_uniform_keras_", t);
  auto [fan_in, fan_out] = keras_fan_in_and_fan_out(t.shape());
  const double bound = std::sqrt(6.0 / static_cast<double>(fan_in + fan_out));
  return uniform_(t, -bound, bound, generator);
}

}  // namespace headgrad::nn::init
