// optim::Optimizer: the base of every optimizer. It holds the parameters (floating leaf
// tensors of any shape, updated in place under NoGradGuard, no graph recorded), the
// learning rate, and the state-dict contract that makes resuming bitwise exact.
//
// State-dict layout (every value a tensor, so it fits a checkpoint .npz):
//   "num_params"          0-d int64: how many parameters the optimizer was built with
//   "lr", ...             0-d float64 hyperparameters; flags (nesterov, amsgrad) 0-d int64
//   "state.<i>.<buffer>"  per-parameter buffers shaped like parameter i (e.g.
//                         state.3.exp_avg), and 0-d int64 counters (state.3.step)
// A parameter that has never had a gradient has no state entries, as in PyTorch.
// load_state_dict restores the hyperparameters too (as torch.optim does), validates every
// entry (names, shapes, dtypes, values) before writing anything, and throws ValueError
// listing every problem, leaving the optimizer untouched.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "headgrad/core/state_dict.hpp"
#include "headgrad/core/tensor.hpp"

namespace headgrad::optim {

class Optimizer {
 public:
  // `params`: defined floating (float32/float64) leaf tensors, each at most once. `lr` is
  // the learning rate (>= 0). Throws ValueError naming the offending parameter.
  Optimizer(std::vector<Tensor> params, double lr, std::string type_name);
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // One update of every parameter that has a gradient; parameters whose grad() is
  // undefined are skipped (their state does not advance). Every gradient is checked
  // (shape, dtype) before any parameter changes.
  virtual void step() = 0;
  // Drops every parameter's gradient (PyTorch's zero_grad(set_to_none=True)).
  void zero_grad();

  double lr() const { return lr_; }
  void set_lr(double lr);  // ValueError when lr < 0 or not finite
  const std::vector<Tensor>& params() const { return params_; }
  const std::string& type_name() const { return type_name_; }

  virtual StateDict state_dict() const = 0;
  virtual void load_state_dict(const StateDict& state) = 0;

 protected:
  // The parameters whose gradient is defined, after checking that each gradient matches
  // its parameter in shape and dtype (ShapeError / DTypeError naming `type_name_`).
  std::vector<std::size_t> params_with_grad() const;

  std::vector<Tensor> params_;
  double lr_;
  std::string type_name_;
};

}  // namespace headgrad::optim
