// Unary elementwise ops, forward and backward side by side. The kernels come from the
// input's device (Kernels::unary, unary_backward; the CPU's, in src/ops/cpu/unary_kernels.cpp,
// vectorize exp/log/tanh/erf with xsimd, and each backward is one fused pass
// dx[i] = dy[i] * f'(...)).

#include "core/dispatch.hpp"
#include "core/kernels.hpp"
#include "headgrad/autograd/function.hpp"
#include "headgrad/ops/elementwise.hpp"

namespace headgrad {

using autograd::BackwardContext;
using Grads = std::vector<Tensor>;

namespace {

// out = f(x): the kernel `kind` of x's device (with the op's scalars a, b).
Tensor unary_forward(const char* op, Unary kind, const Tensor& x, double a = 0.0, double b = 0.0) {
  detail::check_float_op(op, x);
  Tensor out = detail::new_tensor(x.shape(), x.dtype(), x.device());
  kernels_for(x.device(), op).unary(kind, x, out, a, b);
  return out;
}

// dx[i] = g[i] * f'(...) from the saved input or output v: the backward kernel of `kind`.
Tensor grad_map(Unary kind, const Tensor& g, const Tensor& v, double a = 0.0, double b = 0.0) {
  Tensor dx = detail::new_tensor(g.shape(), g.dtype(), g.device());
  kernels_for(g.device(), "backward").unary_backward(kind, g, v, dx, a, b);
  return dx;
}

}  // namespace

// neg: y = -x.  dx = -dy
Tensor neg(const Tensor& x) {
  Tensor out = unary_forward("neg", Unary::neg, x);
  autograd::record("neg", {x}, {&out}, {},
                   [](const Grads& g, const BackwardContext&) { return Grads{neg(g[0])}; });
  return out;
}

// exp: y = e^x.  dx = dy * y
Tensor exp(const Tensor& x) {
  Tensor out = unary_forward("exp", Unary::exp, x);
  autograd::record("exp", {x}, {&out}, {out}, [](const Grads& g, const BackwardContext& ctx) {
    return Grads{grad_map(Unary::exp, g[0], ctx.saved(0))};
  });
  return out;
}

// log: y = ln x.  dx = dy / x
Tensor log(const Tensor& x) {
  Tensor out = unary_forward("log", Unary::log, x);
  autograd::record("log", {x}, {&out}, {x}, [](const Grads& g, const BackwardContext& ctx) {
    return Grads{grad_map(Unary::log, g[0], ctx.saved(0))};
  });
  return out;
}

// sqrt: y = x^(1/2).  dx = dy / (2y)
Tensor sqrt(const Tensor& x) {
  Tensor out = unary_forward("sqrt", Unary::sqrt, x);
  autograd::record("sqrt", {x}, {&out}, {out}, [](const Grads& g, const BackwardContext& ctx) {
    return Grads{grad_map(Unary::sqrt, g[0], ctx.saved(0))};
  });
  return out;
}

// rsqrt: y = x^(-1/2).  dx = -dy * y^3 / 2
Tensor rsqrt(const Tensor& x) {
  Tensor out = unary_forward("rsqrt", Unary::rsqrt, x);
  autograd::record("rsqrt", {x}, {&out}, {out}, [](const Grads& g, const BackwardContext& ctx) {
    return Grads{grad_map(Unary::rsqrt, g[0], ctx.saved(0))};
  });
  return out;
}

// abs: y = |x|.  dx = dy * sign(x) (0 at 0)
Tensor abs(const Tensor& x) {
  Tensor out = unary_forward("abs", Unary::abs, x);
  autograd::record("abs", {x}, {&out}, {x}, [](const Grads& g, const BackwardContext& ctx) {
    return Grads{grad_map(Unary::abs, g[0], ctx.saved(0))};
  });
  return out;
}

// tanh: y = tanh x.  dx = dy * (1 - y^2)
Tensor tanh(const Tensor& x) {
  Tensor out = unary_forward("tanh", Unary::tanh, x);
  autograd::record("tanh", {x}, {&out}, {out}, [](const Grads& g, const BackwardContext& ctx) {
    return Grads{grad_map(Unary::tanh, g[0], ctx.saved(0))};
  });
  return out;
}

// sigmoid: y = 1 / (1 + e^-x).  dx = dy * y * (1 - y)
Tensor sigmoid(const Tensor& x) {
  Tensor out = unary_forward("sigmoid", Unary::sigmoid, x);
  autograd::record("sigmoid", {x}, {&out}, {out}, [](const Grads& g, const BackwardContext& ctx) {
    return Grads{grad_map(Unary::sigmoid, g[0], ctx.saved(0))};
  });
  return out;
}

// relu: y = max(x, 0), NaN kept (as PyTorch).  dx = dy * [x > 0]  (0 at 0, as PyTorch)
Tensor relu(const Tensor& x) {
  Tensor out = unary_forward("relu", Unary::relu, x);
  autograd::record("relu", {x}, {&out}, {out}, [](const Grads& g, const BackwardContext& ctx) {
    return Grads{grad_map(Unary::relu, g[0], ctx.saved(0))};
  });
  return out;
}

// gelu, exact: y = x * Phi(x) = x/2 * (1 + erf(x/sqrt2)).
//   dx = dy * (Phi(x) + x * phi(x)),  phi(x) = exp(-x^2/2) / sqrt(2 pi)
// gelu, tanh form: y = x/2 * (1 + tanh(u)), u = sqrt(2/pi) * (x + 0.044715 x^3).
//   dx = dy * (1/2 (1 + tanh u) + x/2 (1 - tanh^2 u) sqrt(2/pi) (1 + 3*0.044715 x^2))
// When x requires grad, the forward also computes gelu'(x) (a few FMAs on top of the
// value, Kernels::unary_with_derivative) and saves it instead of x, so the backward is
// dx = dy * gelu'(x), a streaming multiply with no exp, erf or tanh, and x need not be kept.
Tensor gelu(const Tensor& x, GeluApproximation approximate) {
  const Unary kind = approximate == GeluApproximation::none ? Unary::gelu : Unary::gelu_tanh;
  if (!autograd::any_requires_grad({x})) return unary_forward("gelu", kind, x);
  detail::check_float_op("gelu", x);
  Tensor out = detail::new_tensor(x.shape(), x.dtype(), x.device());
  Tensor derivative = detail::new_tensor(x.shape(), x.dtype(), x.device());
  kernels_for(x.device(), "gelu").unary_with_derivative(kind, x, out, derivative);
  autograd::record("gelu", {x}, {&out}, {derivative},
                   [](const Grads& g, const BackwardContext& ctx) {
                     Tensor dx = detail::new_tensor(g[0].shape(), g[0].dtype(), g[0].device());
                     kernels_for(g[0].device(), "gelu backward")
                         .binary(Binary::mul, g[0], ctx.saved(0), dx, 1.0);
                     return Grads{dx};
                   });
  return out;
}

// clamp: y = min(max(x, lo), hi).  dx = dy * [lo <= x <= hi]
Tensor clamp(const Tensor& x, double min_value, double max_value) {
  if (min_value > max_value)
    throw ValueError("clamp: min " + std::to_string(min_value) + " is greater than max " +
                     std::to_string(max_value));
  // select, not min/max, so that NaN stays NaN in SIMD lanes and the tail alike
  Tensor out = unary_forward("clamp", Unary::clamp, x, min_value, max_value);
  autograd::record("clamp", {x}, {&out}, {x}, [=](const Grads& g, const BackwardContext& ctx) {
    return Grads{grad_map(Unary::clamp, g[0], ctx.saved(0), min_value, max_value)};
  });
  return out;
}

}  // namespace headgrad
