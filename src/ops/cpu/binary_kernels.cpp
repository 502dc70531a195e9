// The CPU's broadcasting binary kernels (Kernels::binary, where, logical_not): each kind's
// element function, run by binary_map over the broadcast of the operands. The formulas are
// the ops' (src/ops/elementwise_binary.cpp), where the gradients are composed.
#include <array>
#include <cmath>

#include "core/dispatch.hpp"
#include "ops/cpu/broadcast.hpp"
#include "ops/cpu/cpu_kernels.hpp"
#include "ops/cpu/elementwise_kernels.hpp"

namespace headgrad::cpu {

using headgrad::detail::dispatch_all;
using headgrad::detail::dispatch_floating;
using headgrad::detail::ptr;

namespace {

bool is_comparison(Binary op) {
  return op == Binary::eq || op == Binary::ne || op == Binary::lt || op == Binary::le ||
         op == Binary::gt || op == Binary::ge;
}

// out (bool) = x op y, for any dtype of x and y.
void compare(Binary op, const Tensor& x, const Tensor& y, Tensor& out) {
  dispatch_all(x.dtype(), [&]<typename T>() {
    auto run = [&](auto f) { binary_map<T, bool>(x, y, out, f); };
    switch (op) {
      case Binary::eq:
        return run([](T a, T b) { return a == b; });
      case Binary::ne:
        return run([](T a, T b) { return a != b; });
      case Binary::lt:
        return run([](T a, T b) { return a < b; });
      case Binary::le:
        return run([](T a, T b) { return a <= b; });
      case Binary::gt:
        return run([](T a, T b) { return a > b; });
      default:
        return run([](T a, T b) { return a >= b; });
    }
  });
}

// out = f(x, y) for the arithmetic kinds, floating operands.
template <typename T>
void arithmetic(Binary op, const Tensor& x, const Tensor& y, Tensor& out, double alpha) {
  auto run = [&](auto f) { binary_map<T, T>(x, y, out, f); };
  switch (op) {
    case Binary::add:
      if (alpha == 1.0) return run([](T a, T b) { return a + b; });
      return run([s = static_cast<T>(alpha)](T a, T b) { return a + s * b; });
    case Binary::mul:
      return run([](T a, T b) { return a * b; });
    case Binary::div:
      return run([](T a, T b) { return a / b; });
    case Binary::pow:
      return run([](T a, T b) { return std::pow(a, b); });
    case Binary::maximum:  // NaN in either operand gives NaN (a != a)
      return run([](T a, T b) { return a > b || a != a ? a : b; });
    case Binary::minimum:
      return run([](T a, T b) { return a < b || a != a ? a : b; });
    case Binary::pow_grad_base:
      return run([](T a, T b) { return b == 0 ? T(0) : b * std::pow(a, b - 1); });
    case Binary::pow_grad_exponent:
      return run([](T a, T b) { return (a == 0 && b >= 0) ? T(0) : std::pow(a, b) * std::log(a); });
    case Binary::max_weight:
      return run([](T a, T b) { return a == b ? T(0.5) : (a > b ? T(1) : T(0)); });
    case Binary::min_weight:
      return run([](T a, T b) { return a == b ? T(0.5) : (a < b ? T(1) : T(0)); });
    default:
      throw Error("binary: kind " + std::to_string(static_cast<int>(op)) + " is a comparison");
  }
}

}  // namespace

void CpuKernels::binary(Binary op, const Tensor& x, const Tensor& y, Tensor& out, double alpha) {
  if (is_comparison(op)) return compare(op, x, y, out);
  dispatch_floating(x.dtype(), "binary",
                    [&]<typename T>() { arithmetic<T>(op, x, y, out, alpha); });
}

void CpuKernels::where(const Tensor& cond, const Tensor& x, const Tensor& y, Tensor& out) {
  dispatch_floating(out.dtype(), "where", [&]<typename T>() {
    const bool* pc = ptr<bool>(cond);
    const T* pa = ptr<T>(x);
    const T* pb = ptr<T>(y);
    T* po = ptr<T>(out);
    broadcast_loop<3>(out.shape(), {cond.shape(), x.shape(), y.shape()},
                      [&](std::int64_t o, const std::array<std::int64_t, 3>& off, std::int64_t n,
                          const std::array<std::int64_t, 3>& st) {
                        for (std::int64_t i = 0; i < n; ++i)
                          po[o + i] = pc[off[0] + i * st[0]] ? pa[off[1] + i * st[1]]
                                                             : pb[off[2] + i * st[2]];
                      });
  });
}

void CpuKernels::logical_not(const Tensor& x, Tensor& out) {
  const bool* p = ptr<bool>(x);
  bool* o = ptr<bool>(out);
  const std::int64_t n = x.numel();
  for (std::int64_t i = 0; i < n; ++i) o[i] = !p[i];
}

}  // namespace headgrad::cpu
