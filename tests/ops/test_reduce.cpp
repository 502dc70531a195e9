// Reductions: sum/mean/var/amax against naive loops over single, several, negative and
// all dims with and without keepdim; max(dim) indices and gradients; tie splitting;
// sum_to; large float32 sums; float32 agreement and error messages.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "helpers.hpp"

namespace hg = headgrad;
using hg::Shape;
using hg::Tensor;
using hg::testing::check_float32_matches_float64;
using hg::testing::check_gradcheck;
using hg::testing::check_values;
using hg::testing::param;

namespace {

// Which dims of a rank-`rank` tensor `dims` reduces (empty = all), wrapped by hand.
std::vector<bool> reduced_dims(std::size_t rank, const Shape& dims) {
  std::vector<bool> reduced(rank, dims.empty());
  for (std::int64_t d : dims) {
    if (rank == 0) continue;
    reduced[static_cast<std::size_t>(d < 0 ? d + static_cast<std::int64_t>(rank) : d)] = true;
  }
  return reduced;
}

// A naive reduction plan: the output shape, and for every input element the flat index
// of the output element it reduces into.
struct NaivePlan {
  Shape out_shape;
  std::vector<std::size_t> group;  // per input element
  std::size_t groups = 1;
  double count = 1;  // input elements per output element
};

NaivePlan naive_plan(const Shape& shape, const Shape& dims, bool keepdim) {
  const std::vector<bool> reduced = reduced_dims(shape.size(), dims);
  NaivePlan plan;
  Shape kept_sizes;  // sizes of the kept dims, in order
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (reduced[d]) {
      plan.count *= static_cast<double>(shape[d]);
      if (keepdim) plan.out_shape.push_back(1);
    } else {
      plan.out_shape.push_back(shape[d]);
      kept_sizes.push_back(shape[d]);
      plan.groups *= static_cast<std::size_t>(shape[d]);
    }
  }
  const std::int64_t n = hg::numel_of(shape);
  for (std::int64_t flat = 0; flat < n; ++flat) {
    // unravel, then ravel the kept coordinates only
    Shape index(shape.size());
    std::int64_t rest = flat;
    for (std::size_t d = shape.size(); d-- > 0;) {
      index[d] = rest % shape[d];
      rest /= shape[d];
    }
    std::size_t g = 0;
    for (std::size_t d = 0; d < shape.size(); ++d)
      if (!reduced[d])
        g = g * static_cast<std::size_t>(shape[d]) + static_cast<std::size_t>(index[d]);
    plan.group.push_back(g);
  }
  return plan;
}

std::vector<double> naive_sum(const std::vector<double>& x, const NaivePlan& plan) {
  std::vector<double> out(plan.groups, 0.0);
  for (std::size_t i = 0; i < x.size(); ++i) out[plan.group[i]] += x[i];
  return out;
}

std::vector<double> naive_mean(const std::vector<double>& x, const NaivePlan& plan) {
  std::vector<double> out = naive_sum(x, plan);
  for (double& v : out) v /= plan.count;
  return out;
}

// Two passes: the mean, then the squared deviations from it.
std::vector<double> naive_var(const std::vector<double>& x, const NaivePlan& plan,
                              std::int64_t correction) {
  const std::vector<double> m = naive_mean(x, plan);
  std::vector<double> out(plan.groups, 0.0);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double d = x[i] - m[plan.group[i]];
    out[plan.group[i]] += d * d;
  }
  for (double& v : out) v /= plan.count - static_cast<double>(correction);
  return out;
}

std::vector<double> naive_amax(const std::vector<double>& x, const NaivePlan& plan) {
  std::vector<double> out(plan.groups, -INFINITY);
  for (std::size_t i = 0; i < x.size(); ++i)
    out[plan.group[i]] = std::max(out[plan.group[i]], x[i]);
  return out;
}

struct DimsCase {
  Shape shape;
  Shape dims;
};

