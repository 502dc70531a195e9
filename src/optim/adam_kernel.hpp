// The Adam / AdamW update of one contiguous run of parameters (optim/adam.hpp gives the
// arithmetic), shared by Adam, AdamW and EnsembleAdamW, which runs it on each member's
// slice so a member's update is bitwise AdamW's on its own parameter.
#pragma once

#include <cmath>
#include <cstdint>

#include <xsimd/xsimd.hpp>

namespace headgrad::optim::detail {

struct Hyper {
  double lr, beta1, beta2, eps, weight_decay;
  bool amsgrad, decoupled;
};

template <typename T>
void adam_update(T* p, const T* g, T* m, T* v, T* vmax, std::int64_t n, std::int64_t step,
                 const Hyper& h) {
  const double bias_correction1 = 1.0 - std::pow(h.beta1, static_cast<double>(step));
  const double bias_correction2 = 1.0 - std::pow(h.beta2, static_cast<double>(step));
  const T neg_step_size = static_cast<T>(-(h.lr / bias_correction1));
  const T bias_correction2_sqrt = static_cast<T>(std::sqrt(bias_correction2));
  const T beta1 = static_cast<T>(h.beta1);
  const T beta2 = static_cast<T>(h.beta2);
  const T one_minus_beta1 = static_cast<T>(1.0 - h.beta1);
  const T one_minus_beta2 = static_cast<T>(1.0 - h.beta2);
  const T eps = static_cast<T>(h.eps);
  const T weight_decay = static_cast<T>(h.weight_decay);
  const T decay_factor = static_cast<T>(1.0 - h.lr * h.weight_decay);
  const bool l2 = !h.decoupled && h.weight_decay != 0.0;
  const bool decoupled = h.decoupled && h.weight_decay != 0.0;
  // One element (scalar) or one xsimd batch of elements, in PyTorch's order of operations;
  // vmax is handled by the caller. Returns the new exp_avg_sq so amsgrad can take its max.
  auto moments = [&](auto grad, auto p_k, auto m_k, auto v_k, auto& m_out, auto& v_out,
                     auto& p_out) {
    using V = decltype(grad);
    if (l2) grad = grad + V(weight_decay) * p_k;  // grad = grad.add(param, alpha=weight_decay)
    if (decoupled) p_k = p_k * V(decay_factor);   // param.mul_(1 - lr * weight_decay)
    V mk = m_k * V(beta1);                        // exp_avg.mul_(beta1)
    mk = mk + V(one_minus_beta1) * grad;          //   .add_(grad, alpha=1 - beta1)
    V vk = v_k * V(beta2);                        // exp_avg_sq.mul_(beta2)
    vk = vk + V(one_minus_beta2) * grad * grad;   //   .addcmul_(grad, grad, value=1 - beta2)
    m_out = mk;
    v_out = vk;
    p_out = p_k;
  };
  auto apply = [&](auto p_k, auto mk, auto vk) {
    using V = decltype(p_k);
    using std::sqrt;
    const V denom = sqrt(vk) / V(bias_correction2_sqrt) + V(eps);
    return p_k + V(neg_step_size) * mk / denom;  // param.addcdiv_(exp_avg, denom, -step_size)
  };
  std::int64_t k = 0;
  if (!vmax) {  // the common case, vectorized
    using batch = xsimd::batch<T>;
    constexpr std::int64_t w = static_cast<std::int64_t>(batch::size);
    for (; k + w <= n; k += w) {
      batch mk, vk, pk;
      moments(batch::load_unaligned(g + k), batch::load_unaligned(p + k),
              batch::load_unaligned(m + k), batch::load_unaligned(v + k), mk, vk, pk);
      mk.store_unaligned(m + k);
      vk.store_unaligned(v + k);
      apply(pk, mk, vk).store_unaligned(p + k);
    }
  }
  for (; k < n; ++k) {
    T mk, vk, pk;
    moments(g[k], p[k], m[k], v[k], mk, vk, pk);
    m[k] = mk;
    v[k] = vk;
    if (vmax) {  // torch.maximum(max_exp_avg_sq, exp_avg_sq), NaN propagates
      if (vk > vmax[k] || std::isnan(vk)) vmax[k] = vk;
      vk = vmax[k];
    }
    p[k] = apply(pk, mk, vk);
  }
}

}  // namespace headgrad::optim::detail
