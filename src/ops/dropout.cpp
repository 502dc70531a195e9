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
// same generator state gives the same GPU mask (but not the CPU's mask).
#include "headgrad/ops/dropout.hpp"

#include <cstdint>
#include <string>
#include <vector>

#include "core/cuda_backend.hpp"
#include "core/dispatch.hpp"
#include "headgrad/autograd/function.hpp"
#include "headgrad/autograd/grad_mode.hpp"
#include "headgrad/ops/elementwise.hpp"

namespace headgrad {

namespace {
// y = mask != 0 ? v * mask : 0, exactly 0 where dropped (not inf * 0 = NaN).
Tensor apply_mask(const Tensor& v, const Tensor& mask) {
  return where(ne(mask, zeros({}, mask.options())), mul(v, mask), zeros({}, mask.options()));
}

Tensor dropout_on_device(const Tensor& x, double p, std::uint64_t seed) {
  Tensor mask = detail::new_tensor(x.shape(), x.dtype(), x.device());
  cuda::backend().dropout_mask(seed, p, mask);
  Tensor out;
  {
    NoGradGuard no_grad;
    out = apply_mask(x, mask);
  }
  autograd::record("dropout", {x}, {&out}, {mask},
                   [](const std::vector<Tensor>& grads, const autograd::BackwardContext& ctx) {
                     if (!grads[0].defined() || !ctx.needs_grad(0))
                       return std::vector<Tensor>{Tensor()};
                     const Tensor& mask = ctx.saved(0);
                     const Tensor g =
                         grads[0].dtype() == mask.dtype() ? grads[0] : grads[0].to(mask.dtype());
                     return std::vector<Tensor>{apply_mask(g, mask)};
                   });
  return out;
}
}  // namespace

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
  if (x.device().is_cuda()) return dropout_on_device(x, p, gen.next_u64());
  const std::int64_t n = x.numel();
  Tensor mask = detail::new_tensor(x.shape(), x.dtype());
  Tensor out = detail::new_tensor(x.shape(), x.dtype());
  detail::dispatch_floating(x.dtype(), op, [&]<typename T>() {
    const T scale = p < 1.0 ? static_cast<T>(1.0 / (1.0 - p)) : T(0);
    T* m = detail::ptr<T>(mask);
    for (std::int64_t i = 0; i < n; ++i)
      m[i] = static_cast<double>(gen.next_float()) < p ? T(0) : scale;
    const T* xp = detail::ptr<T>(x);
    T* y = detail::ptr<T>(out);
    for (std::int64_t i = 0; i < n; ++i) y[i] = m[i] != T(0) ? xp[i] * m[i] : T(0);
  });

  autograd::record(op, {x}, {&out}, {mask},
                   [](const std::vector<Tensor>& grads, const autograd::BackwardContext& ctx) {
                     const Tensor& upstream = grads[0];
                     if (!upstream.defined() || !ctx.needs_grad(0))
                       return std::vector<Tensor>{Tensor()};
                     const Tensor& mask = ctx.saved(0);
                     const Tensor g =
                         upstream.dtype() == mask.dtype() ? upstream : upstream.to(mask.dtype());
                     Tensor dx = detail::new_tensor(mask.shape(), mask.dtype());
                     detail::dispatch_floating(mask.dtype(), "dropout backward", [&]<typename T>() {
                       const T* m = detail::ptr<T>(mask);
                       const T* gp = detail::ptr<T>(g);
                       T* d = detail::ptr<T>(dx);
                       const std::int64_t n = mask.numel();
                       for (std::int64_t i = 0; i < n; ++i)
                         d[i] = m[i] != T(0) ? gp[i] * m[i] : T(0);
                     });
                     return std::vector<Tensor>{dx};
                   });
  return out;
}

}  // namespace headgrad