// Single dims, negative dims, several dims (in any order), all dims ({}), size-1 dims,
// rank 4 and 0-d tensors.
const std::vector<DimsCase> kDimsCases = {
    {{2, 3, 4}, {0}},
    {{2, 3, 4}, {1}},
    {{2, 3, 4}, {2}},
    {{2, 3, 4}, {-1}},
    {{2, 3, 4}, {-3}},
    {{2, 3, 4}, {0, 2}},
    {{2, 3, 4}, {-1, 0}},
    {{2, 3, 4}, {2, 1}},
    {{2, 3, 4}, {0, 1, 2}},
    {{2, 3, 4}, {}},
    {{3, 5}, {0}},
    {{3, 5}, {-1}},
    {{1, 4}, {0}},
    {{2, 3, 1, 4}, {1, 3}},
    {{2, 3, 1, 4}, {-2}},
    {{2, 3, 1, 4}, {0, -1, 2}},
    {{7}, {0}},
    {{}, {}},
    {{}, {0}},
    {{}, {-1}},
};

}  // namespace

TEST_CASE(
    "sum, mean, var and amax match naive loops over every dims case with and without keepdim") {
  std::uint64_t seed = 10;
  for (const DimsCase& c : kDimsCases) {
    for (bool keepdim : {false, true}) {
      CAPTURE(hg::shape_str(c.shape));
      CAPTURE(hg::shape_str(c.dims));
      CAPTURE(keepdim);
      Tensor x = param(c.shape, ++seed);
      const auto xs = x.to_vector<double>();
      const NaivePlan plan = naive_plan(c.shape, c.dims, keepdim);
      check_values(hg::sum(x, c.dims, keepdim), plan.out_shape, naive_sum(xs, plan));
      check_values(hg::mean(x, c.dims, keepdim), plan.out_shape, naive_mean(xs, plan));
      check_values(hg::amax(x, c.dims, keepdim), plan.out_shape, naive_amax(xs, plan), 0);
      for (std::int64_t correction : {0, 1}) {
        CAPTURE(correction);
        if (plan.count - static_cast<double>(correction) <= 0) continue;
        check_values(hg::var(x, c.dims, keepdim, correction), plan.out_shape,
                     naive_var(xs, plan, correction));
      }
    }
  }
}

TEST_CASE("the all-element forms sum(x), mean(x), var(x), max(x) give 0-d results") {
  Tensor x = param({3, 4, 2}, 3);
  const auto xs = x.to_vector<double>();
  const NaivePlan plan = naive_plan(x.shape(), {}, false);
  check_values(hg::sum(x), {}, naive_sum(xs, plan));
  check_values(hg::mean(x), {}, naive_mean(xs, plan));
  check_values(hg::var(x), {}, naive_var(xs, plan, 1));
  check_values(hg::var(x, {}, false, 0), {}, naive_var(xs, plan, 0));
  check_values(hg::max(x), {}, {*std::max_element(xs.begin(), xs.end())}, 0);
  // a hand-computed case: var([1,2,3,4]) = 5/3 with Bessel's correction, 5/4 without
  Tensor v = hg::tensor({1, 2, 3, 4}, hg::kFloat64);
  CHECK(hg::var(v).item() == doctest::Approx(5.0 / 3.0).epsilon(1e-15));
  CHECK(hg::var(v, {}, false, 0).item() == doctest::Approx(1.25).epsilon(1e-15));
  CHECK(hg::mean(v).item() == 2.5);
  CHECK(hg::sum(v).item() == 10.0);
}

