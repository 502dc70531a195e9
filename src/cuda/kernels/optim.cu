// Optimizer updates on the GPU, in place, one thread per element (grid-stride): Adam/AdamW
// and SGD (spec: src/optim/adam.cpp, src/optim/sgd.cpp, which follow PyTorch's
// single-tensor path operation by operation).
//
// Every multiply and add below is an explicitly rounded __fmul_rn/__fadd_rn (or the double
// ones) so that nvcc does not contract them into FMAs: with IEEE division and sqrt (nvcc's
// defaults) each element then goes through the same roundings as the CPU loop, which is
// built without FP contraction (-std=c++20, no GNU extensions), so the two should agree bit
// for bit.
#include <cmath>

#include "cuda/backend.hpp"
#include "cuda/common.cuh"
#include "cuda/kernels/kernel_util.cuh"

namespace headgrad::cuda {

namespace {

__device__ __forceinline__ float mul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double mul(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ float add(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double add(double a, double b) { return __dadd_rn(a, b); }

// ---------------------------------------------------------------------------------------
// Adam / AdamW, per element, with step t (bias corrections bc1 = 1 - beta1^t,
// bc2 = 1 - beta2^t computed in double on the host, as the CPU):
//   L2:        g = g + wd * p                  (Adam's weight decay)
//   decoupled: p = p * (1 - lr * wd)           (AdamW)
//   m = m * beta1 + (1 - beta1) * g
//   v = v * beta2 + (1 - beta2) * g * g
//   amsgrad:   vmax = max(vmax, v) (NaN propagates), v_used = vmax
//   p = p + (-lr / bc1) * m / (sqrt(v_used) / sqrt(bc2) + eps)
// ---------------------------------------------------------------------------------------
template <typename T>
struct AdamConsts {
  T neg_step_size, bias_correction2_sqrt, beta1, beta2, one_minus_beta1, one_minus_beta2, eps,
      weight_decay, decay_factor;
  bool l2, decoupled;
};

template <typename T>
__global__ void adam_kernel(T* __restrict__ p, const T* __restrict__ g, T* __restrict__ m,
                            T* __restrict__ v, T* __restrict__ vmax, std::int64_t n,
                            AdamConsts<T> c) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t k = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < n;
       k += stride) {
    T grad = g[k];
    T pk = p[k];
    if (c.l2) grad = add(grad, mul(c.weight_decay, pk));  // grad.add(param, alpha=wd)
    if (c.decoupled) pk = mul(pk, c.decay_factor);        // param.mul_(1 - lr*wd)
    const T mk = add(mul(m[k], c.beta1), mul(c.one_minus_beta1, grad));
    T vk = add(mul(v[k], c.beta2), mul(mul(c.one_minus_beta2, grad), grad));
    m[k] = mk;
    v[k] = vk;
    if (vmax) {  // torch.maximum(max_exp_avg_sq, exp_avg_sq)
      const T prev = vmax[k];
      if (vk > prev || vk != vk)
        vmax[k] = vk;
      else
        vk = prev;
    }
    const T denom = add(dsqrt(vk) / c.bias_correction2_sqrt, c.eps);
    p[k] = add(pk, mul(c.neg_step_size, mk) / denom);  // param.addcdiv_(m, denom, -step)
  }
}

// ---------------------------------------------------------------------------------------
// SGD, per element (buf only with momentum != 0):
//   d = g + wd * p                               (when wd != 0)
//   first step: buf = d;  else buf = buf * momentum + (1 - dampening) * d
//   d = nesterov ? d + momentum * buf : buf
//   p = p + (-lr) * d
// ---------------------------------------------------------------------------------------
template <typename T>
struct SgdConsts {
  T weight_decay, momentum, one_minus_dampening, neg_lr;
  bool decay, nesterov, first;
};

template <typename T>
__global__ void sgd_kernel(T* __restrict__ p, const T* __restrict__ g, T* __restrict__ buf,
                           std::int64_t n, SgdConsts<T> c) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t k = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < n;
       k += stride) {
    const T pk = p[k];
    T d = g[k];
    if (c.decay) d = add(d, mul(c.weight_decay, pk));
    if (buf) {
      const T b = c.first ? d : add(mul(buf[k], c.momentum), mul(c.one_minus_dampening, d));
      buf[k] = b;
      d = c.nesterov ? add(d, mul(c.momentum, b)) : b;
    }
    p[k] = add(pk, mul(c.neg_lr, d));
  }
}

}  // namespace

void CudaBackend::adam_update(Tensor& param, const Tensor& grad, Tensor& exp_avg,
                              Tensor& exp_avg_sq, Tensor& max_exp_avg_sq, const AdamHyper& h) {
  const char* op = h.decoupled ? "AdamW" : "Adam";
  dispatch_floating(param.dtype(), op, [&]<typename T>() {
    const std::int64_t n = param.numel();
    if (n == 0) return;
    const double bias_correction1 = 1.0 - std::pow(h.beta1, static_cast<double>(h.step));
    const double bias_correction2 = 1.0 - std::pow(h.beta2, static_cast<double>(h.step));
    AdamConsts<T> c;
    c.neg_step_size = static_cast<T>(-(h.lr / bias_correction1));
    c.bias_correction2_sqrt = static_cast<T>(std::sqrt(bias_correction2));
    c.beta1 = static_cast<T>(h.beta1);
    c.beta2 = static_cast<T>(h.beta2);
    c.one_minus_beta1 = static_cast<T>(1.0 - h.beta1);
    c.one_minus_beta2 = static_cast<T>(1.0 - h.beta2);
    c.eps = static_cast<T>(h.eps);
    c.weight_decay = static_cast<T>(h.weight_decay);
    c.decay_factor = static_cast<T>(1.0 - h.lr * h.weight_decay);
    c.l2 = !h.decoupled && h.weight_decay != 0.0;
    c.decoupled = h.decoupled && h.weight_decay != 0.0;
    T* vmax = h.amsgrad && max_exp_avg_sq.defined() ? dptr<T>(max_exp_avg_sq) : nullptr;
    adam_kernel<T><<<blocks_for(n), kThreads, 0, stream_of(param)>>>(
        dptr<T>(param), dptr<T>(grad), dptr<T>(exp_avg), dptr<T>(exp_avg_sq), vmax, n, c);
    check_launch(op);
  });
}

void CudaBackend::sgd_update(Tensor& param, const Tensor& grad, Tensor& momentum_buffer,
                             const SgdHyper& h) {
  dispatch_floating(param.dtype(), "SGD", [&]<typename T>() {
    const std::int64_t n = param.numel();
    if (n == 0) return;
    SgdConsts<T> c;
    c.weight_decay = static_cast<T>(h.weight_decay);
    c.momentum = static_cast<T>(h.momentum);
    c.one_minus_dampening = static_cast<T>(1.0 - h.dampening);
    c.neg_lr = static_cast<T>(-h.lr);
    c.decay = h.weight_decay != 0.0;
    c.nesterov = h.nesterov;
    c.first = h.first_step;
    T* buf = h.momentum != 0.0 && momentum_buffer.defined() ? dptr<T>(momentum_buffer) : nullptr;
    sgd_kernel<T><<<blocks_for(n), kThreads, 0, stream_of(param)>>>(dptr<T>(param), dptr<T>(grad),
                                                                    buf, n, c);
    check_launch("SGD");
  });
}

}  // namespace headgrad::cuda
