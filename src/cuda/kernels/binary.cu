// Broadcasting binary kernels: arithmetic (float32/float64 in and out) and comparisons (any
// dtype in, bool out). out = f(x, y) with x and y broadcast to out's shape; the launcher of
// elementwise.cuh picks the contiguous / scalar / strided layout. The formulas are the CPU's
// (ops/elementwise_binary.cpp), NaN conventions included.
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "core/dispatch.hpp"
#include "cuda/backend.hpp"
#include "cuda/common.cuh"
#include "cuda/kernels/elementwise.cuh"
#include "cuda/kernels/math.cuh"

namespace headgrad::cuda {

namespace {

constexpr bool is_comparison(Binary op) {
  return op == Binary::eq || op == Binary::ne || op == Binary::lt || op == Binary::le ||
         op == Binary::gt || op == Binary::ge;
}

// out = f(x, y) for op; T is the inputs' type, the result bool for comparisons.
template <Binary op, typename T>
struct BinaryOp {
  using Out = std::conditional_t<is_comparison(op), bool, T>;
  T alpha;        // add's scale
  bool unscaled;  // add: alpha == 1, computed as exactly x + y

  __device__ Out operator()(T x, T y) const {
    if constexpr (op == Binary::add) {
      return unscaled ? x + y : x + alpha * y;
    } else if constexpr (op == Binary::mul) {
      return x * y;
    } else if constexpr (op == Binary::div) {
      return x / y;
    } else if constexpr (op == Binary::pow) {
      return math::pow(x, y);
    } else if constexpr (op == Binary::maximum) {  // NaN if either is NaN
      return x > y || x != x ? x : y;
    } else if constexpr (op == Binary::minimum) {
      return x < y || x != x ? x : y;
    } else if constexpr (op == Binary::pow_grad_base) {  // d(x^y)/dx, 0 where y == 0
      return y == T(0) ? T(0) : y * math::pow(x, y - T(1));
    } else if constexpr (op == Binary::pow_grad_exponent) {  // d(x^y)/dy, 0 where x == 0, y >= 0
      return (x == T(0) && y >= T(0)) ? T(0) : math::pow(x, y) * math::log(x);
    } else if constexpr (op == Binary::max_weight) {  // maximum's gradient share of x
      return x == y ? T(0.5) : (x > y ? T(1) : T(0));
    } else if constexpr (op == Binary::min_weight) {
      return x == y ? T(0.5) : (x < y ? T(1) : T(0));
    } else if constexpr (op == Binary::eq) {
      return x == y;
    } else if constexpr (op == Binary::ne) {
      return x != y;
    } else if constexpr (op == Binary::lt) {
      return x < y;
    } else if constexpr (op == Binary::le) {
      return x <= y;
    } else if constexpr (op == Binary::gt) {
      return x > y;
    } else {
      static_assert(op == Binary::ge);
      return x >= y;
    }
  }
};

const char* binary_name(Binary op) {
  switch (op) {
    case Binary::add:
      return "add";
    case Binary::mul:
      return "mul";
    case Binary::div:
      return "div";
    case Binary::pow:
      return "pow";
    case Binary::maximum:
      return "maximum";
    case Binary::minimum:
      return "minimum";
    case Binary::pow_grad_base:
      return "pow backward";
    case Binary::pow_grad_exponent:
      return "pow backward";
    case Binary::max_weight:
      return "maximum backward";
    case Binary::min_weight:
      return "minimum backward";
    case Binary::eq:
      return "eq";
    case Binary::ne:
      return "ne";
    case Binary::lt:
      return "lt";
    case Binary::le:
      return "le";
    case Binary::gt:
      return "gt";
    case Binary::ge:
      return "ge";
  }
  return "binary";
}

template <Binary op, typename T>
void run(const Tensor& x, const Tensor& y, Tensor& out, double alpha) {
  using F = BinaryOp<op, T>;
  ew::launch<typename F::Out, T, T>(binary_name(op), F{static_cast<T>(alpha), alpha == 1.0}, out, x,
                                    y);
}

template <typename T>
void run_arithmetic(Binary op, const Tensor& x, const Tensor& y, Tensor& out, double alpha) {
  switch (op) {
    case Binary::add:
      return run<Binary::add, T>(x, y, out, alpha);
    case Binary::mul:
      return run<Binary::mul, T>(x, y, out, alpha);
    case Binary::div:
      return run<Binary::div, T>(x, y, out, alpha);
    case Binary::pow:
      return run<Binary::pow, T>(x, y, out, alpha);
    case Binary::maximum:
      return run<Binary::maximum, T>(x, y, out, alpha);
    case Binary::minimum:
      return run<Binary::minimum, T>(x, y, out, alpha);
    case Binary::pow_grad_base:
      return run<Binary::pow_grad_base, T>(x, y, out, alpha);
    case Binary::pow_grad_exponent:
      return run<Binary::pow_grad_exponent, T>(x, y, out, alpha);
    case Binary::max_weight:
      return run<Binary::max_weight, T>(x, y, out, alpha);
    case Binary::min_weight:
      return run<Binary::min_weight, T>(x, y, out, alpha);
    default:
      break;
  }
  throw ValueError("binary: unknown op");
}

template <typename T>
void run_comparison(Binary op, const Tensor& x, const Tensor& y, Tensor& out) {
  switch (op) {
    case Binary::eq:
      return run<Binary::eq, T>(x, y, out, 1.0);
    case Binary::ne:
      return run<Binary::ne, T>(x, y, out, 1.0);
    case Binary::lt:
      return run<Binary::lt, T>(x, y, out, 1.0);
    case Binary::le:
      return run<Binary::le, T>(x, y, out, 1.0);
    case Binary::gt:
      return run<Binary::gt, T>(x, y, out, 1.0);
    case Binary::ge:
      return run<Binary::ge, T>(x, y, out, 1.0);
    default:
      break;
  }
  throw ValueError("binary: unknown comparison");
}

}  // namespace

// --- binary: out (broadcast shape) = f(x, y) -------------------------------------------------
// Arithmetic: x, y, out of one floating dtype. Comparisons: x, y of one (any) dtype, out bool.
// out may be x itself (in-place add_): each element is read before its position is written.
void CudaBackend::binary(Binary op, const Tensor& x, const Tensor& y, Tensor& out, double alpha) {
  if (x.dtype() != y.dtype())
    throw DTypeError(std::string(binary_name(op)) + ": operands of different dtypes (" +
                     to_string(x.dtype()) + " and " + to_string(y.dtype()) + ")");
  if (is_comparison(op)) {
    if (out.dtype() != DType::boolean)
      throw DTypeError(std::string(binary_name(op)) + ": the result must be bool, got " +
                       to_string(out.dtype()));
    detail::dispatch_all(x.dtype(), [&]<typename T>() { run_comparison<T>(op, x, y, out); });
    return;
  }
  detail::dispatch_floating(x.dtype(), binary_name(op),
                            [&]<typename T>() { run_arithmetic<T>(op, x, y, out, alpha); });
}

}  // namespace headgrad::cuda