TEST_CASE("sum, mean, var and amax pass gradcheck over every dims case with and without keepdim") {
  std::uint64_t seed = 200;
  for (const DimsCase& c : kDimsCases) {
    for (bool keepdim : {false, true}) {
      CAPTURE(hg::shape_str(c.shape));
      CAPTURE(hg::shape_str(c.dims));
      CAPTURE(keepdim);
      Tensor x = param(c.shape, ++seed);
      const Shape dims = c.dims;
      check_gradcheck([=](const std::vector<Tensor>& in) { return hg::sum(in[0], dims, keepdim); },
                      {x});
      check_gradcheck([=](const std::vector<Tensor>& in) { return hg::mean(in[0], dims, keepdim); },
                      {x});
      // random normal entries: no ties, so amax is differentiable at x
      check_gradcheck([=](const std::vector<Tensor>& in) { return hg::amax(in[0], dims, keepdim); },
                      {x});
      const double count = naive_plan(c.shape, dims, keepdim).count;
      for (std::int64_t correction : {0, 1}) {
        CAPTURE(correction);
        if (count - static_cast<double>(correction) <= 0) continue;
        check_gradcheck(
            [=](const std::vector<Tensor>& in) {
              return hg::var(in[0], dims, keepdim, correction);
            },
            {x});
      }
    }
  }
  Tensor x = param({3, 4}, 7);
  check_gradcheck([](const std::vector<Tensor>& in) { return hg::sum(in[0]); }, {x});
  check_gradcheck([](const std::vector<Tensor>& in) { return hg::mean(in[0]); }, {x});
  check_gradcheck([](const std::vector<Tensor>& in) { return hg::var(in[0]); }, {x});
  check_gradcheck([](const std::vector<Tensor>& in) { return hg::var(in[0], {}, false, 0); }, {x});
  check_gradcheck([](const std::vector<Tensor>& in) { return hg::max(in[0]); }, {x});
}

TEST_CASE("max over a dim returns values and first-occurrence indices, and passes gradcheck") {
  std::uint64_t seed = 400;
  for (const Shape& shape : {Shape{5}, Shape{3, 4}, Shape{2, 3, 4}, Shape{2, 1, 3}}) {
    const auto rank = static_cast<std::int64_t>(shape.size());
    for (std::int64_t dim = -rank; dim < rank; ++dim) {
      for (bool keepdim : {false, true}) {
        CAPTURE(hg::shape_str(shape));
        CAPTURE(dim);
        CAPTURE(keepdim);
        Tensor x = param(shape, ++seed);
        const auto xs = x.to_vector<double>();
        const NaivePlan plan = naive_plan(shape, {dim}, keepdim);
        // naive: walk the input in order and keep the first strict maximum per group
        std::vector<double> best(plan.groups, -INFINITY);
        std::vector<double> arg(plan.groups, -1);
        const std::int64_t d = dim < 0 ? dim + rank : dim;
        std::int64_t inner = 1;
        for (std::size_t i = static_cast<std::size_t>(d) + 1; i < shape.size(); ++i)
          inner *= shape[i];
        for (std::size_t i = 0; i < xs.size(); ++i) {
          if (xs[i] > best[plan.group[i]]) {
            best[plan.group[i]] = xs[i];
            arg[plan.group[i]] =
                static_cast<double>((static_cast<std::int64_t>(i) / inner) % shape[d]);
          }
        }
        hg::MaxResult r = hg::max(x, dim, keepdim);
        CHECK(r.indices.dtype() == hg::kInt64);
        check_values(r.values, plan.out_shape, best, 0);
        check_values(r.indices, plan.out_shape, arg, 0);
        check_values(hg::argmax(x, dim, keepdim), plan.out_shape, arg, 0);
        check_gradcheck(
            [=](const std::vector<Tensor>& in) { return hg::max(in[0], dim, keepdim).values; },
            {x});
      }
    }
  }
  // 0-d: the value itself, index 0
  Tensor s = hg::scalar_tensor(1.5, hg::kFloat64);
  CHECK(hg::max(s, 0).values.item() == 1.5);
  CHECK(hg::max(s, -1).indices.item() == 0.0);
}

