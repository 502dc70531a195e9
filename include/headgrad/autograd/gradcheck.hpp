// gradcheck: compares the gradients that backward computes with float64 central
// differences, for every element of every input that requires grad.
//
// For a function f of inputs x_1..x_n with outputs y, it draws `num_projections` random
// upstream gradients v (or, with full_jacobian, one-hot vectors for every output element),
// and checks for each v and each input element j:
//     analytic  = (J^T v)_j              from one backward pass
//     numerical = (v . f(x + eps e_j) - v . f(x - eps e_j)) / (2 eps)
// passing when |analytic - numerical| <= atol + rtol * |numerical| everywhere.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "headgrad/core/tensor.hpp"

namespace headgrad {

struct GradcheckOptions {
  double eps = 1e-6;
  double atol = 1e-5;
  double rtol = 1e-3;
  int num_projections = 2;     // random upstream gradients to try
  bool full_jacobian = false;  // check every row of the Jacobian instead
  std::uint64_t seed = 1234;   // for the random upstream gradients
};

struct GradcheckResult {
  bool passed = true;
  // Worst element over all inputs (largest error relative to its tolerance).
  int worst_input = -1;
  std::int64_t worst_index = -1;  // flat index into that input
  Shape worst_multi_index;
  double analytic = 0.0;
  double numerical = 0.0;
  double abs_error = 0.0;
  double max_ratio = 0.0;  // max over elements of abs_error / (atol + rtol*|numerical|)
  std::int64_t elements_checked = 0;
  std::string report() const;  // one readable paragraph
};

using GradcheckFn = std::function<Tensor(const std::vector<Tensor>&)>;
using GradcheckMultiFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

// Inputs must be float64 (gradcheck in float32 is meaningless); inputs that do not
// require grad (masks, indices, fixed values) are passed through unchanged.
GradcheckResult gradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs,
                          const GradcheckOptions& options = {});
GradcheckResult gradcheck(const GradcheckMultiFn& fn, const std::vector<Tensor>& inputs,
                          const GradcheckOptions& options = {});

}  // namespace headgrad
