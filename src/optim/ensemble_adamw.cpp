// optim::EnsembleAdamW (see optim/ensemble_adamw.hpp): AdamW's kernel on each member's
// slice of each stacked parameter.
#include "headgrad/optim/ensemble_adamw.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>

#include "core/cuda_backend.hpp"
#include "core/dispatch.hpp"
#include "core/parallel.hpp"
#include "headgrad/autograd/grad_mode.hpp"
#include "headgrad/core/error.hpp"
#include "headgrad/ops/elementwise.hpp"
#include "headgrad/ops/index.hpp"
#include "headgrad/ops/shape_ops.hpp"
#include "optim/adam_kernel.hpp"
#include "optim/member_slice.hpp"
#include "optim/state_io.hpp"

namespace headgrad::optim {

namespace {

constexpr const char* kName = "EnsembleAdamW";

detail::Hyper hyper_of(const AdamWOptions& o) {
  return {o.lr, o.betas.first, o.betas.second, o.eps, o.weight_decay, o.amsgrad, true};
}

void check_member(const AdamWOptions& o, std::size_t k) {
  const std::string who = std::string(kName) + " member " + std::to_string(k);
  auto check = [&](const char* name, double v, std::string (*rule)(double)) {
    const std::string what = rule(v);
    if (!what.empty())
      throw ValueError(who + ": invalid " + name + " " + std::to_string(v) + " (" + what + ")");
  };
  check("lr", o.lr, state_io::nonnegative);
  check("beta1", o.betas.first, state_io::unit_interval);
  check("beta2", o.betas.second, state_io::unit_interval);
  check("eps", o.eps, state_io::nonnegative);
  check("weight_decay", o.weight_decay, state_io::nonnegative);
}

// AdamW's per-member constants on a GPU for one step: the rows of one (8, K) tensor,
// copied over once, viewed as (K, 1, ..., 1) for a parameter of `dims` dims.
class DeviceConstants {
 public:
  enum Row { decay, neg_step, beta1, one_minus_beta1, beta2, one_minus_beta2, bc2_sqrt, eps };

  DeviceConstants(const std::vector<AdamWOptions>& members, std::int64_t step, DType dtype,
                  Device device)
      : members_(static_cast<std::int64_t>(members.size())) {
    std::vector<double> rows(static_cast<std::size_t>(8 * members_));
    auto at = [&](Row r, std::size_t k) -> double& {
      return rows[static_cast<std::size_t>(r) * members.size() + k];
    };
    for (std::size_t k = 0; k < members.size(); ++k) {
      const AdamWOptions& o = members[k];
      const double bc1 = 1.0 - std::pow(o.betas.first, static_cast<double>(step));
      const double bc2 = 1.0 - std::pow(o.betas.second, static_cast<double>(step));
      at(decay, k) = 1.0 - o.lr * o.weight_decay;
      at(neg_step, k) = -(o.lr / bc1);
      at(beta1, k) = o.betas.first;
      at(one_minus_beta1, k) = 1.0 - o.betas.first;
      at(beta2, k) = o.betas.second;
      at(one_minus_beta2, k) = 1.0 - o.betas.second;
      at(bc2_sqrt, k) = std::sqrt(bc2);
      at(eps, k) = o.eps;
    }
    table_ = from_vector<double>(rows, {8, members_}).to(dtype).to(device);
  }

  // Row r as (K, 1, ..., 1) with `dims` dims (made once per dim count).
  Tensor get(Row r, std::int64_t dims) {
    auto& cached = views_[{static_cast<int>(r), dims}];
    if (!cached.defined()) {
      Shape shape(static_cast<std::size_t>(dims), 1);
      shape[0] = members_;
      cached = reshape(select(table_, 0, static_cast<std::int64_t>(r)), shape);
    }
    return cached;
  }