TEST_CASE("max over a dim picks the first of tied maxima and sends the whole gradient there") {
  Tensor x = hg::from_vector<double>({1, 3, 3, 0, 2, 2, 1, 2}, {2, 4}).requires_grad_(true);
  hg::MaxResult r = hg::max(x, 1);
  CHECK(r.values.to_vector<double>() == std::vector<double>{3, 2});
  CHECK(r.indices.to_vector<std::int64_t>() == std::vector<std::int64_t>{1, 0});
  CHECK(hg::argmax(x, -1).to_vector<std::int64_t>() == std::vector<std::int64_t>{1, 0});
  r.values.backward(hg::from_vector<double>({10, 20}, {2}));
  CHECK(x.grad().to_vector<double>() == std::vector<double>{0, 10, 0, 0, 20, 0, 0, 0});
  // along dim 0 (inner stride 4): column ties resolved to row 0
  Tensor y = hg::from_vector<double>({5, 1, 7, 7, 5, 2, 7, 8}, {2, 4});
  CHECK(hg::max(y, 0).indices.to_vector<std::int64_t>() == std::vector<std::int64_t>{0, 1, 0, 1});
  CHECK_FALSE(hg::argmax(x, 1).requires_grad());
}

TEST_CASE("amax and max() split the gradient evenly between tied maxima") {
  Tensor x = hg::tensor({1, 3, 3}, hg::kFloat64).requires_grad_(true);
  Tensor m = hg::max(x);
  CHECK(m.shape() == Shape{});
  CHECK(m.item() == 3.0);
  m.backward();
  CHECK(x.grad().to_vector<double>() == std::vector<double>{0, 0.5, 0.5});

  Tensor y = hg::from_vector<double>({1, 3, 3, 5, 5, 5}, {2, 3}).requires_grad_(true);
  hg::amax(y, {1}).backward(hg::from_vector<double>({1, 6}, {2}));
  CHECK(y.grad().to_vector<double>() == std::vector<double>{0, 0.5, 0.5, 2, 2, 2});

  // over several dims: four equal maxima of a (2,2,2) block share one upstream gradient
  Tensor z = hg::from_vector<double>({4, 0, 4, 1, 4, 2, 4, 3}, {2, 2, 2}).requires_grad_(true);
  Tensor a = hg::amax(z, {0, 1}, true);
  CHECK(a.shape() == Shape{1, 1, 2});
  CHECK(a.to_vector<double>() == std::vector<double>{4, 3});
  a.backward(hg::ones({1, 1, 2}, hg::kFloat64));
  CHECK(z.grad().to_vector<double>() == std::vector<double>{0.25, 0, 0.25, 0, 0.25, 0, 0.25, 1});
}

TEST_CASE("a NaN anywhere makes amax, max() and max(dim) NaN, as in PyTorch") {
  // 37 columns: the NaN lands in the SIMD body (column 3) or in the tail (column 35)
  for (hg::DType dtype : {hg::kFloat32, hg::kFloat64}) {
    for (std::int64_t col : {3, 35}) {
      CAPTURE(hg::to_string(dtype));
      CAPTURE(col);
      Tensor x = param({3, 37}, 5).detach().to(dtype).clone();
      x.set_at({1, col}, NAN);
      CHECK(std::isnan(hg::max(x).item()));
      for (std::int64_t dim : {0, 1}) {
        const auto a = hg::amax(x, {dim}).to_vector<double>();
        const auto m = hg::max(x, dim).values.to_vector<double>();
        for (std::size_t i = 0; i < a.size(); ++i) {
          const bool has_nan = dim == 1 ? i == 1 : static_cast<std::int64_t>(i) == col;
          CHECK(std::isnan(a[i]) == has_nan);
          CHECK(std::isnan(m[i]) == has_nan);
        }
      }
    }
    // an all-NaN row is NaN, not -inf
    CHECK(std::isnan(hg::amax(hg::full({2, 9}, NAN, dtype), {1}).to_vector<double>()[0]));
  }
}

