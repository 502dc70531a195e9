// optim::Adam / AdamW: the update loop on raw pointers (float32, float64) and the state
// dict (see optim/adam.hpp for the formulas, which follow torch.optim.Adam and AdamW's
// single-tensor path of PyTorch 1.13 operation by operation).
#include "headgrad/optim/adam.hpp"

#include <algorithm>
#include <cmath>

#include "core/cuda_backend.hpp"
#include "core/dispatch.hpp"
#include "core/parallel.hpp"
#include "headgrad/autograd/grad_mode.hpp"
#include "headgrad/core/error.hpp"
#include "optim/adam_kernel.hpp"
#include "optim/state_io.hpp"

namespace headgrad::optim::detail {

namespace {

void check_hyper(const Hyper& h, const std::string& who) {
  auto check = [&](const char* name, double v, std::string (*rule)(double)) {
    const std::string what = rule(v);
    if (!what.empty())
      throw ValueError(who + ": invalid " + name + " " + std::to_string(v) + " (" + what + ")");
  };
  check("beta1", h.beta1, state_io::unit_interval);
  check("beta2", h.beta2, state_io::unit_interval);
  check("eps", h.eps, state_io::nonnegative);
  check("weight_decay", h.weight_decay, state_io::nonnegative);
}

// One parameter's update at its step count `step` (>= 1); `vmax` is null without amsgrad.
}  // namespace

AdamBase::AdamBase(std::vector<Tensor> params, double lr, std::pair<double, double> betas,
                   double eps, double weight_decay, bool amsgrad, bool decoupled,
                   const char* type_name)
    : Optimizer(std::move(params), lr, type_name),
      betas_(betas),
      eps_(eps),
      weight_decay_(weight_decay),
      amsgrad_(amsgrad),
      decoupled_(decoupled) {
  check_hyper({lr, betas.first, betas.second, eps, weight_decay, amsgrad, decoupled}, type_name_);
  state_.resize(params_.size());
}

void AdamBase::step() {
  const std::vector<std::size_t> active = params_with_grad();
  for (std::size_t i : active)
    for (const Tensor* b : {&state_[i].exp_avg, &state_[i].exp_avg_sq, &state_[i].max_exp_avg_sq})
      state_io::check_buffer(type_name_, i, params_[i], *b);
  const Hyper h{lr_, betas_.first, betas_.second, eps_, weight_decay_, amsgrad_, decoupled_};
  NoGradGuard no_grad;
  for (std::size_t i : active) {
    Tensor& p = params_[i];
    const Tensor g = p.grad();
    ParamState& s = state_[i];
    if (s.step == 0) {
      s.exp_avg = zeros(p.shape(), p.options());
      s.exp_avg_sq = zeros(p.shape(), p.options());
    }
    if (amsgrad_ && !s.max_exp_avg_sq.defined()) s.max_exp_avg_sq = zeros(p.shape(), p.options());
    s.step += 1;
    if (p.device().is_cuda()) {
      cuda::backend().adam_update(
          p, g, s.exp_avg, s.exp_avg_sq, s.max_exp_avg_sq,
          {h.lr, h.beta1, h.beta2, h.eps, h.weight_decay, h.amsgrad, h.decoupled, s.step});
      p.impl()->storage->bump_version();
      continue;
    }
    using headgrad::detail::ptr;
    headgrad::detail::dispatch_floating(p.dtype(), type_name_.c_str(), [&]<typename T>() {
      // Elements are independent: pieces starting at multiples of 64 (whole SIMD vectors)
      // per thread, the same bits at every thread count.
      T* const pp = ptr<T>(p);
      const T* const pg = ptr<T>(g);
      T* const pm = ptr<T>(s.exp_avg);
      T* const pv = ptr<T>(s.exp_avg_sq);
      T* const pmax = amsgrad_ ? ptr<T>(s.max_exp_avg_sq) : nullptr;
      const std::int64_t n = p.numel();
      headgrad::detail::parallel_for_aligned(n, 64, 16384, [&](std::int64_t b, std::int64_t e) {
        adam_update<T>(pp + b, pg + b, pm + b, pv + b, pmax ? pmax + b : nullptr, e - b, s.step, h);
      });
    });
    p.impl()->storage->bump_version();
  }
}

StateDict AdamBase::state_dict() const {
  StateDict out;
  out.insert("num_params", state_io::scalar_i64(static_cast<std::int64_t>(params_.size())));
  out.insert("lr", state_io::scalar_f64(lr_));
  out.insert("beta1", state_io::scalar_f64(betas_.first));
  out.insert("beta2", state_io::scalar_f64(betas_.second));
  out.insert("eps", state_io::scalar_f64(eps_));
  out.insert("weight_decay", state_io::scalar_f64(weight_decay_));
  out.insert("amsgrad", state_io::scalar_i64(amsgrad_ ? 1 : 0));
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const ParamState& s = state_[i];
    if (s.step == 0) continue;
    out.insert(state_io::key(i, "step"), state_io::scalar_i64(s.step));
    out.insert(state_io::key(i, "exp_avg"), state_io::copy_of(s.exp_avg));
    out.insert(state_io::key(i, "exp_avg_sq"), state_io::copy_of(s.exp_avg_sq));
    if (amsgrad_)
      out.insert(state_io::key(i, "max_exp_avg_sq"), state_io::copy_of(s.max_exp_avg_sq));
  }
  return out;
}

void AdamBase::load_state_dict(const StateDict& state) {
  state_io::StateReader in(state, params_, type_name_);
  in.check_num_params();
  Hyper h{};
  h.lr = in.real("lr", state_io::nonnegative);
  h.beta1 = in.real("beta1", state_io::unit_interval);
  h.beta2 = in.real("beta2", state_io::unit_interval);
  h.eps = in.real("eps", state_io::nonnegative);
  h.weight_decay = in.real("weight_decay", state_io::nonnegative);
  h.amsgrad = in.flag("amsgrad");
  h.decoupled = decoupled_;
  in.check_unexpected({"num_params", "lr", "beta1", "beta2", "eps", "weight_decay", "amsgrad"},
                      {"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"});
  std::vector<ParamState> loaded(params_.size());
  for (std::size_t i = 0; i < params_.size(); ++i) {
    ParamState& s = loaded[i];
    if (in.has(state_io::key(i, "step"))) {
      s.step = in.integer(state_io::key(i, "step"), 1);
      s.exp_avg = in.buffer(i, "exp_avg", true);
      s.exp_avg_sq =
          in.buffer(i, "exp_avg_sq", true, state_io::StateReader::BufferValues::nonnegative);
      if (h.amsgrad)
        s.max_exp_avg_sq =
            in.buffer(i, "max_exp_avg_sq", true, state_io::StateReader::BufferValues::nonnegative);
      else if (in.has(state_io::key(i, "max_exp_avg_sq")))
        in.problem(state_io::quoted(state_io::key(i, "max_exp_avg_sq")) +
                   " is present but amsgrad is 0");
    } else {
      for (const char* name : {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"})
        if (in.has(state_io::key(i, name)))
          in.problem(state_io::quoted(state_io::key(i, name)) + " is present without " +
                     state_io::quoted(state_io::key(i, "step")));
    }
  }
  in.throw_if_problems();
  lr_ = h.lr;
  betas_ = {h.beta1, h.beta2};
  eps_ = h.eps;
  weight_decay_ = h.weight_decay;
  amsgrad_ = h.amsgrad;
  state_ = std::move(loaded);
}

}  // namespace headgrad::optim::detail
