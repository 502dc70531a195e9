// masked_fill and causal_mask, forward and backward side by side.
#include <string>

#include "core/dispatch.hpp"
#include "core/kernels.hpp"
#include "headgrad/autograd/function.hpp"
#include "headgrad/ops/mask.hpp"

namespace headgrad {

namespace {

// The mask must broadcast to x's shape without enlarging it: aligned from the right, each
// mask dim is 1 or equal to x's, and the mask has no more dims than x.
void check_mask_fits(const Tensor& x, const Tensor& mask) {
  const Shape& xs = x.shape();
  const Shape& ms = mask.shape();
  bool fits = ms.size() <= xs.size();
  for (std::size_t i = 0; fits && i < ms.size(); ++i) {
    const std::int64_t m = ms[ms.size() - 1 - i];
    fits = m == 1 || m == xs[xs.size() - 1 - i];
  }
  if (!fits)
    throw ShapeError("masked_fill: mask " + shape_str(ms) + " does not broadcast to input " +
                     detail::describe(x) +
                     " without enlarging it (aligned from the right, each mask dim must be 1 or "
                     "equal the input's, and the mask may not have more dims)");
}

}  // namespace

// ---------------------------------------------------------------------------------------
// masked_fill: x (...), mask bool broadcastable to (...) -> y (...)
//   y = value where mask else x;   dx = 0 where mask else dy
// ---------------------------------------------------------------------------------------
Tensor masked_fill(const Tensor& x, const Tensor& mask, double value) {
  constexpr const char* op = "masked_fill";
  detail::check_float_op(op, x);
  detail::check_dtype(op, mask, kBool, "mask");
  detail::check_same_device(op, x, mask);
  check_mask_fits(x, mask);

  Tensor out = detail::new_tensor(x.shape(), x.dtype(), x.device());
  kernels_for(x.device(), op).masked_fill(x, mask, value, out);
  autograd::record(
      op, {x}, {&out}, {mask},
      [](const std::vector<Tensor>& grads,
         const autograd::BackwardContext& ctx) -> std::vector<Tensor> {
        const Tensor& dy = grads[0];
        Tensor dx = detail::new_tensor(dy.shape(), dy.dtype(), dy.device());
        kernels_for(dy.device(), "masked_fill backward").masked_fill(dy, ctx.saved(0), 0.0, dx);
        return {dx};
      });
  return out;
}

// causal_mask(L, S) -> (L, S) bool, true (blocked) where key j > query i.
Tensor causal_mask(std::int64_t target_len, std::int64_t source_len) {
  if (target_len < 0 || source_len < 0)
    throw ValueError("causal_mask: sizes must be non-negative, got " + std::to_string(target_len) +
                     " and " + std::to_string(source_len));
  Tensor mask = detail::new_tensor({target_len, source_len}, kBool);
  bool* m = detail::ptr<bool>(mask);
  for (std::int64_t i = 0; i < target_len; ++i)
    for (std::int64_t j = 0; j < source_len; ++j) m[i * source_len + j] = j > i;
  return mask;
}

Tensor causal_mask(std::int64_t size) { return causal_mask(size, size); }

}  // namespace headgrad