TEST_CASE("sum_to reduces a broadcast gradient back to the input shape and passes gradcheck") {
  struct SumToCase {
    Shape from, to;
  };
  const std::vector<SumToCase> cases = {
      {{2, 3, 4}, {3, 1}},    {{2, 3, 4}, {4}},       {{2, 3, 4}, {}}, {{2, 3, 4}, {1, 1, 1}},
      {{2, 3, 4}, {2, 1, 4}}, {{5, 1, 7}, {1, 1, 7}}, {{3, 4}, {1}},   {{2, 3}, {2, 3}},
  };
  std::uint64_t seed = 600;
  for (const SumToCase& c : cases) {
    CAPTURE(hg::shape_str(c.from));
    CAPTURE(hg::shape_str(c.to));
    Tensor x = param(c.from, ++seed);
    const auto xs = x.to_vector<double>();
    // naive: output element of each input element via right-aligned coordinates
    std::vector<double> expected(static_cast<std::size_t>(hg::numel_of(c.to)), 0.0);
    const std::size_t lead = c.from.size() - c.to.size();
    for (std::size_t i = 0; i < xs.size(); ++i) {
      std::int64_t rest = static_cast<std::int64_t>(i);
      Shape index(c.from.size());
      for (std::size_t d = c.from.size(); d-- > 0;) {
        index[d] = rest % c.from[d];
        rest /= c.from[d];
      }
      std::int64_t g = 0;
      for (std::size_t d = 0; d < c.to.size(); ++d)
        g = g * c.to[d] + (c.to[d] == 1 ? 0 : index[lead + d]);
      expected[static_cast<std::size_t>(g)] += xs[i];
    }
    check_values(hg::sum_to(x, c.to), c.to, expected);
    const Shape to = c.to;
    // in the identity case the output is the input leaf itself (gradient = upstream)
    check_gradcheck([to](const std::vector<Tensor>& in) { return hg::sum_to(in[0], to); }, {x});
  }
}

TEST_CASE(
    "a float32 sum of a million ones is exactly 1e6 and 4096x256 row and column sums are exact") {
  Tensor ones = hg::ones({1000000});
  CHECK(hg::sum(ones).item() == 1e6);
  CHECK(hg::sum(ones.reshape({1000, 1000}), {0, 1}).item() == 1e6);
  CHECK(hg::mean(ones).item() == 1.0);

  // small integers: every partial sum is an integer below 2^24, so float32 must be exact
  const std::int64_t rows = 4096, cols = 256;
  std::vector<float> v(static_cast<std::size_t>(rows * cols));
  std::vector<double> row_sums(rows, 0.0), col_sums(cols, 0.0);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) {
      const double e = static_cast<double>((r * 3 + c * 5) % 7 - 3);
      v[static_cast<std::size_t>(r * cols + c)] = static_cast<float>(e);
      row_sums[static_cast<std::size_t>(r)] += e;
      col_sums[static_cast<std::size_t>(c)] += e;
    }
  Tensor x = hg::from_vector<float>(v, {rows, cols});
  CHECK(hg::sum(x, {1}).to_vector<double>() == row_sums);
  CHECK(hg::sum(x, {0}).to_vector<double>() == col_sums);
  CHECK(hg::sum_to(x, {1, cols}).to_vector<double>() == col_sums);

  // random floats: float32 row sums within float32 rounding of the double sums
  hg::Generator gen(9);
  Tensor u = hg::uniform({rows, cols}, -1.0, 1.0, hg::kFloat32, &gen);
  const auto us = u.to_vector<double>();
  const auto sums = hg::sum(u, {-1}).to_vector<double>();
  for (std::int64_t r = 0; r < rows; ++r) {
    double exact = 0, magnitude = 0;
    for (std::int64_t c = 0; c < cols; ++c) {
      exact += us[static_cast<std::size_t>(r * cols + c)];
      magnitude += std::abs(us[static_cast<std::size_t>(r * cols + c)]);
    }
    CHECK(std::abs(sums[static_cast<std::size_t>(r)] - exact) <= 1e-5 * magnitude);
  }
}

TEST_CASE("sum of an empty dim is zero and its mean is NaN, as in PyTorch") {
  Tensor e = hg::zeros({0, 3}, hg::kFloat64);
  Tensor s = hg::sum(e, {0});
  CHECK(s.shape() == Shape{3});
  CHECK(s.to_vector<double>() == std::vector<double>{0, 0, 0});
  CHECK(std::isnan(hg::mean(e, {0}).to_vector<double>()[0]));
  CHECK(hg::sum(e).item() == 0.0);
}

