// Elementwise ops. Binary ops broadcast like PyTorch; both operands must share dtype and
// device (a ShapeError/DTypeError/DeviceError names the op and both operands otherwise).
// Scalar variants take a double converted to the tensor's dtype.
#pragma once

#include "headgrad/core/tensor.hpp"

namespace headgrad {

// binary, broadcasting
Tensor add(const Tensor& a, const Tensor& b, double alpha = 1.0);  // a + alpha*b
Tensor sub(const Tensor& a, const Tensor& b, double alpha = 1.0);  // a - alpha*b
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& base, const Tensor& exponent);  // d/d(exponent) needs base > 0
Tensor maximum(const Tensor& a, const Tensor& b);        // ties send the gradient half/half
Tensor minimum(const Tensor& a, const Tensor& b);

// scalar variants
Tensor add(const Tensor& a, double b);
Tensor sub(const Tensor& a, double b);
Tensor rsub(const Tensor& a, double b);  // b - a
Tensor mul(const Tensor& a, double b);
Tensor div(const Tensor& a, double b);
Tensor rdiv(const Tensor& a, double b);  // b / a
Tensor pow(const Tensor& base, double exponent);
Tensor pow(double base, const Tensor& exponent);

// unary
Tensor neg(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor abs(const Tensor& x);  // gradient sign(x), 0 at 0
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor relu(const Tensor& x);  // gradient 0 at 0, as PyTorch
enum class GeluApproximation { none, tanh };
Tensor gelu(const Tensor& x, GeluApproximation approximate = GeluApproximation::none);
Tensor clamp(const Tensor& x, double min_value, double max_value);  // gradient 1 inside

// comparisons (not differentiable) -> bool tensors, broadcasting
Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);
Tensor logical_not(const Tensor& mask);  // bool -> bool

// where(cond, a, b): a where cond is true, else b; differentiable in a and b.
Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b);

}  // namespace headgrad
