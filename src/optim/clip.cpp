// optim::clip_grad_norm_ and grad_norm (see optim/clip.hpp): per-parameter p-norms
// accumulated in double on raw pointers, combined into the total as torch does.
#include "headgrad/optim/clip.hpp"

#include <cmath>
#include <string>

#include "core/dispatch.hpp"
#include "headgrad/autograd/grad_mode.hpp"
#include "headgrad/core/error.hpp"
#include "headgrad/ops/elementwise.hpp"
#include "headgrad/ops/reduce.hpp"
#include "headgrad/ops/shape_ops.hpp"
#include "optim/member_slice.hpp"

namespace headgrad::optim {

namespace {

void check_norm_type(const char* op, double norm_type) {
  if (!(norm_type > 0.0))
    throw ValueError(std::string(op) + ": invalid norm_type " + std::to_string(norm_type) +
                     " (must be > 0, or INFINITY for the max norm)");
}

// The sum of f(g[k]) in double over eight interleaved partial sums (element k goes to sum
// k % 8), added pairwise at the end: a fixed order, so the same gradient gives the same
// bits, and eight independent additions in flight instead of one chain (a serial sum made
// this 4% of a study step, bound by the adder's latency).
template <typename T, typename F>
double sum_of(const T* g, std::int64_t n, F f) {
  constexpr std::int64_t lanes = 8;
  double partial[lanes] = {};
  const std::int64_t full = n / lanes * lanes;
  for (std::int64_t k = 0; k < full; k += lanes)
    for (std::int64_t j = 0; j < lanes; ++j) partial[j] += f(static_cast<double>(g[k + j]));
  for (std::int64_t k = full; k < n; ++k) partial[k - full] += f(static_cast<double>(g[k]));
  for (std::int64_t width = lanes / 2; width >= 1; width /= 2)
    for (std::int64_t j = 0; j < width; ++j) partial[j] += partial[j + width];
  return partial[0];
}

// The p-norm of one gradient (p = inf: the largest magnitude); NaN propagates.
template <typename T>
double norm_of(const T* g, std::int64_t n, double p) {
  if (std::isinf(p)) {
    double m = 0.0;
    for (std::int64_t k = 0; k < n; ++k) {
      const double a = std::abs(static_cast<double>(g[k]));
      if (a > m || std::isnan(a)) m = a;
      if (std::isnan(m)) break;
    }
    return m;
  }
  if (p == 2.0) return std::sqrt(sum_of(g, n, [](double v) { return v * v; }));
  if (p == 1.0) return sum_of(g, n, [](double v) { return std::abs(v); });
  double sum = 0.0;
  for (std::int64_t k = 0; k < n; ++k) sum += std::pow(std::abs(static_cast<double>(g[k])), p);
  return std::pow(sum, 1.0 / p);
}

// The p-norm of the per-gradient norms (torch.norm(torch.stack(norms), p)).
// The p-norm of a device tensor, as a 0-d float64 tensor on the device (no synchronization).
Tensor device_norm(const Tensor& g, double p) {
  const Tensor a = abs(g.to(kFloat64));
  if (a.numel() == 0) return zeros({}, a.options());
  if (std::isinf(p)) return max(a);
  if (p == 2.0) return sqrt(sum(mul(a, a)));
  if (p == 1.0) return sum(a);
  return pow(sum(pow(a, p)), 1.0 / p);
}

double combine(const std::vector<double>& norms, double p) {
  return norms.empty() ? 0.0
                       : norm_of<double>(norms.data(), static_cast<std::int64_t>(norms.size()), p);
}

// Each gradient's norm, in order (GPU gradients' norms combined into one, read back once).
std::vector<double> norms_of_grads(const std::vector<Tensor>& grads, double p) {
  std::vector<double> norms;
  std::vector<Tensor> device_norms;
  for (const Tensor& g : grads) {
    if (g.device().is_cuda()) {
      NoGradGuard no_grad;
      device_norms.push_back(device_norm(g, p));
      continue;
    }
    headgrad::detail::dispatch_floating(g.dtype(), "clip_grad_norm_", [&]<typename T>() {
      norms.push_back(norm_of<T>(headgrad::detail::ptr<T>(std::as_const(g)), g.numel(), p));
    });
  }
  // The norm of norms is the norm of everything, so the GPU's part enters as one number.
  if (!device_norms.empty()) {
    NoGradGuard no_grad;
    norms.push_back(device_norm(stack(device_norms, 0), p).item());
  }
  return norms;
}

std::vector<double> norms_of(const std::vector<Tensor>& params, double p,
                             std::vector<Tensor>* grads) {
  std::vector<Tensor> defined;
  for (const Tensor& param : params) {
    param.check_defined("clip_grad_norm_");
    if (param.grad().defined()) defined.push_back(param.grad());
  }
  if (grads) *grads = defined;
  return norms_of_grads(defined, p);
}

}  // namespace

double grad_norm(const std::vector<Tensor>& params, double norm_type) {
  check_norm_type("grad_norm", norm_type);
  return combine(norms_of(params, norm_type, nullptr), norm_type);
}

double clip_grad_norm_(const std::vector<Tensor>& params, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  check_norm_type("clip_grad_norm_", norm_type);
  if (!(max_norm >= 0.0))
    throw ValueError("clip_grad_norm_: invalid max_norm " + std::to_string(max_norm) +
                     " (must be >= 0)");
  std::vector<Tensor> grads;
  const double total = combine(norms_of(params, norm_type, &grads), norm_type);
  if (error_if_nonfinite && !std::isfinite(total))
    throw ValueError("clip_grad_norm_: the total norm of order " + std::to_string(norm_type) +
                     " of the gradients is " + std::to_string(total) +
                     ", so it cannot be clipped (gradients left unchanged)");
  const double scale = max_norm / (total + 1e-6);
  // torch multiplies by min(scale, 1); multiplying by 1 changes nothing, so skip it. A NaN
  // scale (NaN total) is applied, as torch does.
  if (!(scale < 1.0) && !std::isnan(scale)) return total;
  NoGradGuard no_grad;
  for (Tensor& g : grads) {
    if (g.device().is_cuda()) {  // in place on the device, rounded as below
      g.mul_(scale);
      continue;
    }
    headgrad::detail::dispatch_floating(g.dtype(), "clip_grad_norm_", [&]<typename T>() {
      T* d = headgrad::detail::ptr<T>(g);
      const T s = static_cast<T>(scale);
      for (std::int64_t k = 0, n = g.numel(); k < n; ++k) d[k] *= s;
    });
    g.impl()->storage->bump_version();
  }
  return total;
}

namespace {

// The 2-norm clipping of every member at once on a GPU: per-member sums of squares in
// float64 (a few launches per parameter), one factor per member, one multiply per
// gradient, one read-back of the norms. Equal to the per-member path up to rounding.
std::vector<double> clip_members_on_device(const std::vector<Tensor>& grads,
                                           const std::vector<double>& max_norms) {
  const auto members = static_cast<std::int64_t>(max_norms.size());
  Tensor sum_sq;
  for (const Tensor& g : grads) {
    const Tensor g64 = reshape(g.to(kFloat64), {members, -1});
    const Tensor part = sum(mul(g64, g64), {1});
    sum_sq = sum_sq.defined() ? add(sum_sq, part) : part;
  }
  const Tensor total = sqrt(sum_sq);
  const Tensor limit = from_vector<double>(max_norms, {members}).to(total.device());
  // factor = max_norm / (total + 1e-6) where that is < 1 and max_norm > 0, else 1
  const Tensor scale = div(limit, add(total, 1e-6));
  const Tensor one = ones_like(scale);
  const Tensor factor = where(gt(limit, zeros_like(limit)), where(lt(scale, one), scale, one), one);
  for (const Tensor& g : grads) {
    Shape shape(static_cast<std::size_t>(g.dim()), 1);
    shape[0] = members;
    Tensor target = g;
    target.copy_(mul(g, reshape(factor, shape).to(g.dtype())));
  }
  return total.to(Device::cpu()).to_vector<double>();
}

}  // namespace

std::vector<double> clip_member_grad_norms_(const std::vector<Tensor>& params,
                                            const std::vector<double>& max_norms,
                                            double norm_type) {
  constexpr const char* op = "clip_member_grad_norms_";
  check_norm_type(op, norm_type);
  const auto members = static_cast<std::int64_t>(max_norms.size());
  for (double m : max_norms)
    if (!(m >= 0.0))
      throw ValueError(std::string(op) + ": invalid max_norm " + std::to_string(m) +
                       " (must be >= 0; 0 leaves that member unclipped)");
  std::vector<Tensor> grads;
  for (const Tensor& param : params) {
    param.check_defined(op);
    if (param.dim() == 0 || param.size(0) != members)
      throw ShapeError(std::string(op) + ": parameter " + param.describe() +
                       " is not stacked over the " + std::to_string(members) +
                       " members (its leading dim must be the member count)");
    if (param.grad().defined()) grads.push_back(param.grad());
  }
  NoGradGuard no_grad;
  if (!grads.empty() && grads[0].device().is_cuda() && norm_type == 2.0)
    return clip_members_on_device(grads, max_norms);
  std::vector<double> totals;
  for (std::int64_t k = 0; k < members; ++k) {
    std::vector<Tensor> member_grads;  // member k's gradients, views into the stacked ones
    for (const Tensor& g : grads) member_grads.push_back(detail::member_slice(g, k, members));
    const double total = combine(norms_of_grads(member_grads, norm_type), norm_type);
    totals.push_back(total);
    const double scale = max_norms[static_cast<std::size_t>(k)] / (total + 1e-6);
    if (max_norms[static_cast<std::size_t>(k)] == 0.0 || (!(scale < 1.0) && !std::isnan(scale)))
      continue;
    for (Tensor& g : member_grads) {
      if (g.device().is_cuda()) {
        g.mul_(scale);
        continue;
      }
      headgrad::detail::dispatch_floating(g.dtype(), op, [&]<typename T>() {
        T* d = headgrad::detail::ptr<T>(g);
        const T s = static_cast<T>(scale);
        for (std::int64_t i = 0, n = g.numel(); i < n; ++i) d[i] *= s;
      });
      g.impl()->storage->bump_version();
    }
  }
  return totals;
}

}  // namespace headgrad::optim
