// gradcheck: float64 central differences against backward (see the header for the method).
#include "headgrad/autograd/gradcheck.hpp"

#include <cmath>
#include <sstream>

#include "core/dispatch.hpp"
#include "headgrad/autograd/function.hpp"
#include "headgrad/autograd/grad_mode.hpp"
#include "headgrad/core/generator.hpp"

namespace headgrad {

std::string GradcheckResult::report() const {
  std::ostringstream os;
  os << "gradcheck " << (passed ? "passed" : "FAILED") << " (" << elements_checked
     << " input elements checked)";
  if (worst_input >= 0) {
    os << "; worst element: input " << worst_input << " index " << shape_str(worst_multi_index)
       << " (flat " << worst_index << "): analytic " << analytic << ", numerical " << numerical
       << ", abs error " << abs_error << ", error/tolerance " << max_ratio;
  }
  return os.str();
}

namespace {

// sum over outputs of sum(out * v) in float64, as a plain number.
double project(const std::vector<Tensor>& outputs, const std::vector<Tensor>& v) {
  double total = 0;
  for (std::size_t o = 0; o < outputs.size(); ++o) {
    if (!v[o].defined()) continue;
    auto out = outputs[o].to_vector<double>();
    const double* w = v[o].data<double>();
    for (std::size_t i = 0; i < out.size(); ++i) total += out[i] * w[i];
  }
  return total;
}

}  // namespace

GradcheckResult gradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs,
                          const GradcheckOptions& options) {
  return gradcheck(
      GradcheckMultiFn([&](const std::vector<Tensor>& in) { return std::vector<Tensor>{fn(in)}; }),
      inputs, options);
}

GradcheckResult gradcheck(const GradcheckMultiFn& fn, const std::vector<Tensor>& inputs,
                          const GradcheckOptions& options) {
  // Private leaf copies, so the caller's tensors and their .grad stay untouched.
  std::vector<Tensor> leaves;
  std::vector<std::size_t> diff;  // indices of inputs that require grad
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& in = inputs[i];
    if (!in.defined()) {
      leaves.push_back(in);
      continue;
    }
    if (in.requires_grad()) {
      if (in.dtype() != kFloat64)
        throw DTypeError("gradcheck: input " + std::to_string(i) + " is " + detail::describe(in) +
                         "; gradcheck needs float64 inputs (central differences in float32 are "
                         "too coarse)");
      detail::check_cpu("gradcheck (it perturbs inputs element by element)", in);
      leaves.push_back(in.detach().clone().requires_grad_(true));
      diff.push_back(i);
    } else {
      leaves.push_back(in);
    }
  }
  if (diff.empty()) throw ValueError("gradcheck: no input requires grad");

  // Output shapes, and the upstream projections.
  std::vector<Tensor> outputs0;
  {
    NoGradGuard no_grad;
    outputs0 = fn(leaves);
  }
  Generator gen(options.seed);
  std::vector<std::vector<Tensor>> projections;  // [k][output]
  if (options.full_jacobian) {
    for (std::size_t o = 0; o < outputs0.size(); ++o) {
      if (!is_floating(outputs0[o].dtype())) continue;
      for (std::int64_t e = 0; e < outputs0[o].numel(); ++e) {
        std::vector<Tensor> v(outputs0.size());
        v[o] = zeros(outputs0[o].shape(), kFloat64);
        v[o].data<double>()[e] = 1.0;
        projections.push_back(v);
      }
    }
  } else {
    for (int k = 0; k < options.num_projections; ++k) {
      std::vector<Tensor> v(outputs0.size());
      for (std::size_t o = 0; o < outputs0.size(); ++o)
        if (is_floating(outputs0[o].dtype())) v[o] = randn(outputs0[o].shape(), kFloat64, &gen);
      projections.push_back(v);
    }
  }

  // Analytic: one backward per projection, through autograd::grad (leaves' .grad untouched).
  std::vector<std::vector<Tensor>> analytic;  // [k][diff input]
  std::vector<Tensor> diff_inputs;
  for (std::size_t i : diff) diff_inputs.push_back(leaves[i]);
  for (const auto& v : projections) {
    std::vector<Tensor> outs = fn(leaves);
    std::vector<Tensor> roots, grads;
    for (std::size_t o = 0; o < outs.size(); ++o) {
      if (!v[o].defined() || !outs[o].requires_grad()) continue;
      roots.push_back(outs[o]);
      grads.push_back(v[o].to(outs[o].dtype()));
    }
    std::vector<Tensor> g;
    if (!roots.empty())
      g = autograd::grad(roots, diff_inputs, grads);
    else
      g.resize(diff_inputs.size());
    for (std::size_t j = 0; j < g.size(); ++j)
      if (!g[j].defined()) g[j] = zeros(diff_inputs[j].shape(), kFloat64);
    analytic.push_back(g);
  }

  // Numerical: perturb each element of each differentiable input.
  GradcheckResult result;
  NoGradGuard no_grad;
  for (std::size_t j = 0; j < diff.size(); ++j) {
    Tensor& x = leaves[diff[j]];
    double* p = static_cast<double*>(x.impl()->data());
    for (std::int64_t e = 0; e < x.numel(); ++e) {
      const double original = p[e];
      // Project each evaluation before the next perturbation: an output may share storage
      // with its input (reshape, view), so it changes when the input is perturbed again.
      std::vector<double> plus(projections.size()), minus(projections.size());
      p[e] = original + options.eps;
      {
        const std::vector<Tensor> outs = fn(leaves);
        for (std::size_t k = 0; k < projections.size(); ++k)
          plus[k] = project(outs, projections[k]);
      }
      p[e] = original - options.eps;
      {
        const std::vector<Tensor> outs = fn(leaves);
        for (std::size_t k = 0; k < projections.size(); ++k)
          minus[k] = project(outs, projections[k]);
      }
      p[e] = original;
      ++result.elements_checked;
      for (std::size_t k = 0; k < projections.size(); ++k) {
        const double numerical = (plus[k] - minus[k]) / (2 * options.eps);
        const double a = analytic[k][j].data<double>()[e];
        const double err = std::abs(a - numerical);
        const double ratio = err / (options.atol + options.rtol * std::abs(numerical));
        const bool bad = !(ratio <= 1.0);  // NaN counts as failure
        if (bad) result.passed = false;
        const double score = std::isnan(ratio) ? INFINITY : ratio;
        if (result.worst_input < 0 || score > result.max_ratio) {
          result.max_ratio = score;
          result.worst_input = static_cast<int>(diff[j]);
          result.worst_index = e;
          result.worst_multi_index = unravel_index(e, x.shape());
          result.analytic = a;
          result.numerical = numerical;
          result.abs_error = err;
        }
      }
    }
  }
  return result;
}

}  // namespace headgrad
