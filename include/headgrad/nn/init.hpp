// Parameter initialization, in place and without recording a graph, as torch.nn.init.
// Fans follow PyTorch (fan_in = size(1) * receptive field, fan_out = size(0) * receptive
// field) except glorot_uniform_keras_, which follows Keras (the last two dims are
// fan_in/fan_out, the leading dims the receptive field). Every function draws from
// `generator`, or the default generator when it is null.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "headgrad/core/generator.hpp"
#include "headgrad/core/tensor.hpp"

namespace headgrad::nn::init {

enum class FanMode { fan_in, fan_out };
enum class Nonlinearity { linear, relu, leaky_relu, tanh, sigmoid };

// torch.nn.init.calculate_gain (param is leaky_relu's negative slope).
double calculate_gain(Nonlinearity nonlinearity, double param = 0.01);
// (fan_in, fan_out) the PyTorch way; the tensor must have at least 2 dims.
std::pair<std::int64_t, std::int64_t> fan_in_and_fan_out(const Shape& shape);
// (fan_in, fan_out) the Keras way.
std::pair<std::int64_t, std::int64_t> keras_fan_in_and_fan_out(const Shape& shape);

Tensor& uniform_(Tensor& t, double low = 0.0, double high = 1.0, Generator* generator = nullptr);
Tensor& normal_(Tensor& t, double mean = 0.0, double stddev = 1.0, Generator* generator = nullptr);
Tensor& constant_(Tensor& t, double value);
Tensor& zeros_(Tensor& t);
Tensor& ones_(Tensor& t);
// U(-b, b), b = gain * sqrt(6 / (fan_in + fan_out)).
Tensor& xavier_uniform_(Tensor& t, double gain = 1.0, Generator* generator = nullptr);
// N(0, s), s = gain * sqrt(2 / (fan_in + fan_out)).
Tensor& xavier_normal_(Tensor& t, double gain = 1.0, Generator* generator = nullptr);
// U(-b, b), b = gain(nonlinearity, a) * sqrt(3 / fan). nn.Linear's default weight init is
// kaiming_uniform_(w, sqrt(5)), which gives b = 1 / sqrt(fan_in).
Tensor& kaiming_uniform_(Tensor& t, double a = 0.0, FanMode mode = FanMode::fan_in,
                         Nonlinearity nonlinearity = Nonlinearity::leaky_relu,
                         Generator* generator = nullptr);
Tensor& kaiming_normal_(Tensor& t, double a = 0.0, FanMode mode = FanMode::fan_in,
                        Nonlinearity nonlinearity = Nonlinearity::leaky_relu,
                        Generator* generator = nullptr);
// Keras' glorot_uniform: U(-b, b), b = sqrt(6 / (fan_in + fan_out)) with Keras' fans.
Tensor& glorot_uniform_keras_(Tensor& t, Generator* generator = nullptr);

}  // namespace headgrad::nn::init
