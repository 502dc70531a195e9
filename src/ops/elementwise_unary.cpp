// Unary elementwise ops. Forward maps run through xsimd (simd_map) so exp/log/tanh/erf
// vectorize; each backward is one fused pass dx[i] = dy[i] * f'(...) on raw pointers.
#include <algorithm>
#include <cmath>
#include <numbers>
#include <type_traits>
#include <utility>

#include "core/cuda_backend.hpp"
#include "core/dispatch.hpp"
#include "core/parallel.hpp"
#include "headgrad/autograd/function.hpp"
#include "headgrad/ops/elementwise.hpp"
#include "ops/cpu/elementwise_kernels.hpp"
#include "ops/cpu/simd.hpp"

namespace headgrad {

using autograd::BackwardContext;
using Grads = std::vector<Tensor>;
using detail::dispatch_floating;

namespace {

using cuda::Unary;

// out = f(x), f callable on xsimd batches and on scalars; on a GPU the kernel `kind`.
template <typename F>
Tensor unary_forward(const char* op, Unary kind, const Tensor& x, F f, double a = 0.0,
                     double b = 0.0) {
  detail::check_float_op(op, x);
  Tensor out = detail::new_tensor(x.shape(), x.dtype(), x.device());
  if (x.device().is_cuda()) {
    cuda::backend().unary(kind, x, out, a, b);
    return out;
  }
  dispatch_floating(x.dtype(), op, [&]<typename T>() {
    cpu::parallel_simd_map(detail::ptr<T>(x), detail::ptr<T>(out), x.numel(), f);
  });
  return out;
}

// dx[i] = d(g[i], v[i]) where v is the saved input or output; on a GPU the backward
// kernel of `kind` (with the op's scalars a, b).
template <typename F>
Tensor grad_map(Unary kind, const Tensor& g, const Tensor& v, F d, double a = 0.0, double b = 0.0) {
  if (g.device().is_cuda()) {
    Tensor dx = detail::new_tensor(g.shape(), g.dtype(), g.device());
    cuda::backend().unary_backward(kind, g, v, dx, a, b);
    return dx;
  }
  return dispatch_floating(g.dtype(), "backward", [&]<typename T>() {
    return cpu::same_shape_map<T>(g, v, [&](T gi, T vi) { return d(gi, vi); });
  });
}

// dx[i] = d(g[i], v[i]) vectorized: d must be callable on xsimd batches and on scalars
// (for derivatives that need exp, erf or tanh).
template <typename F>
Tensor simd_grad_map(const Tensor& g, const Tensor& v, F d) {
  Tensor out = detail::new_tensor(g.shape(), g.dtype(), g.device());
  dispatch_floating(g.dtype(), "backward", [&]<typename T>() {
    cpu::parallel_simd_map2(detail::ptr<T>(g), detail::ptr<T>(v), detail::ptr<T>(out), g.numel(),
                            d);
  });
  return out;
}

}  // namespace

// neg: y = -x.  dx = -dy
Tensor neg(const Tensor& x) {
  Tensor out = unary_forward("neg", Unary::neg, x, [](auto v) { return -v; });
  autograd::record("neg", {x}, {&out}, {},
                   [](const Grads& g, const BackwardContext&) { return Grads{neg(g[0])}; });
  return out;
}

// exp: y = e^x.  dx = dy * y
Tensor exp(const Tensor& x) {
  Tensor out = unary_forward("exp", Unary::exp, x, [](auto v) {
    using std::exp;
    return exp(v);
  });
  autograd::record("exp", {x}, {&out}, {out}, [](const Grads& g, const BackwardContext& ctx) {
    return Grads{grad_map(Unary::exp, g[0], ctx.saved(0), [](auto gi, auto y) { return gi * y; })};
  });
  return out;
}

// log: y = ln x.  dx = dy / x
Tensor log(const Tensor& x) {
  Tensor out = unary_forward("log", Unary::log, x, [](auto v) {
    using std::log;
    return log(v);
  });
  autograd::record("log", {x}, {&out}, {x}, [](const Grads& g, const BackwardContext& ctx) {
    return Grads{grad_map(Unary::log, g[0], ctx.saved(0), [](auto gi, auto v) { return gi / v; })};
  });
  return out;
}

// sqrt: y = x^(1/2).  dx = dy / (2y)
Tensor sqrt(const Tensor& x) {
  Tensor out = unary_forward("sqrt", Unary::sqrt, x, [](auto v) {
    using std::sqrt;
    return sqrt(v);
  });
  autograd::record("sqrt", {x}, {&out}, {out}, [](const Grads& g, const BackwardContext& ctx) {
    return Grads{
        grad_map(Unary::sqrt, g[0], ctx.saved(0), [](auto gi, auto y) { return gi / (y + y); })};
  });
  return out;
}

// rsqrt: y = x^(-1/2).  dx = -dy * y^3 / 2
Tensor rsqrt(const Tensor& x) {
  Tensor out = unary_forward("rsqrt", Unary::rsqrt, x, [](auto v) {
    using std::sqrt;
    return decltype(v)(1) / sqrt(v);
  });
  autograd::record("rsqrt", {x}, {&out}, {out}, [](const Grads& g, const BackwardContext& ctx) {
    return Grads{grad_map(Unary::rsqrt, g[0], ctx.saved(0),
                          [](auto gi, auto y) { return gi * y * y * y * decltype(y)(-0.5); })};
  });
  return out;
}

// abs: y = |x|.  dx = dy * sign(x) (0 at 0)
Tensor abs(const Tensor& x) {
  Tensor out = unary_forward("abs", Unary::abs, x, [](auto v) {
    using std::abs;
    return abs(v);
  });
  autograd::record("abs", {x}, {&out}, {x}, [](const Grads& g, const BackwardContext& ctx) {
    return Grads{grad_map(Unary::abs, g[0], ctx.saved(0), [](auto gi, auto v) {
      using T = decltype(v);
      return v > T(0) ? gi : (v < T(0) ? -gi : T(0));
    })};
  });
  return out;
}

// tanh: y = tanh x.  dx = dy * (1 - y^2)
Tensor tanh(const Tensor& x) {
  Tensor out = unary_forward("tanh", Unary::tanh, x, [](auto v) {
    using std::tanh;
    return tanh(v);
  });
  autograd::record("tanh", {x}, {&out}, {out}, [](const Grads& g, const BackwardContext& ctx) {
    return Grads{grad_map(Unary::tanh, g[0], ctx.saved(0),
                          [](auto gi, auto y) { return gi * (decltype(y)(1) - y * y); })};
  });
  return out;
}

// sigmoid: y = 1 / (1 + e^-x).  dx = dy * y * (1 - y)
Tensor sigmoid(const Tensor& x) {
  Tensor out = unary_forward("sigmoid", Unary::sigmoid, x, [](auto v) {
    using std::exp;
    using T = decltype(v);
    return T(1) / (T(1) + exp(-v));
  });
  autograd::record("sigmoid", {x}, {&out}, {out}, [](const Grads& g, const BackwardContext& ctx) {
    return Grads{grad_map(Unary::sigmoid, g[0], ctx.saved(0),
                          [](auto gi, auto y) { return gi * y * (decltype(y)(1) - y); })};
  });
  return out;
}

// relu: y = max(x, 0).  dx = dy * [x > 0]  (0 at 0, as PyTorch)
Tensor relu(const Tensor& x) {
  // select, not max: max(NaN, 0) is 0 in SIMD lanes but NaN in the scalar tail; this
  // keeps NaN in both, as PyTorch
  Tensor out = unary_forward("relu", Unary::relu, x, [](auto v) {
    using V = decltype(v);
    if constexpr (std::is_floating_point_v<V>)
      return v < V(0) ? V(0) : v;
    else
      return xsimd::select(v < V(0), V(0), v);
  });
  autograd::record("relu", {x}, {&out}, {out}, [](const Grads& g, const BackwardContext& ctx) {
    return Grads{grad_map(Unary::relu, g[0], ctx.saved(0), [](auto gi, auto y) {
      return y > decltype(y)(0) ? gi : decltype(y)(0);
    })};
  });
  return out;
}

// gelu, exact: y = x * Phi(x) = x/2 * (1 + erf(x/sqrt2)).
//   dx = dy * (Phi(x) + x * phi(x)),  phi(x) = exp(-x^2/2) / sqrt(2 pi)
// gelu, tanh form: y = x/2 * (1 + tanh(u)), u = sqrt(2/pi) * (x + 0.044715 x^3).
//   dx = dy * (1/2 (1 + tanh u) + x/2 (1 - tanh^2 u) sqrt(2/pi) (1 + 3*0.044715 x^2))
constexpr double kInvSqrt2 = 0.7071067811865476;
constexpr double kSqrt2OverPi = 0.7978845608028654;
constexpr double kInvSqrt2Pi = 0.3989422804014327;
constexpr double kCubic = 0.044715;

namespace {

template <typename V>
struct element_of {
  using type = V;
};
template <typename T, typename A>
struct element_of<xsimd::batch<T, A>> {
  using type = T;
};

// Phi(x), the standard normal CDF, and exp(-x^2/2) (returned in `gauss`), on scalars or
// xsimd batches. float32 uses Abramowitz & Stegun 7.1.26 for erfc (|error| <= 1.5e-7,
// the approximation PyTorch's vectorized erf uses too), which shares its one exp with the
// density; with z = |x|/sqrt2 and t = 1/(1 + p z):
//   r = 0.5 erfc(z) = 0.5 t (a1 + t (a2 + t (a3 + t (a4 + t a5)))) exp(-z^2)
//   Phi(x) = r for x < 0 (no cancellation in the left tail), 1 - r otherwise.
// float64 uses erf, accurate to the last bits (gradcheck runs in float64).
template <typename V>
V normal_cdf(V x, V& gauss) {
  using T = typename element_of<V>::type;
  using std::abs;
  using std::erf;
  using std::exp;
  gauss = exp(V(T(-0.5)) * x * x);
  if constexpr (std::is_same_v<T, double>) {
    return V(0.5) * (V(1) + erf(x * V(kInvSqrt2)));
  } else {
    const V t = V(1) / (V(1) + V(T(0.3275911 * kInvSqrt2)) * abs(x));
    const V poly =
        t * (V(T(0.254829592)) +
             t * (V(T(-0.284496736)) +
                  t * (V(T(1.421413741)) + t * (V(T(-1.453152027)) + t * V(T(1.061405429))))));
    const V r = V(T(0.5)) * poly * gauss;
    if constexpr (std::is_floating_point_v<V>)
      return x < T(0) ? r : T(1) - r;
    else
      return xsimd::select(x < V(T(0)), r, V(T(1)) - r);
  }
}

}  // namespace

// y = f(x) and its derivative f'(x) in one vectorized pass; f(v, deriv) returns f(v) and
// sets deriv = f'(v), on scalars and xsimd batches alike.
template <typename F>
std::pair<Tensor, Tensor> value_and_derivative(const char* op, const Tensor& x, F f) {
  detail::check_float_op(op, x);
  Tensor y = detail::new_tensor(x.shape(), x.dtype(), x.device());
  Tensor dydx = detail::new_tensor(x.shape(), x.dtype(), x.device());
  dispatch_floating(x.dtype(), op, [&]<typename T>() {
    using batch = xsimd::batch<T>;
    constexpr std::int64_t w = static_cast<std::int64_t>(batch::size);
    const T* px = detail::ptr<T>(x);
    T* py = detail::ptr<T>(y);
    T* pd = detail::ptr<T>(dydx);
    const std::int64_t n = x.numel();
    // Pieces starting at multiples of 64 per thread (the same bits at every thread count).
    detail::parallel_for_aligned(n, 64, 16384, [&](std::int64_t begin, std::int64_t end) {
      std::int64_t i = begin;
      for (; i + w <= end; i += w) {
        batch d;
        f(batch::load_unaligned(px + i), d).store_unaligned(py + i);
        d.store_unaligned(pd + i);
      }
      for (; i < end; ++i) py[i] = f(px[i], pd[i]);
    });
  });
  return {y, dydx};
}

// When x requires grad, the forward also computes gelu'(x) (a few FMAs on top of the
// value) and saves it instead of x, so the backward is dx = dy * gelu'(x), a streaming
// multiply with no exp, erf or tanh, and x need not be kept.
Tensor gelu(const Tensor& x, GeluApproximation approximate) {
  const bool exact = approximate == GeluApproximation::none;
  auto exact_fn = [](auto v, auto& deriv) {
    using T = std::remove_reference_t<decltype(deriv)>;
    T gauss;
    const T cdf = normal_cdf(v, gauss);
    deriv = cdf + v * gauss * T(kInvSqrt2Pi);
    return v * cdf;
  };
  auto tanh_fn = [](auto v, auto& deriv) {
    using std::tanh;
    using T = std::remove_reference_t<decltype(deriv)>;
    const T t = tanh(T(kSqrt2OverPi) * (v + T(kCubic) * v * v * v));
    const T du = T(kSqrt2OverPi) * (T(1) + T(3 * kCubic) * v * v);
    deriv = T(0.5) * (T(1) + t) + T(0.5) * v * (T(1) - t * t) * du;
    return T(0.5) * v * (T(1) + t);
  };
  if (!autograd::any_requires_grad({x})) {
    auto value_only = [&](auto f) {
      return unary_forward("gelu", exact ? Unary::gelu : Unary::gelu_tanh, x, [f](auto v) {
        decltype(v) unused;
        return f(v, unused);
      });
    };
    return exact ? value_only(exact_fn) : value_only(tanh_fn);
  }
  if (x.device().is_cuda()) {  // the GPU recomputes gelu'(x) from x in the backward
    const Unary kind = exact ? Unary::gelu : Unary::gelu_tanh;
    Tensor out = unary_forward("gelu", kind, x, [](auto v) { return v; });
    autograd::record("gelu", {x}, {&out}, {x}, [kind](const Grads& g, const BackwardContext& ctx) {
      return Grads{grad_map(kind, g[0], ctx.saved(0), [](auto gi, auto) {
        return gi;  // never called on the GPU
      })};
    });
    return out;
  }
  auto [out, derivative] =
      exact ? value_and_derivative("gelu", x, exact_fn) : value_and_derivative("gelu", x, tanh_fn);
  autograd::record(
      "gelu", {x}, {&out}, {derivative}, [](const Grads& g, const BackwardContext& ctx) {
        return Grads{simd_grad_map(g[0], ctx.saved(0), [](auto gi, auto d) { return gi * d; })};
      });
  return out;
}

// clamp: y = min(max(x, lo), hi).  dx = dy * [lo <= x <= hi]
Tensor clamp(const Tensor& x, double min_value, double max_value) {
  if (min_value > max_value)
    throw ValueError("clamp: min " + std::to_string(min_value) + " is greater than max " +
                     std::to_string(max_value));
  // select, not min/max, so that NaN stays NaN in SIMD lanes and the tail alike
  Tensor out = unary_forward(
      "clamp", Unary::clamp, x,
      [=](auto v) {
        using V = decltype(v);
        if constexpr (std::is_floating_point_v<V>) {
          return v < V(min_value) ? V(min_value) : (v > V(max_value) ? V(max_value) : v);
        } else {
          using T = typename V::value_type;
          const V lo(static_cast<T>(min_value)), hi(static_cast<T>(max_value));
          return xsimd::select(v < lo, lo, xsimd::select(v > hi, hi, v));
        }
      },
      min_value, max_value);
  autograd::record("clamp", {x}, {&out}, {x}, [=](const Grads& g, const BackwardContext& ctx) {
    return Grads{grad_map(
        Unary::clamp, g[0], ctx.saved(0),
        [=](auto gi, auto v) {
          using T = decltype(v);
          return (v >= T(min_value) && v <= T(max_value)) ? gi : T(0);
        },
        min_value, max_value)};
  });
  return out;
}

}  // namespace headgrad