TEST_CASE("float32 results and gradients agree with float64 for reductions") {
  const std::vector<std::pair<const char*, hg::GradcheckFn>> fns = {
      {"sum",
       [](auto& in) {
         return hg::sum(in[0], {0, 2});
       }},
      {"sum keepdim", [](auto& in) { return hg::sum(in[0], {-1}, true); }},
      {"mean", [](auto& in) { return hg::mean(in[0], {1}); }},
      {"var", [](auto& in) { return hg::var(in[0], Shape{2}); }},
      {"var all", [](auto& in) { return hg::var(in[0], {}, false, 0); }},
      {"amax",
       [](auto& in) {
         return hg::amax(in[0], {0, 1});
       }},
      {"max dim", [](auto& in) { return hg::max(in[0], 1).values; }},
      {"max", [](auto& in) { return hg::max(in[0]); }},
      {"sum_to",
       [](auto& in) {
         return hg::sum_to(in[0], {3, 1});
       }},
  };
  for (const auto& [name, fn] : fns) {
    CAPTURE(name);
    check_float32_matches_float64(fn, {param({4, 3, 20}, 31)});
  }
}

TEST_CASE("repeating a dim is a ValueError naming the op and the dims") {
  const Tensor x = hg::zeros({2, 3, 4});
  CHECK_THROWS_AS(hg::sum(x, {1, 1}), hg::ValueError);
  const std::string msg = HG_ERROR_MESSAGE(hg::sum(x, {1, -2}));
  CHECK(msg.find("sum") != std::string::npos);
  CHECK(msg.find("(1,-2)") != std::string::npos);
  CHECK_THROWS_AS(hg::mean(x, {0, -3}), hg::ValueError);
  CHECK(HG_ERROR_MESSAGE(hg::mean(x, {0, -3})).find("mean") != std::string::npos);
  CHECK_THROWS_AS(hg::var(x, Shape{2, 2}), hg::ValueError);
  CHECK(HG_ERROR_MESSAGE(hg::var(x, Shape{2, 2})).find("var") != std::string::npos);
  CHECK_THROWS_AS(hg::amax(x, {0, 0}), hg::ValueError);
  CHECK(HG_ERROR_MESSAGE(hg::amax(x, {0, 0})).find("amax") != std::string::npos);
}

TEST_CASE("a dim out of range is an IndexError naming the op") {
  const Tensor x = hg::zeros({2, 3});
  CHECK_THROWS_AS(hg::sum(x, {2}), hg::IndexError);
  const std::string msg = HG_ERROR_MESSAGE(hg::sum(x, {2}));
  CHECK(msg.find("sum") != std::string::npos);
  CHECK(msg.find("2") != std::string::npos);
  CHECK_THROWS_AS(hg::sum(x, {-3}), hg::IndexError);
  CHECK(HG_ERROR_MESSAGE(hg::mean(x, {-3})).find("mean") != std::string::npos);
  CHECK(HG_ERROR_MESSAGE(hg::var(x, Shape{5})).find("var") != std::string::npos);
  CHECK(HG_ERROR_MESSAGE(hg::amax(x, {2})).find("amax") != std::string::npos);
  CHECK_THROWS_AS(hg::max(x, 2), hg::IndexError);
  CHECK(HG_ERROR_MESSAGE(hg::max(x, -3)).find("max") != std::string::npos);
  CHECK_THROWS_AS(hg::argmax(x, 2), hg::IndexError);
  CHECK_THROWS_AS(hg::sum(hg::scalar_tensor(1.0), {1}), hg::IndexError);
}

