// Reductions (ops/reduce.hpp) on the GPU against the CPU, forward and backward, in float64
// and float32: sum, mean and var over every kind of dim set (leading, trailing, middle,
// non-adjacent, negative, all) with and without keepdim; long sums; max, amax and argmax
// with ties, NaN and all -inf rows; sum_to.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "parity.hpp"

namespace hg = headgrad;
using hg::Shape;
using hg::Tensor;
using namespace hg::cuda_testing;
using V = std::vector<Tensor>;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Dim sets of a 4-d tensor: one dim anywhere, several (adjacent or not), negative, all.
const std::vector<Shape> kDimSets = {{0},    {1},      {3},    {-1},         {0, 2},
                                     {1, 2}, {-3, -1}, {0, 3}, {0, 1, 2, 3}, {}};

std::string dims_name(const Shape& dims, bool keepdim) {
  return "dims " + hg::shape_str(dims) + (keepdim ? " keepdim" : "");
}

}  // namespace

TEST_CASE("sum, mean and var on the GPU match the CPU over every kind of dim set") {
  const Tensor x = grad_input(random({3, 5, 7, 9}, 600));
  for (const Shape& dims : kDimSets) {
    for (bool keepdim : {false, true}) {
      const std::string name = dims_name(dims, keepdim);
      CAPTURE(name);
      check_parity("sum", [&](const V& in) { return hg::sum(in[0], dims, keepdim); }, {x});
      check_parity("mean", [&](const V& in) { return hg::mean(in[0], dims, keepdim); }, {x});
      check_parity("var", [&](const V& in) { return hg::var(in[0], dims, keepdim); }, {x});
      check_parity("var without correction",
                   [&](const V& in) { return hg::var(in[0], dims, keepdim, 0); }, {x});
    }
  }
  check_parity("sum of all", [](const V& in) { return hg::sum(in[0]); }, {x});
  check_parity("mean of all", [](const V& in) { return hg::mean(in[0]); }, {x});
  check_parity("var of all", [](const V& in) { return hg::var(in[0]); }, {x});
  check_parity("tensor methods sum and mean",
               [](const V& in) { return in[0].sum({1}) * 2.0 + in[0].mean({1}, false); }, {x});
  // A 0-d tensor and a size-1 dim reduce to themselves.
  check_parity("sum of a 0-d tensor", [](const V& in) { return hg::sum(in[0]); },
               {grad_input(random({}, 601))});
  check_parity("sum over a size-1 dim", [](const V& in) { return hg::sum(in[0], {1}); },
               {grad_input(random({4, 1, 3}, 602))});
  // An offset (mean 100) makes var cancel: the GPU must center as the CPU does.
  check_parity(
      "var of offset data", [](const V& in) { return hg::var(in[0], {1}); },
      {grad_input(hg::add(random({6, 300}, 603), 100.0))}, tolerances(1e-12, 2e-4));
}

TEST_CASE("long sums on the GPU match the CPU to the accuracy of their dtype") {
  // 2^17 and 10^6 + 1 elements (more than one block, a ragged tail). The tolerance is
  // relative to sqrt(n), the size of the sum of n standard normal values: float32 sums in
  // two different orders drift apart by a few ulp of the partial sums (measured on the
  // CPU: float32 is 1.3e-3 from float64 for n = 10^6, against 0.1 allowed). Gradients
  // only spread the loss weights: normwise 1e-5.
  const Tols kGradients{1e-12, 1e-5, kNormwise};
  for (std::int64_t n : {std::int64_t{1} << 17, std::int64_t{1000001}}) {
    CAPTURE(n);
    const Tensor x = grad_input(random({n}, 610));
    const double root = std::sqrt(static_cast<double>(n));
    check_parity(
        "sum of all", [](const V& in) { return hg::sum(in[0]); }, {x},
        tolerances(1e-12, 1e-4, root).with_backward(kGradients));
    check_parity(
        "mean of all", [](const V& in) { return hg::mean(in[0]); }, {x},
        tolerances(1e-12, 1e-4, 1.0 / root).with_backward(kGradients));
    // var squares deviations from a float32 mean: on the CPU alone, float32 is 2e-5 away
    // from float64 for n = 10^6.
    check_parity(
        "var of all", [](const V& in) { return hg::var(in[0]); }, {x},
        tolerances(1e-12, 3e-4).with_backward(kGradients));
  }
  // Long rows and long columns of a matrix.
  const Tensor m = grad_input(random({64, 4099}, 611));
  for (std::int64_t dim : {0, 1}) {
    CAPTURE(dim);
    check_parity(
        "sum over a long dim", [&](const V& in) { return hg::sum(in[0], {dim}); }, {m},
        tolerances(1e-12, 1e-4, 64.0).with_backward(kGradients));
  }
}

