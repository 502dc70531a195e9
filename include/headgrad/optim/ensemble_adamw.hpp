// optim::EnsembleAdamW: AdamW for an ensemble whose parameters are stacked on a leading
// axis of K members (nn/gpt_ensemble.hpp), each member with its own hyperparameters.
//
// Member k's slice of every parameter is updated exactly as optim::AdamW with members[k]'s
// options updates that member's own parameter (optim/adam.hpp gives the arithmetic): on
// the CPU bitwise, since the same kernel runs on each slice. Learning rates follow
// set_lr(k, lr) (a schedule per member); keep() drops the state of members that leave.
// member_state_dict(k) is an AdamW state dict: optim::AdamW::load_state_dict takes it and
// the member trains on alone from where the ensemble left it.
#pragma once

#include <cstdint>
#include <vector>

#include "headgrad/core/state_dict.hpp"
#include "headgrad/core/tensor.hpp"
#include "headgrad/optim/adam.hpp"

namespace headgrad::optim {

class EnsembleAdamW {
 public:
  // params: floating leaves stacked over members.size() models (leading dim K);
  // members[k]: member k's lr, betas, eps, weight decay and amsgrad. ValueError for an
  // invalid hyperparameter, ShapeError for a parameter whose leading dim is not K.
  EnsembleAdamW(std::vector<Tensor> params, std::vector<AdamWOptions> members);

  // One update of every parameter that has a gradient, member by member.
  void step();
  void zero_grad();

  std::int64_t size() const { return static_cast<std::int64_t>(members_.size()); }
  const std::vector<Tensor>& params() const { return params_; }
  double lr(std::int64_t k) const { return member(k).lr; }
  void set_lr(std::int64_t k, double lr);
  const AdamWOptions& options(std::int64_t k) const { return member(k); }

  // Keeps the listed members, in that order, as nn::GPTEnsemble::keep does (call both with
  // the same list, the model first).
  void keep(const std::vector<std::int64_t>& members);
  // Member k's state as optim::AdamW's state dict of the member's own parameters.
  StateDict member_state_dict(std::int64_t k) const;

 private:
  const AdamWOptions& member(std::int64_t k) const;

  struct ParamState {
    std::int64_t step = 0;
    Tensor exp_avg, exp_avg_sq, max_exp_avg_sq;  // stacked like the parameter
  };
  std::vector<Tensor> params_;
  std::vector<AdamWOptions> members_;
  std::vector<ParamState> state_;
};

}  // namespace headgrad::optim
