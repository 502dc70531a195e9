// How far apart two same-shaped tensors are: max-abs and L2 of their difference, the
// numbers the equivalence examples print.
#pragma once

#include <headgrad/headgrad.hpp>

#include <algorithm>
#include <cmath>

namespace headgrad::examples {

struct Difference {
  double max_abs = 0, l2 = 0;
};

inline Difference difference(const Tensor& a, const Tensor& b) {
  auto va = a.to_vector<double>(), vb = b.to_vector<double>();
  Difference d;
  for (std::size_t i = 0; i < va.size(); ++i) {
    const double e = va[i] - vb[i];
    d.l2 += e * e;
    d.max_abs = std::max(d.max_abs, std::abs(e));
  }
  d.l2 = std::sqrt(d.l2);
  return d;
}

}  // namespace headgrad::examples
