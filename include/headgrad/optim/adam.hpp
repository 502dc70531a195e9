// optim::Adam and optim::AdamW, in the exact arithmetic of torch.optim.Adam / AdamW's
// single-tensor path (PyTorch 1.13). For each parameter p with gradient g (any shape;
// buffers are shaped like p) and its own step count t (starting at 1):
//
//   Adam:  g = g + weight_decay * p            (L2, when weight_decay != 0)
//   AdamW: p = p * (1 - lr * weight_decay)     (decoupled, before the moments)
//   m = beta1 * m + (1 - beta1) * g            (m, v start at zero)
//   v = beta2 * v + (1 - beta2) * g * g
//   v_max = max(v_max, v)                      (amsgrad only; then v_max replaces v below)
//   step_size = lr / (1 - beta1^t)
//   denom = sqrt(v) / sqrt(1 - beta2^t) + eps
//   p = p - step_size * m / denom
//
// State dict: num_params, lr, beta1, beta2, eps, weight_decay (0-d float64), amsgrad
// (0-d int64), and per parameter that has taken a step: state.<i>.step (0-d int64),
// state.<i>.exp_avg, state.<i>.exp_avg_sq, state.<i>.max_exp_avg_sq (amsgrad only).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "headgrad/core/options.hpp"
#include "headgrad/optim/optimizer.hpp"

namespace headgrad::optim {

namespace detail {

// Fields and builders shared by AdamOptions and AdamWOptions (each builder returns the
// derived type, so AdamWOptions().with_lr(1e-3) is still an AdamWOptions).
template <typename Self>
struct AdamOptionsBase {
  double lr = 1e-3;
  std::pair<double, double> betas = {0.9, 0.999};
  double eps = 1e-8;
  double weight_decay = 0.0;  // Adam: L2 added to the gradient; AdamW: decoupled
  bool amsgrad = false;

  HEADGRAD_WITH_SELF(lr)
  Self& with_betas(double beta1, double beta2) {
    betas = {beta1, beta2};
    return self();
  }
  HEADGRAD_WITH_SELF(eps)
  HEADGRAD_WITH_SELF(weight_decay)
  HEADGRAD_WITH_SELF(amsgrad)

 private:
  Self& self() { return static_cast<Self&>(*this); }
};

}  // namespace detail

struct AdamOptions : detail::AdamOptionsBase<AdamOptions> {
  AdamOptions() = default;
  explicit AdamOptions(double lr_) { lr = lr_; }
};

// AdamW's options: Adam's, with PyTorch's AdamW default weight_decay of 0.01.
struct AdamWOptions : detail::AdamOptionsBase<AdamWOptions> {
  AdamWOptions() { weight_decay = 0.01; }
  explicit AdamWOptions(double lr_) : AdamWOptions() { lr = lr_; }
};

namespace detail {

// The shared machinery of Adam and AdamW; `decoupled` selects AdamW's weight decay.
class AdamBase : public Optimizer {
 public:
  void step() override;
  StateDict state_dict() const override;
  void load_state_dict(const StateDict& state) override;

  // The hyperparameters in force (lr follows set_lr and load_state_dict).
  std::pair<double, double> betas() const { return betas_; }
  double eps() const { return eps_; }
  double weight_decay() const { return weight_decay_; }
  bool amsgrad() const { return amsgrad_; }
  bool decoupled_weight_decay() const { return decoupled_; }
  // Parameter i's step count (0 before its first step) and buffers (undefined before it).
  std::int64_t step_count(std::size_t i) const { return state_.at(i).step; }
  const Tensor& exp_avg(std::size_t i) const { return state_.at(i).exp_avg; }
  const Tensor& exp_avg_sq(std::size_t i) const { return state_.at(i).exp_avg_sq; }
  const Tensor& max_exp_avg_sq(std::size_t i) const { return state_.at(i).max_exp_avg_sq; }

 protected:
  template <typename Self>
  AdamBase(std::vector<Tensor> params, const AdamOptionsBase<Self>& o, bool decoupled,
           const char* type_name)
      : AdamBase(std::move(params), o.lr, o.betas, o.eps, o.weight_decay, o.amsgrad, decoupled,
                 type_name) {}
  AdamBase(std::vector<Tensor> params, double lr, std::pair<double, double> betas, double eps,
           double weight_decay, bool amsgrad, bool decoupled, const char* type_name);

 private:
  struct ParamState {
    std::int64_t step = 0;
    Tensor exp_avg, exp_avg_sq, max_exp_avg_sq;
  };
  std::pair<double, double> betas_;  // lr lives in Optimizer::lr_
  double eps_;
  double weight_decay_;
  bool amsgrad_;
  bool decoupled_;
  std::vector<ParamState> state_;
};

}  // namespace detail

// ValueError for lr, eps or weight_decay < 0 and betas outside [0, 1) (as PyTorch).
class Adam : public detail::AdamBase {
 public:
  Adam(std::vector<Tensor> params, const AdamOptions& options)
      : AdamBase(std::move(params), options, /*decoupled=*/false, "Adam") {}
};

class AdamW : public detail::AdamBase {
 public:
  AdamW(std::vector<Tensor> params, const AdamWOptions& options)
      : AdamBase(std::move(params), options, /*decoupled=*/true, "AdamW") {}
};

}  // namespace headgrad::optim
