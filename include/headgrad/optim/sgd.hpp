// optim::SGD: stochastic gradient descent with momentum, dampening, L2 weight decay and
// Nesterov momentum, in torch.optim.SGD's exact update order. For each parameter p with
// gradient g (any shape; buffers are shaped like p):
//
//   d = g + weight_decay * p                       (when weight_decay != 0)
//   if momentum != 0:
//     buf = d                                      (first step: a copy of d)
//     buf = momentum * buf + (1 - dampening) * d   (later steps)
//     d = nesterov ? d + momentum * buf : buf
//   p = p - lr * d
//
// State dict: num_params, lr, momentum, dampening, weight_decay (0-d float64),
// nesterov (0-d int64), state.<i>.momentum_buffer (like parameter i, once created).
#pragma once

#include <vector>

#include "headgrad/core/options.hpp"
#include "headgrad/optim/optimizer.hpp"

namespace headgrad::optim {

struct SGDOptions {
  double lr = 1e-3;
  double momentum = 0.0;
  double dampening = 0.0;
  double weight_decay = 0.0;
  bool nesterov = false;

  SGDOptions() = default;
  explicit SGDOptions(double lr_) : lr(lr_) {}
  HEADGRAD_WITH(lr)
  HEADGRAD_WITH(momentum)
  HEADGRAD_WITH(dampening)
  HEADGRAD_WITH(weight_decay)
  HEADGRAD_WITH(nesterov)
};

class SGD : public Optimizer {
 public:
  // ValueError for lr, momentum or weight_decay < 0, and for nesterov without momentum or
  // with dampening (as PyTorch).
  SGD(std::vector<Tensor> params, const SGDOptions& options);

  void step() override;
  StateDict state_dict() const override;
  void load_state_dict(const StateDict& state) override;

  // The options in force (lr follows set_lr and load_state_dict).
  SGDOptions options() const;
  // Parameter i's momentum buffer; undefined before its first step with momentum.
  const Tensor& momentum_buffer(std::size_t i) const { return momentum_buffers_.at(i); }

 private:
  SGDOptions options_;  // lr lives in Optimizer::lr_
  std::vector<Tensor> momentum_buffers_;
};

}  // namespace headgrad::optim