TEST_CASE("max, amax and argmax on the GPU match the CPU, ties included") {
  // Integers in [-2, 2]: every row has tied maxima.
  const Tensor ties = grad_input(random_integers({4, 6, 5}, 620));
  for (std::int64_t dim : {0, 1, 2, -1}) {
    for (bool keepdim : {false, true}) {
      CAPTURE(dim);
      CAPTURE(keepdim);
      // values and the index of the first maximum; the gradient goes to that index only.
      check_parity_multi("max over a dim",
                         [&](const V& in) {
                           hg::MaxResult r = hg::max(in[0], dim, keepdim);
                           return V{r.values, r.indices};
                         },
                         {ties});
      check_parity("argmax", [&](const V& in) { return hg::argmax(in[0], dim, keepdim); }, {ties});
    }
  }
  // The gradient of the global max and of amax is split evenly between tied maxima.
  check_parity("max of all", [](const V& in) { return hg::max(in[0]); }, {ties});
  for (const Shape& dims : std::vector<Shape>{{0}, {2}, {0, 2}, {-2, -1}, {}}) {
    for (bool keepdim : {false, true}) {
      const std::string name = dims_name(dims, keepdim);
      CAPTURE(name);
      check_parity("amax", [&](const V& in) { return hg::amax(in[0], dims, keepdim); }, {ties});
    }
  }
  const Tensor distinct = grad_input(random({33, 129}, 621));
  check_parity_multi("max over a long dim",
                     [](const V& in) {
                       hg::MaxResult r = hg::max(in[0], 1);
                       return V{r.values, r.indices, hg::argmax(in[0], 0)};
                     },
                     {distinct});
}

TEST_CASE("max, amax and argmax on the GPU treat NaN and all -inf rows as the CPU does") {
  // Rows: a NaN in the middle, NaN first, all -inf, -inf and a number, inf twice.
  const Tensor x = hg::from_vector<double>({1,     kNaN,  3,     2,      //
                                            kNaN,  5,     1,     0,      //
                                            -kInf, -kInf, -kInf, -kInf,  //
                                            -kInf, -7,    -kInf, -kInf,  //
                                            kInf,  0,     kInf,  1},
                                           {5, 4});
  check_parity_multi("max and argmax over rows",
                     [](const V& in) {
                       hg::MaxResult r = hg::max(in[0], 1);
                       return V{r.values, r.indices, hg::argmax(in[0], 1), hg::amax(in[0], {1})};
                     },
                     {x});
  check_parity_multi("max and argmax over columns",
                     [](const V& in) {
                       hg::MaxResult r = hg::max(in[0], 0);
                       return V{r.values, r.indices, hg::argmax(in[0], 0), hg::max(in[0])};
                     },
                     {x});
}

TEST_CASE("sum_to on the GPU reduces broadcast dims as the CPU does") {
  const Tensor x = grad_input(random({2, 3, 4, 5}, 630));
  for (const Shape& target :
       std::vector<Shape>{{2, 3, 4, 5}, {3, 4, 5}, {5}, {4, 1}, {2, 1, 4, 1}, {1, 1}, {}}) {
    const std::string name = hg::shape_str(target);
    CAPTURE(name);
    check_parity("sum_to", [&](const V& in) { return hg::sum_to(in[0], target); }, {x});
  }
}
