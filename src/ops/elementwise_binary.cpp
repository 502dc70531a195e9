// Broadcasting binary ops, their scalar variants, comparisons and where.
// Every gradient of a broadcast operand is reduced back to its shape with sum_to.
#include <cmath>

#include "core/dispatch.hpp"
#include "core/kernels.hpp"
#include "headgrad/autograd/function.hpp"
#include "headgrad/autograd/grad_mode.hpp"
#include "headgrad/ops/elementwise.hpp"
#include "headgrad/ops/reduce.hpp"

namespace headgrad {

using autograd::BackwardContext;
using Grads = std::vector<Tensor>;

namespace {

// The broadcast shape of a and b; the ShapeError also describes both operands (names
// included, e.g. "'queries' (2,3) float32").
Shape broadcast_operands(const char* op, const Tensor& a, const Tensor& b) {
  try {
    return broadcast_shapes(a.shape(), b.shape(), op);
  } catch (const ShapeError& e) {
    throw ShapeError(std::string(e.what()) + " (operands " + detail::describe(a) + " and " +
                     detail::describe(b) + ")");
  }
}

// Allocates the broadcast result of a float binary op and runs the kernel `kind` of the
// operands' device (with add's scale alpha).
Tensor binary_forward(const char* op, Binary kind, const Tensor& a, const Tensor& b,
                      double alpha = 1.0) {
  detail::check_float_op(op, a, b);
  Tensor out = detail::new_tensor(broadcast_operands(op, a, b), a.dtype(), a.device());
  kernels_for(a.device(), op).binary(kind, a, b, out, alpha);
  return out;
}

// Same for a tensor and a scalar s (converted to x's dtype): the unary kernel `kind`.
Tensor scalar_forward(const char* op, Unary kind, double s, const Tensor& x) {
  detail::check_float_op(op, x);
  Tensor out = detail::new_tensor(x.shape(), x.dtype(), x.device());
  kernels_for(x.device(), op).unary(kind, x, out, s, 0.0);
  return out;
}

}  // namespace

// add: out = a + alpha*b (broadcast).  da = sum_to(g, a), db = sum_to(alpha*g, b)
// `op` is the name errors and the graph use ("sub" calls this with -alpha).
namespace {
Tensor add_scaled(const char* op, const Tensor& a, const Tensor& b, double alpha) {
  Tensor out = binary_forward(op, Binary::add, a, b, alpha);
  autograd::record(
      op, {a, b}, {&out}, {},
      [sa = a.shape(), sb = b.shape(), alpha](const Grads& g, const BackwardContext& ctx) {
        return Grads{
            ctx.needs_grad(0) ? sum_to(g[0], sa) : Tensor(),
            ctx.needs_grad(1) ? sum_to(alpha == 1.0 ? g[0] : mul(g[0], alpha), sb) : Tensor()};
      });
  return out;
}
}  // namespace

Tensor add(const Tensor& a, const Tensor& b, double alpha) {
  return add_scaled("add", a, b, alpha);
}

// sub: out = a - alpha*b, i.e. add with -alpha.
Tensor sub(const Tensor& a, const Tensor& b, double alpha) {
  return add_scaled("sub", a, b, -alpha);
}

// mul: out = a*b.  da = sum_to(g*b, a), db = sum_to(g*a, b)
Tensor mul(const Tensor& a, const Tensor& b) {
  Tensor out = binary_forward("mul", Binary::mul, a, b);
  autograd::record("mul", {a, b}, {&out}, {a, b},
                   [sa = a.shape(), sb = b.shape()](const Grads& g, const BackwardContext& ctx) {
                     return Grads{
                         ctx.needs_grad(0) ? sum_to(mul(g[0], ctx.saved(1)), sa) : Tensor(),
                         ctx.needs_grad(1) ? sum_to(mul(g[0], ctx.saved(0)), sb) : Tensor()};
                   });
  return out;
}

// div: out = a/b.  da = sum_to(g/b, a), db = sum_to(-g*((a/b)/b), b)
// db divides twice, as PyTorch does, rather than by b*b: b*b underflows to 0 for
// |b| < ~1e-19 in float32 (x/x at 1e-30 would get -inf instead of 0).
Tensor div(const Tensor& a, const Tensor& b) {
  Tensor out = binary_forward("div", Binary::div, a, b);
  autograd::record(
      "div", {a, b}, {&out}, {a, b},
      [sa = a.shape(), sb = b.shape()](const Grads& g, const BackwardContext& ctx) {
        const Tensor& x = ctx.saved(0);
        const Tensor& y = ctx.saved(1);
        return Grads{ctx.needs_grad(0) ? sum_to(div(g[0], y), sa) : Tensor(),
                     ctx.needs_grad(1) ? sum_to(neg(mul(g[0], div(div(x, y), y))), sb) : Tensor()};
      });
  return out;
}

// pow: out = a^b.  da = sum_to(g * b * a^(b-1), a), db = sum_to(g * out * log(a), b), with
// PyTorch's conventions where the formulas break down: da = 0 where b == 0, and db = 0 where
// a == 0 and b >= 0 (instead of 0 * -inf = NaN).
Tensor pow(const Tensor& a, const Tensor& b) {
  Tensor out = binary_forward("pow", Binary::pow, a, b);
  autograd::record("pow", {a, b}, {&out}, {a, b},
                   [sa = a.shape(), sb = b.shape()](const Grads& g, const BackwardContext& ctx) {
                     const Tensor& x = ctx.saved(0);
                     const Tensor& y = ctx.saved(1);
                     Tensor da, db;
                     if (ctx.needs_grad(0)) {
                       const Tensor dout_da = binary_forward("pow", Binary::pow_grad_base, x, y);
                       da = sum_to(mul(g[0], dout_da), sa);
                     }
                     if (ctx.needs_grad(1)) {
                       const Tensor dout_db =
                           binary_forward("pow", Binary::pow_grad_exponent, x, y);
                       db = sum_to(mul(g[0], dout_db), sb);
                     }
                     return Grads{da, db};
                   });
  return out;
}

// maximum/minimum: the gradient goes to the larger (smaller) operand, split half/half on
// ties (as torch.maximum).  da = sum_to(g*w_a, a), w_a = 1 if a wins, 0.5 on a tie, else 0
namespace {
Tensor extremum(const char* op, const Tensor& a, const Tensor& b, bool is_max) {
  // NaN in either operand gives NaN, as torch.maximum/minimum
  Tensor out = binary_forward(op, is_max ? Binary::maximum : Binary::minimum, a, b);
  autograd::record(
      op, {a, b}, {&out}, {a, b},
      [op, sa = a.shape(), sb = b.shape(), is_max](const Grads& g, const BackwardContext& ctx) {
        // weight of operand a: 1 where a wins, 0.5 on ties, 0 where b wins
        const Tensor wa = binary_forward(op, is_max ? Binary::max_weight : Binary::min_weight,
                                         ctx.saved(0), ctx.saved(1));
        return Grads{ctx.needs_grad(0) ? sum_to(mul(g[0], wa), sa) : Tensor(),
                     ctx.needs_grad(1) ? sum_to(mul(g[0], rsub(wa, 1.0)), sb) : Tensor()};
      });
  return out;
}
}  // namespace

Tensor maximum(const Tensor& a, const Tensor& b) { return extremum("maximum", a, b, true); }
Tensor minimum(const Tensor& a, const Tensor& b) { return extremum("minimum", a, b, false); }

// --- scalar variants ---------------------------------------------------------------

// out = x + s.  dx = g   (`op` names errors and the node: "sub" passes -s)
namespace {
Tensor add_scalar(const char* op, const Tensor& x, double s) {
  Tensor out = scalar_forward(op, Unary::add_scalar, s, x);
  autograd::record(op, {x}, {&out}, {},
                   [](const Grads& g, const BackwardContext&) { return Grads{g[0]}; });
  return out;
}
}  // namespace

Tensor add(const Tensor& x, double s) { return add_scalar("add", x, s); }
Tensor sub(const Tensor& x, double s) { return add_scalar("sub", x, -s); }

// out = s - x.  dx = -g
Tensor rsub(const Tensor& x, double s) {
  Tensor out = scalar_forward("rsub", Unary::rsub_scalar, s, x);
  autograd::record("rsub", {x}, {&out}, {},
                   [](const Grads& g, const BackwardContext&) { return Grads{neg(g[0])}; });
  return out;
}

// out = x * s.  dx = g * s
Tensor mul(const Tensor& x, double s) {
  Tensor out = scalar_forward("mul", Unary::mul_scalar, s, x);
  autograd::record("mul", {x}, {&out}, {},
                   [s](const Grads& g, const BackwardContext&) { return Grads{mul(g[0], s)}; });
  return out;
}

// out = x / s.  dx = g / s
Tensor div(const Tensor& x, double s) {
  Tensor out = scalar_forward("div", Unary::div_scalar, s, x);
  autograd::record("div", {x}, {&out}, {},
                   [s](const Grads& g, const BackwardContext&) { return Grads{div(g[0], s)}; });
  return out;
}

// out = s / x.  dx = -g * s / x^2 = -g * out / x
Tensor rdiv(const Tensor& x, double s) {
  Tensor out = scalar_forward("rdiv", Unary::rdiv_scalar, s, x);
  autograd::record("rdiv", {x}, {&out}, {x, out}, [](const Grads& g, const BackwardContext& ctx) {
    return Grads{neg(div(mul(g[0], ctx.saved(1)), ctx.saved(0)))};
  });
  return out;
}

// out = x^e.  dx = g * e * x^(e-1)  (0 for e == 0, as PyTorch)
Tensor pow(const Tensor& x, double e) {
  Tensor out = scalar_forward("pow", Unary::pow_scalar, e, x);
  autograd::record("pow", {x}, {&out}, {x}, [e](const Grads& g, const BackwardContext& ctx) {
    if (e == 0.0) return Grads{zeros_like(g[0])};
    if (e == 1.0) return Grads{g[0]};
    if (e == 2.0) return Grads{mul(mul(g[0], ctx.saved(0)), 2.0)};
    return Grads{mul(mul(g[0], pow(ctx.saved(0), e - 1.0)), e)};
  });
  return out;
}

// out = s^x.  dx = g * out * log(s) (0 where s == 0 and x >= 0)
Tensor pow(double s, const Tensor& x) {
  Tensor out = scalar_forward("pow", Unary::rpow_scalar, s, x);
  autograd::record("pow", {x}, {&out}, {x, out}, [s](const Grads& g, const BackwardContext& ctx) {
    Tensor dx = mul(mul(g[0], ctx.saved(1)), std::log(s));
    if (s == 0.0) {  // as PyTorch: no gradient where 0^x is 0 or 1 (x >= 0), not NaN
      Tensor zero = zeros({}, dx.options());
      dx = where(ge(ctx.saved(0), zero), zero, dx);
    }
    return Grads{dx};
  });
  return out;
}

// --- comparisons and where -----------------------------------------------------------
namespace {
// out (bool) = a kind b, broadcast, for any dtype.
Tensor compare(const char* op, Binary kind, const Tensor& a, const Tensor& b) {
  detail::check_defined(op, a);
  detail::check_defined(op, b);
  detail::check_same_device(op, a, b);
  detail::check_same_dtype(op, a, b);
  Tensor out = detail::new_tensor(broadcast_operands(op, a, b), kBool, a.device());
  kernels_for(a.device(), op).binary(kind, a, b, out, 1.0);
  return out;
}
}  // namespace

Tensor eq(const Tensor& a, const Tensor& b) { return compare("eq", Binary::eq, a, b); }
Tensor ne(const Tensor& a, const Tensor& b) { return compare("ne", Binary::ne, a, b); }
Tensor lt(const Tensor& a, const Tensor& b) { return compare("lt", Binary::lt, a, b); }
Tensor le(const Tensor& a, const Tensor& b) { return compare("le", Binary::le, a, b); }
Tensor gt(const Tensor& a, const Tensor& b) { return compare("gt", Binary::gt, a, b); }
Tensor ge(const Tensor& a, const Tensor& b) { return compare("ge", Binary::ge, a, b); }

Tensor logical_not(const Tensor& mask) {
  detail::check_dtype("logical_not", mask, kBool, "mask");
  Tensor out = detail::new_tensor(mask.shape(), kBool, mask.device());
  kernels_for(mask.device(), "logical_not").logical_not(mask, out);
  return out;
}

// where: out = cond ? a : b (all three broadcast).  da = sum_to(cond ? g : 0, a),
// db = sum_to(cond ? 0 : g, b)
Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b) {
  detail::check_dtype("where", condition, kBool, "condition");
  detail::check_float_op("where", a, b);
  const Shape shape =
      broadcast_shapes(broadcast_operands("where", condition, a), b.shape(), "where");
  detail::check_same_device("where", condition, a);
  Tensor out = detail::new_tensor(shape, a.dtype(), a.device());
  kernels_for(a.device(), "where").where(condition, a, b, out);
  autograd::record("where", {a, b}, {&out}, {condition},
                   [sa = a.shape(), sb = b.shape()](const Grads& g, const BackwardContext& ctx) {
                     Tensor zero = zeros({}, g[0].options());
                     Tensor da, db;
                     if (ctx.needs_grad(0)) da = sum_to(where(ctx.saved(0), g[0], zero), sa);
                     if (ctx.needs_grad(1)) db = sum_to(where(ctx.saved(0), zero, g[0]), sb);
                     return Grads{da, db};
                   });
  return out;
}