 private:
  std::int64_t members_;
  Tensor table_;
  std::map<std::pair<int, std::int64_t>, Tensor> views_;
};

// AdamW on a GPU for every member at once (no amsgrad): the arithmetic of optim/adam.hpp
// with each member's hyperparameters as a (K, 1, ...) tensor, a few launches per parameter
// instead of one per member. Equal to the per-member kernel up to rounding (the operations
// are separate kernels here).
void adamw_members_on_device(Tensor& p, const Tensor& g, Tensor& m, Tensor& v, DeviceConstants& c) {
  using R = DeviceConstants;
  const std::int64_t d = p.dim();
  const Tensor m_new = add(mul(m, c.get(R::beta1, d)), mul(g, c.get(R::one_minus_beta1, d)));
  const Tensor v_new =
      add(mul(v, c.get(R::beta2, d)), mul(mul(g, g), c.get(R::one_minus_beta2, d)));
  const Tensor denom = add(div(sqrt(v_new), c.get(R::bc2_sqrt, d)), c.get(R::eps, d));
  const Tensor p_new =
      add(mul(p, c.get(R::decay, d)), div(mul(m_new, c.get(R::neg_step, d)), denom));
  m.copy_(m_new);
  v.copy_(v_new);
  p.copy_(p_new);
}

}  // namespace

EnsembleAdamW::EnsembleAdamW(std::vector<Tensor> params, std::vector<AdamWOptions> members)
    : params_(std::move(params)), members_(std::move(members)) {
  if (members_.empty())
    throw ValueError(std::string(kName) + ": needs the options of at least one member");
  for (std::size_t k = 0; k < members_.size(); ++k) check_member(members_[k], k);
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const Tensor& p = params_[i];
    p.check_defined(kName);
    if (!is_floating(p.dtype()))
      throw DTypeError(std::string(kName) + ": parameter " + std::to_string(i) + " " +
                       p.describe() + " is not floating");
    if (p.dim() == 0 || p.size(0) != size())
      throw ShapeError(std::string(kName) + ": parameter " + std::to_string(i) + " " +
                       p.describe() + " is not stacked over the " + std::to_string(size()) +
                       " members (its leading dim must be the member count)");
  }
  state_.resize(params_.size());
}

const AdamWOptions& EnsembleAdamW::member(std::int64_t k) const {
  if (k < 0 || k >= size())
    throw IndexError(std::string(kName) + ": member " + std::to_string(k) +
                     " is out of range for " + std::to_string(size()) + " members");
  return members_[static_cast<std::size_t>(k)];
}

void EnsembleAdamW::set_lr(std::int64_t k, double lr) {
  member(k);
  if (!(lr >= 0.0) || !std::isfinite(lr))
    throw ValueError(std::string(kName) + ": invalid learning rate " + std::to_string(lr) +
                     " for member " + std::to_string(k) + " (must be finite and >= 0)");
  members_[static_cast<std::size_t>(k)].lr = lr;
}

void EnsembleAdamW::zero_grad() {
  for (Tensor& p : params_) p.zero_grad();
}

namespace {

// Every gradient has its parameter's shape and dtype (ShapeError naming the parameter).
void check_gradients(const std::vector<Tensor>& params) {
  for (std::size_t i = 0; i < params.size(); ++i) {
    const Tensor& g = params[i].grad();
    if (g.defined() && (g.shape() != params[i].shape() || g.dtype() != params[i].dtype()))
      throw ShapeError(std::string(kName) + ": parameter " + std::to_string(i) + " " +
                       params[i].describe() + " has gradient " + g.describe());
  }
}

// Member k's AdamW update of its slice of a stacked parameter p (gradient g, moments m and
// v, max_v for amsgrad), at step `step`: the CPU kernel, or the CUDA backend's.
void update_member(const Tensor& p, const Tensor& g, const Tensor& m, const Tensor& v,
                   const Tensor& max_v, std::int64_t step, const AdamWOptions& o, std::int64_t k,
                   std::int64_t members) {
  const detail::Hyper h = hyper_of(o);
  Tensor pk = detail::member_slice(p, k, members), gk = detail::member_slice(g, k, members),
         mk = detail::member_slice(m, k, members), vk = detail::member_slice(v, k, members);
  Tensor maxk = o.amsgrad ? detail::member_slice(max_v, k, members) : Tensor();
  if (p.device().is_cuda()) {
    cuda::backend().adam_update(
        pk, gk, mk, vk, maxk,
        {h.lr, h.beta1, h.beta2, h.eps, h.weight_decay, h.amsgrad, h.decoupled, step});
    return;
  }
  using headgrad::detail::ptr;
  headgrad::detail::dispatch_floating(p.dtype(), kName, [&]<typename T>() {
    T* const pp = ptr<T>(pk);
    const T* const pg = ptr<T>(std::as_const(gk));
    T* const pm = ptr<T>(mk);
    T* const pv = ptr<T>(vk);
    T* const pmax = o.amsgrad ? ptr<T>(maxk) : nullptr;
    headgrad::detail::parallel_for_aligned(
        pk.numel(), 64, 16384, [&](std::int64_t b, std::int64_t e) {
          detail::adam_update<T>(pp + b, pg + b, pm + b, pv + b, pmax ? pmax + b : nullptr, e - b,
                                 step, h);
        });
  });
}

}  // namespace

