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

// Private leaf copies of the inputs, so the caller's tensors and their .grad stay
// untouched; `diff` receives the indices of the inputs that require grad.
std::vector<Tensor> private_leaves(const std::vector<Tensor>& inputs,
                                   std::vector<std::size_t>& diff) {
  std::vector<Tensor> leaves;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& in = inputs[i];
    if (!in.defined() || !in.requires_grad()) {
      leaves.push_back(in);
      continue;
    }
    if (in.dtype() != kFloat64)
      throw DTypeError("gradcheck: input " + std::to_string(i) + " is " + detail::describe(in) +
                       "; gradcheck needs float64 inputs (central differences in float32 are "
                       "too coarse)");
    detail::check_cpu("gradcheck (it perturbs inputs element by element)", in);
    leaves.push_back(in.detach().clone().requires_grad_(true));
    diff.push_back(i);
  }
  if (diff.empty()) throw ValueError("gradcheck: no input requires grad");
  return leaves;
}

// The upstream projections v [k][output]: every one-hot of every floating output
// (full_jacobian), or num_projections seeded Gaussian ones.
std::vector<std::vector<Tensor>> projections_for(const std::vector<Tensor>& outputs,
                                                 const GradcheckOptions& options) {
  std::vector<std::vector<Tensor>> projections;
  if (options.full_jacobian) {
    for (std::size_t o = 0; o < outputs.size(); ++o) {
      if (!is_floating(outputs[o].dtype())) continue;
      for (std::int64_t e = 0; e < outputs[o].numel(); ++e) {
        std::vector<Tensor> v(outputs.size());
        v[o] = zeros(outputs[o].shape(), kFloat64);
        v[o].data<double>()[e] = 1.0;
        projections.push_back(v);
      }
    }
    return projections;
  }
  Generator gen(options.seed);
  for (int k = 0; k < options.num_projections; ++k) {
    std::vector<Tensor> v(outputs.size());
    for (std::size_t o = 0; o < outputs.size(); ++o)
      if (is_floating(outputs[o].dtype())) v[o] = randn(outputs[o].shape(), kFloat64, &gen);
    projections.push_back(v);
  }
  return projections;
}

// Analytic gradients [k][diff input]: one backward per projection, through
// autograd::grad (the leaves' .grad untouched); zeros where an input gets none.
std::vector<std::vector<Tensor>> analytic_gradients(
    const GradcheckMultiFn& fn, const std::vector<Tensor>& leaves,
    const std::vector<Tensor>& diff_inputs, const std::vector<std::vector<Tensor>>& projections) {
  std::vector<std::vector<Tensor>> analytic;
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
  return analytic;
}

// Every projection of fn(leaves), with element e of `x` set to `value`. Each evaluation is
// projected before the next perturbation: an output may share storage with its input
// (reshape, view), so it changes when the input is perturbed again.
std::vector<double> projected_at(const GradcheckMultiFn& fn, const std::vector<Tensor>& leaves,
                                 double* x, std::int64_t e, double value,
                                 const std::vector<std::vector<Tensor>>& projections) {
  x[e] = value;
  const std::vector<Tensor> outs = fn(leaves);
  std::vector<double> values;
  for (const auto& v : projections) values.push_back(project(outs, v));
  return values;
}

// Compares one element's analytic and numerical derivative and keeps the worst so far.
void compare_element(double a, double numerical, const GradcheckOptions& options, std::size_t input,
                     std::int64_t e, const Shape& shape, GradcheckResult& result) {
  const double err = std::abs(a - numerical);
  const double ratio = err / (options.atol + options.rtol * std::abs(numerical));
  if (!(ratio <= 1.0)) result.passed = false;  // NaN counts as failure
  const double score = std::isnan(ratio) ? INFINITY : ratio;
  if (result.worst_input >= 0 && !(score > result.max_ratio)) return;
  result.max_ratio = score;
  result.worst_input = static_cast<int>(input);
  result.worst_index = e;
  result.worst_multi_index = unravel_index(e, shape);
  result.analytic = a;
  result.numerical = numerical;
  result.abs_error = err;
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
  std::vector<std::size_t> diff;  // indices of inputs that require grad
  std::vector<Tensor> leaves = private_leaves(inputs, diff);
  std::vector<Tensor> outputs0;  // the output shapes
  {
    NoGradGuard no_grad;
    outputs0 = fn(leaves);
  }
  const auto projections = projections_for(outputs0, options);
  std::vector<Tensor> diff_inputs;
  for (std::size_t i : diff) diff_inputs.push_back(leaves[i]);
  const auto analytic = analytic_gradients(fn, leaves, diff_inputs, projections);

  // Numerical: central differences on each element of each differentiable input.
  GradcheckResult result;
  NoGradGuard no_grad;
  for (std::size_t j = 0; j < diff.size(); ++j) {
    Tensor& x = leaves[diff[j]];
    double* p = static_cast<double*>(x.impl()->data());
    for (std::int64_t e = 0; e < x.numel(); ++e) {
      const double original = p[e];
      const auto plus = projected_at(fn, leaves, p, e, original + options.eps, projections);
      const auto minus = projected_at(fn, leaves, p, e, original - options.eps, projections);
      p[e] = original;
      ++result.elements_checked;
      for (std::size_t k = 0; k < projections.size(); ++k)
        compare_element(analytic[k][j].data<double>()[e], (plus[k] - minus[k]) / (2 * options.eps),
                        options, diff[j], e, x.shape(), result);
    }
  }
  return result;
}

}  // namespace headgrad
