// Unary elementwise kernels, forward (y = f(x)) and backward (dx = g * f'(...)), float32
// and float64. Each op is its own functor (UnaryOp / UnaryGrad specialized on the op), so
// every kernel holds only its own math; all of them run through the contiguous launcher of
// elementwise.cuh (x, g and saved have out's shape). The formulas are the CPU's
// (ops/elementwise_unary.cpp, ops/elementwise_binary.cpp), in the same order of operations.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "core/dispatch.hpp"
#include "cuda/backend.hpp"
#include "cuda/common.cuh"
#include "cuda/kernels/elementwise.cuh"
#include "cuda/kernels/math.cuh"

namespace headgrad::cuda {

namespace {

constexpr double kInvSqrt2 = 0.7071067811865476;
constexpr double kSqrt2OverPi = 0.7978845608028654;
constexpr double kInvSqrt2Pi = 0.3989422804014327;
constexpr double kCubic = 0.044715;

// Phi(x), the standard normal CDF. float64: the CPU's 0.5 (1 + erf(x/sqrt2)). float32: the
// same function as 0.5 erfc(-x/sqrt2), which keeps its relative accuracy in the left tail
// (the CPU's float32 path uses an erfc approximation for the same reason).
__device__ __forceinline__ double normal_cdf(double x) {
  return 0.5 * (1.0 + ::erf(x * kInvSqrt2));
}
__device__ __forceinline__ float normal_cdf(float x) {
  return 0.5f * erfcf(-x * static_cast<float>(kInvSqrt2));
}

// d/dx gelu(x) = Phi(x) + x phi(x), phi(x) = exp(-x^2/2) / sqrt(2 pi).
template <typename T>
__device__ __forceinline__ T gelu_derivative(T x) {
  const T gauss = math::exp(T(-0.5) * x * x);
  return normal_cdf(x) + x * gauss * T(kInvSqrt2Pi);
}

// gelu, tanh form: y = x/2 (1 + tanh u), u = sqrt(2/pi) (x + 0.044715 x^3);
// y' = 1/2 (1 + tanh u) + x/2 (1 - tanh^2 u) sqrt(2/pi) (1 + 3 * 0.044715 x^2).
template <typename T>
__device__ __forceinline__ T gelu_tanh_t(T x) {
  return math::tanh(T(kSqrt2OverPi) * (x + T(kCubic) * x * x * x));
}

// The op's scalars, converted to T on the host (flag: the op's special case, see below).
template <typename T>
struct Scalars {
  T a, b, c;
  bool flag;
};

// y = f(x) for op, x and y of n elements.
template <Unary op, typename T>
struct UnaryOp {
  Scalars<T> s;
  __device__ T operator()(T x) const {
    if constexpr (op == Unary::neg) {
      return -x;
    } else if constexpr (op == Unary::exp) {
      return math::exp(x);
    } else if constexpr (op == Unary::log) {
      return math::log(x);
    } else if constexpr (op == Unary::sqrt) {
      return math::sqrt(x);
    } else if constexpr (op == Unary::rsqrt) {
      return T(1) / math::sqrt(x);  // not rsqrtf: the CPU divides
    } else if constexpr (op == Unary::abs) {
      return math::abs(x);
    } else if constexpr (op == Unary::tanh) {
      return math::tanh(x);
    } else if constexpr (op == Unary::sigmoid) {
      return T(1) / (T(1) + math::exp(-x));
    } else if constexpr (op == Unary::relu) {
      return x < T(0) ? T(0) : x;  // NaN stays NaN
    } else if constexpr (op == Unary::gelu) {
      return x * normal_cdf(x);
    } else if constexpr (op == Unary::gelu_tanh) {
      return T(0.5) * x * (T(1) + gelu_tanh_t(x));
    } else if constexpr (op == Unary::clamp) {  // a = min, b = max; NaN stays NaN
      return x < s.a ? s.a : (x > s.b ? s.b : x);
    } else if constexpr (op == Unary::add_scalar) {
      return x + s.a;
    } else if constexpr (op == Unary::rsub_scalar) {
      return s.a - x;
    } else if constexpr (op == Unary::mul_scalar) {
      return x * s.a;
    } else if constexpr (op == Unary::div_scalar) {
      return x / s.a;
    } else if constexpr (op == Unary::rdiv_scalar) {
      return s.a / x;
    } else if constexpr (op == Unary::pow_scalar) {  // flag: a == 2, computed as x*x
      return s.flag ? x * x : math::pow(x, s.a);
    } else {
      static_assert(op == Unary::rpow_scalar);
      return math::pow(s.a, x);
    }
  }
};

// dx = g * f'(...) from v, the saved input or output (Backend::unary_backward in
// src/core/cuda_backend.hpp lists which).
template <Unary op, typename T>
struct UnaryGrad {
  Scalars<T> s;
  __device__ T operator()(T g, T v) const {
    if constexpr (op == Unary::exp) {  // v = y
      return g * v;
    } else if constexpr (op == Unary::log) {  // v = x
      return g / v;
    } else if constexpr (op == Unary::sqrt) {  // v = y
      return g / (v + v);
    } else if constexpr (op == Unary::rsqrt) {  // v = y
      return g * v * v * v * T(-0.5);
    } else if constexpr (op == Unary::abs) {  // v = x; 0 at 0
      return v > T(0) ? g : (v < T(0) ? -g : T(0));
    } else if constexpr (op == Unary::tanh) {  // v = y
      return g * (T(1) - v * v);
    } else if constexpr (op == Unary::sigmoid) {  // v = y
      return g * v * (T(1) - v);
    } else if constexpr (op == Unary::relu) {  // v = y
      return v > T(0) ? g : T(0);
    } else if constexpr (op == Unary::gelu) {  // v = x
      return g * gelu_derivative(v);
    } else if constexpr (op == Unary::gelu_tanh) {  // v = x
      const T t = gelu_tanh_t(v);
      const T du = T(kSqrt2OverPi) * (T(1) + T(3 * kCubic) * v * v);
      return g * (T(0.5) * (T(1) + t) + T(0.5) * v * (T(1) - t * t) * du);
    } else if constexpr (op == Unary::clamp) {  // v = x; a = min, b = max
      return (v >= s.a && v <= s.b) ? g : T(0);
    } else if constexpr (op == Unary::rdiv_scalar) {  // v = y = a/x: -g y^2 / a
      return -g * v * v / s.a;
    } else if constexpr (op == Unary::pow_scalar) {
      // v = x. flag: a == 0 (gradient 0). The CPU's g * x^(a-1) * a with x^(a-1) = x*x
      // when a-1 == 2 (b = 1 then), else pow(x, a-1) (c = a-1).
      if (s.flag) return T(0);
      const T p = s.b != T(0) ? v * v : math::pow(v, s.c);
      return g * p * s.a;
    } else {
      static_assert(op == Unary::rpow_scalar);
      // v = y = a^x: g * y * ln(a) (c = ln a). flag: a == 0, where the CPU gives 0 for
      // x >= 0, i.e. for y = 0^x in {0, 1} (y is inf for x < 0 and NaN for NaN x).
      if (s.flag && v <= T(1)) return T(0);
      return g * v * s.c;
    }
  }
};

const char* unary_name(Unary op) {
  switch (op) {
    case Unary::neg:
      return "neg";
    case Unary::exp:
      return "exp";
    case Unary::log:
      return "log";
    case Unary::sqrt:
      return "sqrt";
    case Unary::rsqrt:
      return "rsqrt";
    case Unary::abs:
      return "abs";
    case Unary::tanh:
      return "tanh";
    case Unary::sigmoid:
      return "sigmoid";
    case Unary::relu:
      return "relu";
    case Unary::gelu:
      return "gelu";
    case Unary::gelu_tanh:
      return "gelu";
    case Unary::clamp:
      return "clamp";
    case Unary::add_scalar:
      return "add";
    case Unary::rsub_scalar:
      return "rsub";
    case Unary::mul_scalar:
      return "mul";
    case Unary::div_scalar:
      return "div";
    case Unary::rdiv_scalar:
      return "rdiv";
    case Unary::pow_scalar:
      return "pow";
    case Unary::rpow_scalar:
      return "pow";
  }
  return "unary";
}

template <Unary op, typename T>
void run_forward(const Tensor& x, Tensor& out, const Scalars<T>& s) {
  ew::launch<T, T>(unary_name(op), UnaryOp<op, T>{s}, out, x);
}

template <Unary op, typename T>
void run_backward(const Tensor& g, const Tensor& saved, Tensor& dx, const Scalars<T>& s) {
  ew::launch<T, T, T>(unary_name(op), UnaryGrad<op, T>{s}, dx, g, saved);
}

}  // namespace

// --- unary: out (n) = f(x (n)) ---------------------------------------------------------------
void CudaBackend::unary(Unary op, const Tensor& x, Tensor& out, double a, double b) {
  detail::dispatch_floating(x.dtype(), unary_name(op), [&]<typename T>() {
    const Scalars<T> s{static_cast<T>(a), static_cast<T>(b), T(0), a == 2.0};
#define HEADGRAD_UNARY_CASE(name) \
  case Unary::name:               \
    return run_forward<Unary::name, T>(x, out, s);
    switch (op) {
      HEADGRAD_UNARY_CASE(neg)
      HEADGRAD_UNARY_CASE(exp)
      HEADGRAD_UNARY_CASE(log)
      HEADGRAD_UNARY_CASE(sqrt)
      HEADGRAD_UNARY_CASE(rsqrt)
      HEADGRAD_UNARY_CASE(abs)
      HEADGRAD_UNARY_CASE(tanh)
      HEADGRAD_UNARY_CASE(sigmoid)
      HEADGRAD_UNARY_CASE(relu)
      HEADGRAD_UNARY_CASE(gelu)
      HEADGRAD_UNARY_CASE(gelu_tanh)
      HEADGRAD_UNARY_CASE(clamp)
      HEADGRAD_UNARY_CASE(add_scalar)
      HEADGRAD_UNARY_CASE(rsub_scalar)
      HEADGRAD_UNARY_CASE(mul_scalar)
      HEADGRAD_UNARY_CASE(div_scalar)
      HEADGRAD_UNARY_CASE(rdiv_scalar)
      HEADGRAD_UNARY_CASE(pow_scalar)
      HEADGRAD_UNARY_CASE(rpow_scalar)
    }
#undef HEADGRAD_UNARY_CASE
    throw ValueError("unary: unknown op");
  });
}

// --- unary_backward: dx (n) = g (n) * f'(saved (n)) ------------------------------------------
void CudaBackend::unary_backward(Unary op, const Tensor& g, const Tensor& saved, Tensor& dx,
                                 double a, double b) {
  const std::string name = std::string(unary_name(op)) + " backward";
  detail::dispatch_floating(g.dtype(), name.c_str(), [&]<typename T>() {
    Scalars<T> s{static_cast<T>(a), static_cast<T>(b), T(0), false};
    if (op == Unary::pow_scalar) {
      s.flag = a == 0.0;
      s.b = (a - 1.0 == 2.0) ? T(1) : T(0);
      s.c = static_cast<T>(a - 1.0);
    } else if (op == Unary::rpow_scalar) {
      s.flag = a == 0.0;
      s.c = static_cast<T>(std::log(a));
    }
#define HEADGRAD_GRAD_CASE(name) \
  case Unary::name:              \
    return run_backward<Unary::name, T>(g, saved, dx, s);
    switch (op) {
      HEADGRAD_GRAD_CASE(exp)
      HEADGRAD_GRAD_CASE(log)
      HEADGRAD_GRAD_CASE(sqrt)
      HEADGRAD_GRAD_CASE(rsqrt)
      HEADGRAD_GRAD_CASE(abs)
      HEADGRAD_GRAD_CASE(tanh)
      HEADGRAD_GRAD_CASE(sigmoid)
      HEADGRAD_GRAD_CASE(relu)
      HEADGRAD_GRAD_CASE(gelu)
      HEADGRAD_GRAD_CASE(gelu_tanh)
      HEADGRAD_GRAD_CASE(clamp)
      HEADGRAD_GRAD_CASE(rdiv_scalar)
      HEADGRAD_GRAD_CASE(pow_scalar)
      HEADGRAD_GRAD_CASE(rpow_scalar)
      default:
        break;
    }
#undef HEADGRAD_GRAD_CASE
    throw ValueError(std::string("unary_backward: ") + unary_name(op) +
                     " has no backward kernel (its gradient is a simple op)");
  });
}

}  // namespace headgrad::cuda

namespace headgrad::cuda {

// y = f(x) and f'(x) (gelu, gelu_tanh): the forward kernel, then the backward kernel on a
// gradient of ones, in place (elementwise, so reading g[i] and writing dx[i] is safe).
void CudaBackend::unary_with_derivative(Unary op, const Tensor& x, Tensor& out,
                                        Tensor& derivative) {
  if (op != Unary::gelu && op != Unary::gelu_tanh)
    throw ValueError(std::string("unary_with_derivative: only gelu and gelu_tanh, got ") +
                     unary_name(op));
  unary(op, x, out, 0.0, 0.0);
  fill(derivative, 1.0);
  unary_backward(op, derivative, x, derivative, 0.0, 0.0);
}

}  // namespace headgrad::cuda