void EnsembleAdamW::step() {
  check_gradients(params_);
  const std::int64_t members = size();
  NoGradGuard no_grad;
  const bool amsgrad = std::any_of(members_.begin(), members_.end(),
                                   [](const AdamWOptions& o) { return o.amsgrad; });
  // On a GPU, the constants of this step for every parameter (its step count is shared).
  std::optional<DeviceConstants> constants;
  std::int64_t constants_step = -1;
  DType constants_dtype = kFloat32;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    Tensor& p = params_[i];
    const Tensor g = p.grad();
    if (!g.defined()) continue;
    ParamState& s = state_[i];
    if (s.step == 0) {
      s.exp_avg = zeros(p.shape(), p.options());
      s.exp_avg_sq = zeros(p.shape(), p.options());
    }
    s.step += 1;
    if (p.device().is_cuda() && !amsgrad) {
      if (!constants || constants_step != s.step || constants_dtype != p.dtype())
        constants.emplace(members_, s.step, p.dtype(), p.device());
      constants_step = s.step;
      constants_dtype = p.dtype();
      adamw_members_on_device(p, g, s.exp_avg, s.exp_avg_sq, *constants);
      continue;
    }
    for (std::int64_t k = 0; k < members; ++k) {
      const AdamWOptions& o = members_[static_cast<std::size_t>(k)];
      if (o.amsgrad && !s.max_exp_avg_sq.defined())
        s.max_exp_avg_sq = zeros(p.shape(), p.options());
      update_member(p, g, s.exp_avg, s.exp_avg_sq, s.max_exp_avg_sq, s.step, o, k, members);
    }
    p.impl()->storage->bump_version();
  }
}

void EnsembleAdamW::keep(const std::vector<std::int64_t>& members) {
  if (members.empty())
    throw ValueError(std::string(kName) + "::keep: at least one member must stay");
  std::vector<AdamWOptions> kept_options;
  for (std::int64_t k : members) kept_options.push_back(member(k));
  NoGradGuard no_grad;
  const Tensor index =
      from_vector<std::int64_t>(members, {static_cast<std::int64_t>(members.size())});
  auto select_members = [&](Tensor& t) {
    if (t.defined()) t = index_select(t, 0, index.to(t.device()));
  };
  for (ParamState& s : state_) {
    select_members(s.exp_avg);
    select_members(s.exp_avg_sq);
    select_members(s.max_exp_avg_sq);
  }
  members_ = std::move(kept_options);
}

StateDict EnsembleAdamW::member_state_dict(std::int64_t k) const {
  const AdamWOptions& o = member(k);
  StateDict out;
  out.insert("num_params", state_io::scalar_i64(static_cast<std::int64_t>(params_.size())));
  out.insert("lr", state_io::scalar_f64(o.lr));
  out.insert("beta1", state_io::scalar_f64(o.betas.first));
  out.insert("beta2", state_io::scalar_f64(o.betas.second));
  out.insert("eps", state_io::scalar_f64(o.eps));
  out.insert("weight_decay", state_io::scalar_f64(o.weight_decay));
  out.insert("amsgrad", state_io::scalar_i64(o.amsgrad ? 1 : 0));
  NoGradGuard no_grad;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const ParamState& s = state_[i];
    if (s.step == 0) continue;
    auto slice = [&](const Tensor& t) { return state_io::copy_of(select(t, 0, k)); };
    out.insert(state_io::key(i, "step"), state_io::scalar_i64(s.step));
    out.insert(state_io::key(i, "exp_avg"), slice(s.exp_avg));
    out.insert(state_io::key(i, "exp_avg_sq"), slice(s.exp_avg_sq));
    if (o.amsgrad) out.insert(state_io::key(i, "max_exp_avg_sq"), slice(s.max_exp_avg_sq));
  }
  return out;
}

}  // namespace headgrad::optim
