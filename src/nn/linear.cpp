// nn::Linear (see nn/linear.hpp).
#include "headgrad/nn/linear.hpp"

#include <cmath>

#include "headgrad/nn/init.hpp"
#include "headgrad/ops/matmul.hpp"

namespace headgrad::nn {

Linear::Linear(const LinearOptions& options, Generator* generator)
    : Module("Linear"), options_(options) {
  if (options.in_features <= 0 || options.out_features <= 0)
    throw ValueError("Linear: in_features and out_features must be positive, got " +
                     std::to_string(options.in_features) + " and " +
                     std::to_string(options.out_features));
  weight = register_parameter("weight", empty({options.out_features, options.in_features}));
  bias = register_parameter("bias", options.bias ? empty({options.out_features}) : Tensor());
  reset_parameters(generator);
}

// torch.nn.Linear.reset_parameters: kaiming_uniform_(weight, a=sqrt(5)) gives
// U(-1/sqrt(in), 1/sqrt(in)); the bias uses the same bound.
void Linear::reset_parameters(Generator* generator) {
  init::kaiming_uniform_(weight, std::sqrt(5.0), init::FanMode::fan_in,
                         init::Nonlinearity::leaky_relu, generator);
  if (bias.defined()) {
    const double bound = 1.0 / std::sqrt(static_cast<double>(options_.in_features));
    init::uniform_(bias, -bound, bound, generator);
  }
}

Tensor Linear::forward(const Tensor& x) const { return linear(x, weight, bias); }

std::string Linear::extra_repr() const {
  return "in_features=" + std::to_string(options_.in_features) +
         ", out_features=" + std::to_string(options_.out_features) +
         ", bias=" + (options_.bias ? "True" : "False");
}

}  // namespace headgrad::nn