// --- operators -----------------------------------------------------------------------
Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator+(const Tensor& a, double b) { return add(a, b); }
Tensor operator-(const Tensor& a, double b) { return sub(a, b); }
Tensor operator*(const Tensor& a, double b) { return mul(a, b); }
Tensor operator/(const Tensor& a, double b) { return div(a, b); }
Tensor operator+(double a, const Tensor& b) { return add(b, a); }
Tensor operator-(double a, const Tensor& b) { return rsub(b, a); }
Tensor operator*(double a, const Tensor& b) { return mul(b, a); }
Tensor operator/(double a, const Tensor& b) { return rdiv(b, a); }
Tensor operator-(const Tensor& a) { return neg(a); }

}  // namespace headgrad

namespace headgrad {

namespace {
// `a` against the number `b`: in a's dtype when a is floating; an integer or bool tensor is
// compared in float64, so that x > 0.5 means what it says for int64 x.
std::pair<Tensor, Tensor> comparable(const Tensor& a, double b) {
  a.check_defined("comparison");
  const Tensor lhs = is_floating(a.dtype()) ? a : a.to(kFloat64);
  return {lhs, scalar_tensor(b, TensorOptions(lhs.dtype()).device(lhs.device()))};
}
}  // namespace

Tensor operator==(const Tensor& a, const Tensor& b) { return eq(a, b); }
Tensor operator!=(const Tensor& a, const Tensor& b) { return ne(a, b); }
Tensor operator<(const Tensor& a, const Tensor& b) { return lt(a, b); }
Tensor operator<=(const Tensor& a, const Tensor& b) { return le(a, b); }
Tensor operator>(const Tensor& a, const Tensor& b) { return gt(a, b); }
Tensor operator>=(const Tensor& a, const Tensor& b) { return ge(a, b); }
Tensor operator==(const Tensor& a, double b) {
  auto [x, y] = comparable(a, b);
  return eq(x, y);
}
Tensor operator!=(const Tensor& a, double b) {
  auto [x, y] = comparable(a, b);
  return ne(x, y);
}
Tensor operator<(const Tensor& a, double b) {
  auto [x, y] = comparable(a, b);
  return lt(x, y);
}
Tensor operator<=(const Tensor& a, double b) {
  auto [x, y] = comparable(a, b);
  return le(x, y);
}
Tensor operator>(const Tensor& a, double b) {
  auto [x, y] = comparable(a, b);
  return gt(x, y);
}
Tensor operator>=(const Tensor& a, double b) {
  auto [x, y] = comparable(a, b);
  return ge(x, y);
}

}  // namespace headgrad