TEST_CASE("sum_to a shape that does not broadcast to the input is a ShapeError naming both") {
  const Tensor x = hg::zeros({2, 3});
  CHECK_THROWS_AS(hg::sum_to(x, {4}), hg::ShapeError);
  const std::string msg = HG_ERROR_MESSAGE(hg::sum_to(x, {4}));
  CHECK(msg.find("sum_to") != std::string::npos);
  CHECK(msg.find("(2,3)") != std::string::npos);
  CHECK(msg.find("(4)") != std::string::npos);
  CHECK_THROWS_AS(hg::sum_to(x, {2}), hg::ShapeError);  // (2) broadcasts to (2,2), not (2,3)
  CHECK_THROWS_AS(hg::sum_to(x, {3, 2}), hg::ShapeError);
  CHECK_THROWS_AS(hg::sum_to(x, {1, 2, 3}), hg::ShapeError);  // more dims than the input
  CHECK_THROWS_AS(hg::sum_to(x, {2, 3, 1}), hg::ShapeError);
}

TEST_CASE("sum of int64 and bool tensors is an exact int64, as in PyTorch") {
  // 2^53 + 1 is not a double: a floating sum would round it.
  const std::int64_t big = (std::int64_t{1} << 53) + 1;
  const Tensor ints = hg::from_vector<std::int64_t>({big, 1, -3, 4, 5, 6}, {2, 3});
  const Tensor all = hg::sum(ints);
  CHECK(all.dtype() == hg::kInt64);
  CHECK(all.to_vector<std::int64_t>() == std::vector<std::int64_t>{big + 13});
  CHECK(hg::sum(ints, {0}).to_vector<std::int64_t>() == std::vector<std::int64_t>{big + 4, 6, 3});
  CHECK(hg::sum(ints, {1}, true).shape() == hg::Shape{2, 1});
  CHECK(hg::sum(ints, {1}).to_vector<std::int64_t>() == std::vector<std::int64_t>{big - 2, 15});
  const Tensor flags = hg::arange(5.0).gt(1.5);  // bool: F F T T T
  CHECK(hg::sum(flags).dtype() == hg::kInt64);
  CHECK(hg::sum(flags).to_vector<std::int64_t>() == std::vector<std::int64_t>{3});
}

TEST_CASE("reductions of non-floating tensors are a DTypeError naming the op") {
  const Tensor ints = hg::arange(6.0, hg::kInt64);
  CHECK(HG_ERROR_MESSAGE(hg::mean(ints, {0})).find("mean") != std::string::npos);
  CHECK(HG_ERROR_MESSAGE(hg::amax(ints, {0})).find("amax") != std::string::npos);
  CHECK_THROWS_AS(hg::max(ints, 0), hg::DTypeError);
}

TEST_CASE("var with correction at or above the count divides by zero like torch.var") {
  Tensor x = hg::from_vector<double>({1.0, 2.0}, {2});
  CHECK(std::isinf(hg::var(x, Shape{0}, false, 3).item()));
  CHECK(std::isinf(hg::var(x, Shape{0}, false, 2).item()));
  CHECK(std::isnan(hg::var(hg::ones({1}, hg::kFloat64), Shape{0}, false, 1).item()));
}

TEST_CASE("var with correction equal to the count is inf for tiny float32 deviations") {
  // torch.var([1e-30, 0], correction=2) is inf: its sum of squares (in float64) is 5e-61,
  // not 0; float32 squares underflowed to 0 and gave 0/0 = NaN.
  const Tensor x = hg::from_vector<float>({1e-30f, 0.0f}, {2});
  const Tensor v = hg::var(x, Shape{0}, false, 2);
  CHECK(v.dtype() == hg::kFloat32);
  CHECK(std::isinf(v.item()));
  CHECK(std::isinf(hg::var(x, Shape{0}, false, 3).item()));
  CHECK(std::isnan(hg::var(hg::full({2}, 1e-30), Shape{0}, false, 2).item()));  // all equal
}

TEST_CASE("amax over a non-empty dim of a tensor with another empty dim gives an empty result") {
  Tensor x = hg::zeros({0, 3}, hg::kFloat64);
  CHECK(hg::amax(x, Shape{1}).shape() == Shape{0});
  CHECK_THROWS_AS(hg::amax(x, Shape{0}), hg::ShapeError);
}
