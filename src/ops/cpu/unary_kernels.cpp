// The CPU's unary kernels (Kernels::unary, unary_backward, unary_with_derivative): each
// kind's element function. The math functions run through xsimd (parallel_simd_map) so exp,
// log, tanh and erf vectorize; the scalar variants of the binary ops are one plain loop;
// each derivative is one fused pass dx[i] = g[i] * f'(...). The formulas are the ops'
// (src/ops/elementwise_unary.cpp, src/ops/elementwise_binary.cpp).
#include <cmath>
#include <string>
#include <type_traits>

#include "core/dispatch.hpp"
#include "core/parallel.hpp"
#include "ops/cpu/broadcast.hpp"
#include "ops/cpu/cpu_kernels.hpp"
#include "ops/cpu/simd.hpp"

namespace headgrad::cpu {

using headgrad::detail::dispatch_floating;
using headgrad::detail::ptr;

namespace {

// --- gelu: y = x Phi(x) (exact) or x/2 (1 + tanh u), u = sqrt(2/pi) (x + 0.044715 x^3) ----
constexpr double kInvSqrt2 = 0.7071067811865476;
constexpr double kSqrt2OverPi = 0.7978845608028654;
constexpr double kInvSqrt2Pi = 0.3989422804014327;
constexpr double kCubic = 0.044715;

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

// gelu(v), setting deriv = gelu'(v) = Phi(v) + v phi(v), on scalars and batches.
constexpr auto gelu_exact = [](auto v, auto& deriv) {
  using T = std::remove_reference_t<decltype(deriv)>;
  T gauss;
  const T cdf = normal_cdf(v, gauss);
  deriv = cdf + v * gauss * T(kInvSqrt2Pi);
  return v * cdf;
};
// The tanh form; deriv = 1/2 (1 + tanh u) + v/2 (1 - tanh^2 u) sqrt(2/pi) (1 + 3c v^2).
constexpr auto gelu_tanh = [](auto v, auto& deriv) {
  using std::tanh;
  using T = std::remove_reference_t<decltype(deriv)>;
  const T t = tanh(T(kSqrt2OverPi) * (v + T(kCubic) * v * v * v));
  const T du = T(kSqrt2OverPi) * (T(1) + T(3 * kCubic) * v * v);
  deriv = T(0.5) * (T(1) + t) + T(0.5) * v * (T(1) - t * t) * du;
  return T(0.5) * v * (T(1) + t);
};

// y = f(x), f callable on xsimd batches and scalars, split across the thread pool.
template <typename T, typename F>
void simd_unary(const Tensor& x, Tensor& out, F f) {
  parallel_simd_map(ptr<T>(x), ptr<T>(out), x.numel(), f);
}

// y = f(x) in one plain loop (the scalar variants of the binary ops).
template <typename T, typename F>
void scalar_unary(const Tensor& x, Tensor& out, F f) {
  const T* px = ptr<T>(x);
  T* po = ptr<T>(out);
  const std::int64_t n = x.numel();  // numel() is not hoisted: po may alias the shape
  for (std::int64_t i = 0; i < n; ++i) po[i] = f(px[i]);
}

template <typename T>
void activation_unary(Unary op, const Tensor& x, Tensor& out, double a, double b);

// The math functions: neg, exp, log, sqrt, rsqrt, abs, tanh, sigmoid.
template <typename T>
void math_unary(Unary op, const Tensor& x, Tensor& out, double a, double b) {
  auto run = [&](auto f) { simd_unary<T>(x, out, f); };
  switch (op) {
    case Unary::neg:
      return run([](auto v) { return -v; });
    case Unary::exp:
      return run([](auto v) {
        using std::exp;
        return exp(v);
      });
    case Unary::log:
      return run([](auto v) {
        using std::log;
        return log(v);
      });
    case Unary::sqrt:
      return run([](auto v) {
        using std::sqrt;
        return sqrt(v);
      });
    case Unary::rsqrt:
      return run([](auto v) {
        using std::sqrt;
        return decltype(v)(1) / sqrt(v);
      });
    case Unary::abs:
      return run([](auto v) {
        using std::abs;
        return abs(v);
      });
    case Unary::tanh:
      return run([](auto v) {
        using std::tanh;
        return tanh(v);
      });
    case Unary::sigmoid:
      return run([](auto v) {
        using std::exp;
        using V = decltype(v);
        return V(1) / (V(1) + exp(-v));
      });
    default:
      return activation_unary<T>(op, x, out, a, b);
  }
}

// The piecewise and activation kinds: relu, gelu (both forms), clamp.
template <typename T>
void activation_unary(Unary op, const Tensor& x, Tensor& out, double a, double b) {
  auto run = [&](auto f) { simd_unary<T>(x, out, f); };
  switch (op) {
    case Unary::relu:
      // select, not max: max(NaN, 0) is 0 in SIMD lanes but NaN in the scalar tail; this
      // keeps NaN in both, as PyTorch
      return run([](auto v) {
        using V = decltype(v);
        if constexpr (std::is_floating_point_v<V>)
          return v < V(0) ? V(0) : v;
        else
          return xsimd::select(v < V(0), V(0), v);
      });
    case Unary::gelu:
      return run([](auto v) {
        decltype(v) unused;
        return gelu_exact(v, unused);
      });
    case Unary::gelu_tanh:
      return run([](auto v) {
        decltype(v) unused;
        return gelu_tanh(v, unused);
      });
    default:  // clamp: select, not min/max, so that NaN stays NaN in SIMD lanes and the tail
      return run([=](auto v) {
        using V = decltype(v);
        if constexpr (std::is_floating_point_v<V>) {
          return v < V(a) ? V(a) : (v > V(b) ? V(b) : v);
        } else {
          const V lo(static_cast<T>(a)), hi(static_cast<T>(b));
          return xsimd::select(v < lo, lo, xsimd::select(v > hi, hi, v));
        }
      });
  }
}

// The scalar variants: s is the op's scalar, converted to T.
template <typename T>
void scalar_variant(Unary op, const Tensor& x, Tensor& out, double s) {
  auto run = [&](auto f) { scalar_unary<T>(x, out, f); };
  switch (op) {
    case Unary::add_scalar:
      return run([s](T v) { return v + static_cast<T>(s); });
    case Unary::rsub_scalar:
      return run([s](T v) { return static_cast<T>(s) - v; });
    case Unary::mul_scalar:
      return run([s](T v) { return v * static_cast<T>(s); });
    case Unary::div_scalar:
      return run([s](T v) { return v / static_cast<T>(s); });
    case Unary::rdiv_scalar:
      return run([s](T v) { return static_cast<T>(s) / v; });
    case Unary::pow_scalar:
      if (s == 2.0) return run([](T v) { return v * v; });
      return run([s](T v) { return std::pow(v, static_cast<T>(s)); });
    default:  // rpow_scalar
      return run([s](T v) { return std::pow(static_cast<T>(s), v); });
  }
}

bool is_scalar_variant(Unary op) {
  return op == Unary::add_scalar || op == Unary::rsub_scalar || op == Unary::mul_scalar ||
         op == Unary::div_scalar || op == Unary::rdiv_scalar || op == Unary::pow_scalar ||
         op == Unary::rpow_scalar;
}

// dx[i] = d(g[i], v[i]), v the saved input or output.
template <typename T, typename F>
void derivative_map(const Tensor& g, const Tensor& v, Tensor& dx, F d) {
  const T* pg = ptr<T>(g);
  const T* pv = ptr<T>(v);
  T* out = ptr<T>(dx);
  headgrad::detail::parallel_for_aligned(g.numel(), kRunAlign, kParallelElements,
                                         [&](std::int64_t begin, std::int64_t end) {
                                           for (std::int64_t i = begin; i < end; ++i)
                                             out[i] = d(pg[i], pv[i]);
                                         });
}

template <typename T>
void unary_derivative(Unary op, const Tensor& g, const Tensor& v, Tensor& dx, double a, double b) {
  auto run = [&](auto d) { derivative_map<T>(g, v, dx, d); };
  switch (op) {
    case Unary::exp:  // v = y
      return run([](T gi, T y) { return gi * y; });
    case Unary::log:  // v = x
      return run([](T gi, T x) { return gi / x; });
    case Unary::sqrt:  // v = y
      return run([](T gi, T y) { return gi / (y + y); });
    case Unary::rsqrt:  // v = y
      return run([](T gi, T y) { return gi * y * y * y * T(-0.5); });
    case Unary::abs:  // v = x
      return run([](T gi, T x) { return x > T(0) ? gi : (x < T(0) ? -gi : T(0)); });
    case Unary::tanh:  // v = y
      return run([](T gi, T y) { return gi * (T(1) - y * y); });
    case Unary::sigmoid:  // v = y
      return run([](T gi, T y) { return gi * y * (T(1) - y); });
    case Unary::relu:  // v = y
      return run([](T gi, T y) { return y > T(0) ? gi : T(0); });
    case Unary::clamp:  // v = x
      return run([=](T gi, T x) { return (x >= T(a) && x <= T(b)) ? gi : T(0); });
    default:
      throw Error("unary_backward: no CPU derivative kernel for kind " +
                  std::to_string(static_cast<int>(op)) +
                  " (its op composes the gradient, or saves the derivative: "
                  "unary_with_derivative)");
  }
}

}  // namespace

void CpuKernels::unary(Unary op, const Tensor& x, Tensor& out, double a, double b) {
  dispatch_floating(x.dtype(), "unary", [&]<typename T>() {
    if (is_scalar_variant(op))
      scalar_variant<T>(op, x, out, a);
    else
      math_unary<T>(op, x, out, a, b);
  });
}

void CpuKernels::unary_backward(Unary op, const Tensor& g, const Tensor& saved, Tensor& dx,
                                double a, double b) {
  dispatch_floating(g.dtype(), "backward",
                    [&]<typename T>() { unary_derivative<T>(op, g, saved, dx, a, b); });
}

// y and y' in one vectorized pass, in pieces starting at multiples of 64 per thread (the
// same bits at every thread count).
void CpuKernels::unary_with_derivative(Unary op, const Tensor& x, Tensor& out, Tensor& derivative) {
  if (op != Unary::gelu && op != Unary::gelu_tanh)
    throw Error("unary_with_derivative: only gelu and gelu_tanh, got kind " +
                std::to_string(static_cast<int>(op)));
  dispatch_floating(x.dtype(), "gelu", [&]<typename T>() {
    using batch = xsimd::batch<T>;
    constexpr std::int64_t w = static_cast<std::int64_t>(batch::size);
    const T* px = ptr<T>(x);
    T* py = ptr<T>(out);
    T* pd = ptr<T>(derivative);
    auto pass = [&](auto f) {
      headgrad::detail::parallel_for_aligned(
          x.numel(), 64, 16384, [&](std::int64_t begin, std::int64_t end) {
            std::int64_t i = begin;
            for (; i + w <= end; i += w) {
              batch d;
              f(batch::load_unaligned(px + i), d).store_unaligned(py + i);
              d.store_unaligned(pd + i);
            }
            for (; i < end; ++i) py[i] = f(px[i], pd[i]);
          });
    };
    if (op == Unary::gelu)
      pass(gelu_exact);
    else
      pass(gelu_tanh);
  });
}

}  // namespace headgrad::cpu
