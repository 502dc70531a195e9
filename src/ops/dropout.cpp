// Inverted dropout, forward and backward side by side.
//
// Reproducibility contract: in training with p > 0 the keep-mask takes exactly one draw
// `generator.next_float()` per element of x, in row-major order, and element i is dropped
// when its draw is < p (so p == 1 drops everything; the draws are still taken). Eval mode
// and p == 0 take no draws. The same generator state therefore gives the same mask for
// the same shape and p, whatever the dtype.
//
// On a GPU the mask comes from a counter-based generator (Philox) keyed by one
// `generator.next_u64()` per call: element i's draw depends only on that key and i, so the
// same generator state gives the same GPU mask (but not the CPU's mask). The kernels come
// from x's device (Kernels::dropout_mask, dropout_apply).
#include "headgrad/ops/dropout.hpp"

#include <string>
#include <vector>

#include "core/dispatch.hpp"
#include "core/kernels.hpp"
#include "headgrad/autograd/function.hpp"

namespace headgrad {

// dropout: x (any shape) -> y (same shape)
//   mask_i = 0 if draw_i < p else scale, scale = 1/(1-p)   (p == 1: mask = 0)
//   y_i    = x_i * mask_i (exactly 0 where dropped, even for non-finite x_i)
//   dx_i   = dy_i * mask_i (exactly 0 where dropped)
// Saves the mask as a tensor of x's dtype holding 0 or scale.
Tensor dropout(const Tensor& x, double p, bool training, Generator* generator) {
  constexpr const char* op = "dropout";
  detail::check_float_op(op, x);
  if (!(p >= 0.0 && p <= 1.0))
    throw ValueError(std::string(op) + ": probability p must be in [0, 1], got " +
                     std::to_string(p) + " (input " + detail::describe(x) + ")");
  if (!training || p == 0.0) return x;

  Generator& gen = generator != nullptr ? *generator : default_generator();
  Kernels& kernels = kernels_for(x.device(), op);
  Tensor mask = detail::new_tensor(x.shape(), x.dtype(), x.device());
  kernels.dropout_mask(gen, p, mask);
  Tensor out = detail::new_tensor(x.shape(), x.dtype(), x.device());
  kernels.dropout_apply(x, mask, out);
  autograd::record(op, {x}, {&out}, {mask},
                   [](const std::vector<Tensor>& grads, const autograd::BackwardContext& ctx) {
                     const Tensor& upstream = grads[0];
                     if (!upstream.defined() || !ctx.needs_grad(0))
                       return std::vector<Tensor>{Tensor()};
                     const Tensor& mask = ctx.saved(0);
                     const Tensor g =
                         upstream.dtype() == mask.dtype() ? upstream : upstream.to(mask.dtype());
                     Tensor dx = detail::new_tensor(mask.shape(), mask.dtype(), mask.device());
                     kernels_for(mask.device(), "dropout backward").dropout_apply(g, mask, dx);
                     return std::vector<Tensor>{dx};
                   });
  return out;
}

}  // namespace headgrad
