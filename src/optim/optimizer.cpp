// Optimizer base (parameter checks, lr, zero_grad, gradient checks) and the state-dict
// functions every optimizer shares (see optim/optimizer.hpp and state_io.hpp).
#include "headgrad/optim/optimizer.hpp"

#include <algorithm>
#include <cmath>

#include "headgrad/autograd/grad_mode.hpp"
#include "headgrad/core/error.hpp"
#include "optim/state_io.hpp"

namespace headgrad::optim {

namespace {

std::string join(const std::vector<std::string>& items, const char* separator) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : separator) + s;
  return out;
}

}  // namespace

Optimizer::Optimizer(std::vector<Tensor> params, double lr, std::string type_name)
    : params_(std::move(params)), lr_(0.0), type_name_(std::move(type_name)) {
  if (params_.empty()) throw ValueError(type_name_ + ": got an empty parameter list");
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const Tensor& p = params_[i];
    const std::string which = type_name_ + ": parameter " + std::to_string(i);
    if (!p.defined()) throw ValueError(which + " is undefined");
    if (!is_floating(p.dtype()))
      throw ValueError(which + " " + p.describe() +
                       " is not floating (only float32 and float64 tensors can be optimized)");
    if (!p.is_leaf())
      throw ValueError(which + " " + p.describe() +
                       " is not a leaf (it was computed by an op); optimize the leaf tensors "
                       "it came from, or a detach()ed copy");
    for (std::size_t j = 0; j < i; ++j)
      if (params_[j].impl() == p.impl())
        throw ValueError(which + " is the same tensor as parameter " + std::to_string(j) +
                         " (each parameter may appear once)");
  }
  set_lr(lr);
}

void Optimizer::set_lr(double lr) {
  if (!(lr >= 0.0) || !std::isfinite(lr))
    throw ValueError(type_name_ + ": invalid learning rate " + std::to_string(lr) +
                     " (must be finite and >= 0)");
  lr_ = lr;
}

void Optimizer::zero_grad() {
  for (Tensor& p : params_) p.zero_grad();
}

std::vector<std::size_t> Optimizer::params_with_grad() const {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const Tensor g = params_[i].grad();
    if (!g.defined()) continue;
    const Tensor& p = params_[i];
    if (g.shape() != p.shape())
      throw ShapeError(type_name_ + ".step: the gradient of parameter " + std::to_string(i) +
                       " has shape " + shape_str(g.shape()) + ", the parameter " +
                       shape_str(p.shape()));
    if (g.dtype() != p.dtype())
      throw DTypeError(type_name_ + ".step: the gradient of parameter " + std::to_string(i) +
                       " is " + to_string(g.dtype()) + ", the parameter " + to_string(p.dtype()));
    out.push_back(i);
  }
  return out;
}

// --- state dicts: keys, scalars, validation -------------------------------------------

