// optim::SGD: the update loop on raw pointers (float32, float64) and its state dict (see
// optim/sgd.hpp for the formulas, which follow torch.optim.SGD line by line).
#include "headgrad/optim/sgd.hpp"

#include <cmath>

#include "core/cuda_backend.hpp"
#include "core/dispatch.hpp"
#include "headgrad/autograd/grad_mode.hpp"
#include "headgrad/core/error.hpp"
#include "optim/state_io.hpp"

namespace headgrad::optim {

namespace {

void check_options(const SGDOptions& o, const std::string& who) {
  auto bad = [&](const char* name, double v, const char* rule) {
    throw ValueError(who + ": invalid " + name + " " + std::to_string(v) + " (" + rule + ")");
  };
  if (!state_io::nonnegative(o.momentum).empty()) bad("momentum", o.momentum, "must be >= 0");
  if (!std::isfinite(o.dampening)) bad("dampening", o.dampening, "must be finite");
  if (!state_io::nonnegative(o.weight_decay).empty())
    bad("weight_decay", o.weight_decay, "must be >= 0");
  if (o.nesterov && (o.momentum <= 0.0 || o.dampening != 0.0))
    throw ValueError(
        who + ": nesterov momentum requires momentum > 0 and dampening 0 (got momentum " +
        std::to_string(o.momentum) + ", dampening " + std::to_string(o.dampening) + ")");
}

// One parameter's update; `buf` is null when momentum is 0, `first` when it is created now.
template <typename T>
void sgd_update(T* p, const T* g, T* buf, bool first, std::int64_t n, const SGDOptions& o,
                double lr) {
  const T weight_decay = static_cast<T>(o.weight_decay);
  const T momentum = static_cast<T>(o.momentum);
  const T one_minus_dampening = static_cast<T>(1.0 - o.dampening);
  const T neg_lr = static_cast<T>(-lr);
  const bool decay = o.weight_decay != 0.0;
  for (std::int64_t k = 0; k < n; ++k) {
    T d = g[k];
    if (decay) d = d + weight_decay * p[k];  // d_p = d_p.add(param, alpha=weight_decay)
    if (buf) {
      if (first) {
        buf[k] = d;  // buf = clone(d_p)
      } else {
        T b = buf[k] * momentum;          // buf.mul_(momentum)
        b = b + one_minus_dampening * d;  //    .add_(d_p, alpha=1 - dampening)
        buf[k] = b;
      }
      d = o.nesterov ? d + momentum * buf[k] : buf[k];
    }
    p[k] = p[k] + neg_lr * d;  // param.add_(d_p, alpha=-lr)
  }
}

}  // namespace

SGD::SGD(std::vector<Tensor> params, const SGDOptions& options)
    : Optimizer(std::move(params), options.lr, "SGD"), options_(options) {
  check_options(options_, type_name_);
  momentum_buffers_.resize(params_.size());
}

SGDOptions SGD::options() const {
  SGDOptions o = options_;
  o.lr = lr_;
  return o;
}

void SGD::step() {
  const std::vector<std::size_t> active = params_with_grad();
  for (std::size_t i : active)
    state_io::check_buffer(type_name_, i, params_[i], momentum_buffers_[i]);
  NoGradGuard no_grad;
  for (std::size_t i : active) {
    Tensor& p = params_[i];
    const Tensor g = p.grad();
    Tensor& buf = momentum_buffers_[i];
    const bool first = options_.momentum != 0.0 && !buf.defined();
    if (first) buf = empty(p.shape(), p.options());
    if (p.device().is_cuda()) {
      cuda::backend().sgd_update(p, g, buf,
                                 {lr_, options_.momentum, options_.dampening, options_.weight_decay,
                                  options_.nesterov, first});
      p.impl()->storage->bump_version();
      continue;
    }
    headgrad::detail::dispatch_floating(p.dtype(), type_name_.c_str(), [&]<typename T>() {
      sgd_update<T>(headgrad::detail::ptr<T>(p), headgrad::detail::ptr<T>(g),
                    options_.momentum != 0.0 ? headgrad::detail::ptr<T>(buf) : nullptr, first,
                    p.numel(), options_, lr_);
    });
    p.impl()->storage->bump_version();
  }
}

StateDict SGD::state_dict() const {
  StateDict out;
  out.insert("num_params", state_io::scalar_i64(static_cast<std::int64_t>(params_.size())));
  out.insert("lr", state_io::scalar_f64(lr_));
  out.insert("momentum", state_io::scalar_f64(options_.momentum));
  out.insert("dampening", state_io::scalar_f64(options_.dampening));
  out.insert("weight_decay", state_io::scalar_f64(options_.weight_decay));
  out.insert("nesterov", state_io::scalar_i64(options_.nesterov ? 1 : 0));
  for (std::size_t i = 0; i < params_.size(); ++i)
    if (momentum_buffers_[i].defined())
      out.insert(state_io::key(i, "momentum_buffer"), state_io::copy_of(momentum_buffers_[i]));
  return out;
}

void SGD::load_state_dict(const StateDict& state) {
  state_io::StateReader in(state, params_, type_name_);
  in.check_num_params();
  SGDOptions o;
  o.lr = in.real("lr", state_io::nonnegative);
  o.momentum = in.real("momentum", state_io::nonnegative);
  o.dampening = in.real("dampening");
  o.weight_decay = in.real("weight_decay", state_io::nonnegative);
  o.nesterov = in.flag("nesterov");
  in.check_unexpected({"num_params", "lr", "momentum", "dampening", "weight_decay", "nesterov"},
                      {"momentum_buffer"});
  std::vector<Tensor> buffers(params_.size());
  for (std::size_t i = 0; i < params_.size(); ++i)
    buffers[i] = in.buffer(i, "momentum_buffer", /*required=*/false);
  in.throw_if_problems();
  try {
    check_options(o, type_name_ + ".load_state_dict");
  } catch (const ValueError& e) {
    throw ValueError(std::string(e.what()) + "; nothing was loaded");
  }
  options_ = o;
  lr_ = o.lr;
  momentum_buffers_ = std::move(buffers);
}

}  // namespace headgrad::optim