namespace state_io {

std::string key(std::size_t index, const std::string& buffer) {
  return "state." + std::to_string(index) + "." + buffer;
}

Tensor scalar_f64(double value) { return scalar_tensor(value, kFloat64); }

Tensor scalar_i64(std::int64_t value) {
  return from_vector<std::int64_t>({value}, Shape{}, kInt64);
}

Tensor copy_of(const Tensor& t) {
  NoGradGuard no_grad;
  Tensor out = empty(t.shape(), t.options());
  out.copy_(t);
  return out;
}

void check_buffer(const std::string& type_name, std::size_t index, const Tensor& param,
                  const Tensor& buffer) {
  if (!buffer.defined()) return;
  if (buffer.device() != param.device())
    throw DeviceError(type_name + ".step: parameter " + std::to_string(index) + " is on " +
                      param.device().str() + " but its optimizer state is on " +
                      buffer.device().str() +
                      " (was the model moved after the optimizer stepped? build a new optimizer, "
                      "or load a state dict, after moving)");
  if (buffer.dtype() != param.dtype() || buffer.shape() != param.shape())
    throw DTypeError(type_name + ".step: parameter " + std::to_string(index) + " is now " +
                     param.describe() + " but its optimizer state is " + buffer.describe() +
                     " (was the model converted after the optimizer stepped? build a new "
                     "optimizer, or load a state dict, after converting)");
}

std::string quoted(const std::string& key) {
  std::string out;
  out.reserve(key.size() + 2);
  out += '\'';
  out += key;
  out += '\'';
  return out;
}

std::string nonnegative(double value) {
  return value >= 0.0 && std::isfinite(value) ? "" : "must be finite and >= 0";
}

std::string unit_interval(double value) {
  return value >= 0.0 && value < 1.0 ? "" : "must be in [0, 1)";
}

StateReader::StateReader(const StateDict& state, const std::vector<Tensor>& params,
                         std::string type_name)
    : state_(state), params_(params), type_name_(std::move(type_name)) {}

const Tensor* StateReader::scalar_entry(const std::string& key, bool floating) {
  const Tensor* t = state_.find(key);
  if (!t) {
    problems_.push_back("missing key '" + key + "'");
    return nullptr;
  }
  if (!t->defined()) {
    problems_.push_back("'" + key + "' is undefined");
    return nullptr;
  }
  const bool kind_ok = floating ? is_floating(t->dtype()) : t->dtype() == kInt64;
  if (t->dim() != 0 || !kind_ok) {
    problems_.push_back("'" + key + "' is " + t->describe() + ", expected a 0-d " +
                        (floating ? "floating" : "int64") + " tensor");
    return nullptr;
  }
  return t;
}

double StateReader::real(const std::string& key, std::string (*check)(double)) {
  const Tensor* t = scalar_entry(key, true);
  if (!t) return 0.0;
  const double v = t->item();
  if (check) {
    const std::string what = check(v);
    if (!what.empty()) problems_.push_back("'" + key + "' = " + std::to_string(v) + " " + what);
  }
  return v;
}

std::int64_t StateReader::integer(const std::string& key, std::int64_t min_value) {
  const Tensor* t = scalar_entry(key, false);
  if (!t) return min_value;
  const auto v = t->item<std::int64_t>();
  if (v < min_value)
    problems_.push_back("'" + key + "' = " + std::to_string(v) +
                        " must be >= " + std::to_string(min_value));
  return v;
}

bool StateReader::flag(const std::string& key) {
  const Tensor* t = scalar_entry(key, false);
  if (!t) return false;
  const auto v = t->item<std::int64_t>();
  if (v != 0 && v != 1)
    problems_.push_back("'" + key + "' = " + std::to_string(v) + " must be 0 or 1");
  return v == 1;
}

Tensor StateReader::buffer(std::size_t index, const std::string& name, bool required,
                           BufferValues values) {
  const std::string k = key(index, name);
  const Tensor* t = state_.find(k);
  if (!t) {
    if (required) problems_.push_back("missing key '" + k + "'");
    return {};
  }
  const Tensor& p = params_[index];
  if (!t->defined()) {
    problems_.push_back("'" + k + "' is undefined");
    return {};
  }
  if (!is_floating(t->dtype())) {
    problems_.push_back("'" + k + "' is " + t->describe() + ", expected a floating tensor");
    return {};
  }
  if (t->shape() != p.shape()) {
    problems_.push_back("'" + k + "' has shape " + shape_str(t->shape()) + ", parameter " +
                        std::to_string(index) + " has shape " + shape_str(p.shape()));
    return {};
  }
  NoGradGuard no_grad;
  Tensor out = empty(p.shape(), p.options());
  out.copy_(*t);  // converts float32 <-> float64 when the saved dtype differs
  // Values: a NaN or infinity would poison every later step; a negative second moment
  // would take the square root of a negative number.
  const std::vector<double> v = out.to(Device::cpu()).to(kFloat64).to_vector<double>();
  for (std::size_t j = 0; j < v.size(); ++j) {
    if (!std::isfinite(v[j]) || (values == BufferValues::nonnegative && v[j] < 0)) {
      problems_.push_back("'" + k + "' holds " + std::to_string(v[j]) + " at flat index " +
                          std::to_string(j) +
                          (values == BufferValues::nonnegative ? ", expected finite values >= 0"
                                                               : ", expected finite values"));
      return {};
    }
  }
  return out;
}

void StateReader::check_unexpected(const std::vector<std::string>& scalar_keys,
                                   const std::vector<std::string>& buffer_names) {
  std::vector<std::string> unexpected;
  for (const auto& [k, t] : state_) {
    if (std::find(scalar_keys.begin(), scalar_keys.end(), k) != scalar_keys.end()) continue;
    bool ok = false;
    if (k.rfind("state.", 0) == 0) {
      const std::size_t dot = k.find('.', 6);
      const std::string digits = k.substr(6, dot == std::string::npos ? 0 : dot - 6);
      const bool numeric =
          !digits.empty() && digits.size() < 10 &&
          std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; });
      if (numeric && std::stoull(digits) < params_.size()) {
        const std::string name = k.substr(dot + 1);
        ok = std::find(buffer_names.begin(), buffer_names.end(), name) != buffer_names.end();
      }
    }
    if (!ok) unexpected.push_back(k);
  }
  if (!unexpected.empty()) problems_.push_back("unexpected keys: " + join(unexpected, ", "));
}

void StateReader::check_num_params() {
  const std::int64_t n = integer("num_params", 0);
  if (state_.contains("num_params") && n != static_cast<std::int64_t>(params_.size()))
    problems_.push_back("the state holds " + std::to_string(n) + " parameters, the optimizer " +
                        std::to_string(params_.size()));
}

void StateReader::throw_if_problems() const {
  if (!problems_.empty())
    throw ValueError(type_name_ + ".load_state_dict: nothing was loaded: " + join(problems_, "; "));
}

}  // namespace state_io

}  // namespace headgrad::optim
