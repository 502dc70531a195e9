// softmax and log_softmax: values against a naive closed form, gradcheck over every dim,
// masked rows (partly and fully -inf) in standard and safe mode, large inputs, float32
// agreement and error messages.
#include <cmath>
#include <limits>
#include <vector>

#include "helpers.hpp"

namespace hg = headgrad;
using hg::Shape;
using hg::Tensor;
using hg::testing::check_float32_matches_float64;
using hg::testing::check_gradcheck;
using hg::testing::param;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Calls f(first, stride, n) for every softmax row of `shape` along `dim` (>= 0): the row's
// entries are at flat offsets first + k*stride, k < n.
template <typename F>
void for_each_row(const Shape& shape, std::int64_t dim, F&& f) {
  std::int64_t outer = 1, inner = 1;
  for (std::int64_t i = 0; i < dim; ++i) outer *= shape[i];
  for (std::size_t i = dim + 1; i < shape.size(); ++i) inner *= shape[i];
  const std::int64_t n = shape.empty() ? 1 : shape[dim];
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t j = 0; j < inner; ++j) f(o * n * inner + j, inner, n);
}

// exp(x) / sum(exp(x)) per row, without the max shift (inputs are small).
std::vector<double> naive_softmax(const std::vector<double>& x, const Shape& shape,
                                  std::int64_t dim) {
  std::vector<double> y(x.size());
  for_each_row(shape, dim, [&](std::int64_t first, std::int64_t stride, std::int64_t n) {
    double total = 0;
    for (std::int64_t k = 0; k < n; ++k) total += std::exp(x[first + k * stride]);
    for (std::int64_t k = 0; k < n; ++k)
      y[first + k * stride] = std::exp(x[first + k * stride]) / total;
  });
  return y;
}

std::vector<double> naive_log_softmax(const std::vector<double>& x, const Shape& shape,
                                      std::int64_t dim) {
  std::vector<double> y(x.size());
  for_each_row(shape, dim, [&](std::int64_t first, std::int64_t stride, std::int64_t n) {
    double total = 0;
    for (std::int64_t k = 0; k < n; ++k) total += std::exp(x[first + k * stride]);
    for (std::int64_t k = 0; k < n; ++k)
      y[first + k * stride] = x[first + k * stride] - std::log(total);
  });
  return y;
}

// A bool mask of `shape` masking roughly a third of the entries at random, but never the
// first entry of a row along `dim`, so that every row keeps a finite entry.
Tensor partial_row_mask(const Shape& shape, std::int64_t dim, std::uint64_t seed) {
  hg::Generator gen(seed);
  std::vector<double> u = hg::rand(shape, hg::kFloat64, &gen).to_vector<double>();
  std::vector<bool> m(u.size());
  for (std::size_t i = 0; i < u.size(); ++i) m[i] = u[i] < 0.35;
  for_each_row(shape, dim,
               [&](std::int64_t first, std::int64_t, std::int64_t) { m[first] = false; });
  return hg::from_vector<bool>(m, shape);
}

const std::vector<Shape> kShapes = {{5}, {3, 4}, {2, 3, 4}, {2, 1, 3, 4}, {3, 2, 2, 3}};

bool any_nan(const Tensor& t) {
  for (double v : t.to_vector<double>())
    if (std::isnan(v)) return true;
  return false;
}

}  // namespace

TEST_CASE("softmax rows sum to one and match exp(x)/sum(exp(x)) over every dim") {
  for (const Shape& shape : kShapes) {
    Tensor x = param(shape, 11);
    const auto rank = static_cast<std::int64_t>(shape.size());
    for (std::int64_t dim = -rank; dim < rank; ++dim) {
      const std::int64_t d = dim < 0 ? dim + rank : dim;
      CAPTURE(hg::shape_str(shape));
      CAPTURE(dim);
      const auto xs = x.to_vector<double>();
      const auto y = hg::softmax(x, dim).to_vector<double>();
      const auto expected = naive_softmax(xs, shape, d);
      for (std::size_t i = 0; i < y.size(); ++i)
        CHECK(y[i] == doctest::Approx(expected[i]).epsilon(1e-12));
      for_each_row(shape, d, [&](std::int64_t first, std::int64_t stride, std::int64_t n) {
        double total = 0;
        for (std::int64_t k = 0; k < n; ++k) total += y[first + k * stride];
        CHECK(total == doctest::Approx(1.0).epsilon(1e-12));
      });
      const auto log_y = hg::log_softmax(x, dim).to_vector<double>();
      const auto log_expected = naive_log_softmax(xs, shape, d);
      for (std::size_t i = 0; i < y.size(); ++i)
        CHECK(log_y[i] == doctest::Approx(log_expected[i]).epsilon(1e-12));
    }
  }
}

TEST_CASE("softmax of a 0-d tensor is one and log_softmax is zero") {
  Tensor x = hg::scalar_tensor(3.5, hg::kFloat64);
  CHECK(hg::softmax(x, -1).item() == 1.0);
  CHECK(hg::log_softmax(x, 0).item() == 0.0);
}

TEST_CASE("softmax and log_softmax pass gradcheck over every dim of rank 1 to 4 tensors") {
  for (const Shape& shape : kShapes) {
    const auto rank = static_cast<std::int64_t>(shape.size());
    for (std::int64_t dim = -rank; dim < rank; ++dim) {
      CAPTURE(hg::shape_str(shape));
      CAPTURE(dim);
      Tensor x = param(shape, 21 + static_cast<std::uint64_t>(dim + 8));
      check_gradcheck([dim](const std::vector<Tensor>& in) { return hg::softmax(in[0], dim); },
                      {x});
      check_gradcheck([dim](const std::vector<Tensor>& in) { return hg::log_softmax(in[0], dim); },
                      {x});
      check_gradcheck(
          [dim](const std::vector<Tensor>& in) {
            return hg::softmax(in[0], dim, hg::SoftmaxMode::safe);
          },
          {x});
    }
  }
}

TEST_CASE("partly masked rows give masked entries zero probability and pass gradcheck") {
  for (const Shape& shape : kShapes) {
    const auto rank = static_cast<std::int64_t>(shape.size());
    for (std::int64_t d = 0; d < rank; ++d) {
      CAPTURE(hg::shape_str(shape));
      CAPTURE(d);
      Tensor mask = partial_row_mask(shape, d, 100 + d);
      Tensor x = param(shape, 31 + d);
      for (auto mode : {hg::SoftmaxMode::standard, hg::SoftmaxMode::safe}) {
        // values: masked entries are exactly 0 (softmax) / -inf (log_softmax), the rest
        // follow the closed form over the unmasked entries
        Tensor scores = hg::masked_fill(x, mask, -kInf);
        const auto s = scores.to_vector<double>();
        const auto y = hg::softmax(scores, d, mode).to_vector<double>();
        const auto log_y = hg::log_softmax(scores, d, mode).to_vector<double>();
        const auto expected = naive_softmax(s, shape, d);  // exp(-inf) = 0 naturally
        const auto m = mask.to_vector<bool>();
        for (std::size_t i = 0; i < y.size(); ++i) {
          if (m[i]) {
            CHECK(y[i] == 0.0);
            CHECK(log_y[i] == -kInf);
          } else {
            CHECK(y[i] == doctest::Approx(expected[i]).epsilon(1e-12));
            CHECK(log_y[i] == doctest::Approx(std::log(expected[i])).epsilon(1e-12));
          }
        }
        // gradients through the finite entries (log_softmax's -inf entries are replaced
        // by 0 afterwards so that the checked output is finite)
        check_gradcheck(
            [d, mode](const std::vector<Tensor>& in) {
              return hg::softmax(hg::masked_fill(in[0], in[1], -kInf), d, mode);
            },
            {x, mask});
        check_gradcheck(
            [d, mode](const std::vector<Tensor>& in) {
              Tensor out = hg::log_softmax(hg::masked_fill(in[0], in[1], -kInf), d, mode);
              return hg::masked_fill(out, in[1], 0.0);
            },
            {x, mask});
      }
    }
  }
}

TEST_CASE("softmax gives no gradient to -inf entries of a partly masked row") {
  Tensor x = hg::from_vector<double>({0.5, -kInf, 1.0, -kInf, 2.0, 0.0}, {2, 3}, hg::kFloat64)
                 .requires_grad_(true);
  Tensor y = hg::softmax(x, -1);
  y.backward(hg::from_vector<double>({1, 2, 3, 4, 5, 6}, {2, 3}));
  const auto g = x.grad().to_vector<double>();
  CHECK(g[1] == 0.0);
  CHECK(g[3] == 0.0);
  CHECK_FALSE(any_nan(x.grad()));
}

TEST_CASE("safe mode gives zero outputs and gradients for fully masked rows, standard mode NaN") {
  // (2,3,4): softmax over the last dim (contiguous rows) and over dim 1 (inner > 1).
  const Shape shape{2, 3, 4};
  for (std::int64_t d : {2, 1}) {
    CAPTURE(d);
    // mask every entry of row 0 along d, plus a few scattered entries elsewhere
    Tensor mask = partial_row_mask(shape, d, 7);
    std::vector<std::int64_t> fully_masked;
    for_each_row(shape, d, [&](std::int64_t first, std::int64_t stride, std::int64_t n) {
      if (!fully_masked.empty()) return;
      for (std::int64_t k = 0; k < n; ++k) {
        mask.data<bool>()[first + k * stride] = true;
        fully_masked.push_back(first + k * stride);
      }
    });
    Tensor x = param(shape, 41);

    // safe: zeros in the output and the gradient, no NaN anywhere
    {
      Tensor leaf = x.detach().clone().requires_grad_(true);
      Tensor y = hg::softmax(hg::masked_fill(leaf, mask, -kInf), d, hg::SoftmaxMode::safe);
      CHECK_FALSE(any_nan(y));
      for (auto i : fully_masked) CHECK(y.to_vector<double>()[i] == 0.0);
      y.backward(param(shape, 42).detach());
      CHECK_FALSE(any_nan(leaf.grad()));
      check_gradcheck(
          [d](const std::vector<Tensor>& in) {
            return hg::softmax(hg::masked_fill(in[0], in[1], -kInf), d, hg::SoftmaxMode::safe);
          },
          {x, mask});
    }
    // the gradient of softmax itself (not only masked_fill's) is zero on such a row
    {
      Tensor scores = hg::masked_fill(x, mask, -kInf).detach().requires_grad_(true);
      Tensor y = hg::softmax(scores, d, hg::SoftmaxMode::safe);
      y.backward(param(shape, 43).detach());
      const auto g = scores.grad().to_vector<double>();
      for (auto i : fully_masked) CHECK(g[i] == 0.0);
      CHECK_FALSE(any_nan(scores.grad()));
    }
    // standard: NaN on the fully masked row only
    {
      const auto y = hg::softmax(hg::masked_fill(x, mask, -kInf), d).to_vector<double>();
      std::size_t nan_count = 0;
      for (double v : y) nan_count += std::isnan(v) ? 1 : 0;
      for (auto i : fully_masked) CHECK(std::isnan(y[i]));
      CHECK(nan_count == fully_masked.size());
    }
    // log_softmax: safe mode gives -inf on the row with a zero gradient; standard mode
    // gives NaN there, as PyTorch (-inf - (-inf)), and only there
    {
      Tensor scores = hg::masked_fill(x, mask, -kInf).detach().requires_grad_(true);
      Tensor y = hg::log_softmax(scores, d, hg::SoftmaxMode::safe);
      const auto yv = y.to_vector<double>();
      for (auto i : fully_masked) CHECK(yv[i] == -kInf);
      CHECK_FALSE(any_nan(y));
      y.backward(hg::ones(shape, hg::kFloat64));
      const auto g = scores.grad().to_vector<double>();
      for (auto i : fully_masked) CHECK(g[i] == 0.0);
      CHECK_FALSE(any_nan(scores.grad()));
    }
    {
      const auto yv = hg::log_softmax(hg::masked_fill(x, mask, -kInf), d).to_vector<double>();
      std::size_t nan_count = 0;
      for (double v : yv) nan_count += std::isnan(v) ? 1 : 0;
      for (auto i : fully_masked) CHECK(std::isnan(yv[i]));
      CHECK(nan_count == fully_masked.size());
    }
  }
}

TEST_CASE("softmax and log_softmax stay finite and exact for inputs of size 1000") {
  for (auto dtype : {hg::kFloat64, hg::kFloat32}) {
    Tensor x = hg::from_vector<double>({1000, -1000, 999, 0}, {4}).to(dtype);
    const auto y = hg::softmax(x, 0).to_vector<double>();
    const auto log_y = hg::log_softmax(x, 0).to_vector<double>();
    // closed form with the shift done by hand: exp(0), exp(-2000), exp(-1), exp(-1000)
    const double total = 1.0 + std::exp(-1.0);
    const std::vector<double> expected{1.0 / total, 0.0, std::exp(-1.0) / total, 0.0};
    const std::vector<double> log_expected{-std::log(total), -2000 - std::log(total),
                                           -1 - std::log(total), -1000 - std::log(total)};
    for (std::size_t i = 0; i < 4; ++i) {
      CHECK(std::isfinite(y[i]));
      CHECK(std::isfinite(log_y[i]));
      CHECK(y[i] == doctest::Approx(expected[i]).epsilon(1e-6));
      CHECK(log_y[i] == doctest::Approx(log_expected[i]).epsilon(1e-6));
    }
    // the same along a non-last dim
    Tensor col = hg::reshape(x, {4, 1});
    const auto y_col = hg::softmax(col, 0).to_vector<double>();
    for (std::size_t i = 0; i < 4; ++i)
      CHECK(y_col[i] == doctest::Approx(expected[i]).epsilon(1e-6));
  }
}

TEST_CASE("softmax and log_softmax agree between float32 and float64") {
  for (std::int64_t dim : {-1, 1, 0}) {
    CAPTURE(dim);
    Tensor x = param({3, 17, 5}, 51);
    check_float32_matches_float64(
        [dim](const std::vector<Tensor>& in) { return hg::softmax(in[0], dim); }, {x});
    check_float32_matches_float64(
        [dim](const std::vector<Tensor>& in) { return hg::log_softmax(in[0], dim); }, {x});
    Tensor mask = partial_row_mask({3, 17, 5}, dim < 0 ? 2 : dim, 52);
    check_float32_matches_float64(
        [dim](const std::vector<Tensor>& in) {
          return hg::softmax(hg::masked_fill(in[0], in[1], -kInf), dim, hg::SoftmaxMode::safe);
        },
        {x, mask});
  }
}

TEST_CASE("softmax rejects a dim out of range naming the op and the shape") {
  Tensor x = hg::zeros({2, 3});
  std::string msg = HG_ERROR_MESSAGE(hg::softmax(x, 2));
  CHECK(msg.find("softmax") != std::string::npos);
  CHECK(msg.find("(2,3)") != std::string::npos);
  CHECK(msg.find("dim 2") != std::string::npos);
  CHECK_THROWS_AS(hg::softmax(x, 2), hg::IndexError);
  msg = HG_ERROR_MESSAGE(hg::log_softmax(x, -3));
  CHECK(msg.find("log_softmax") != std::string::npos);
  CHECK(msg.find("(2,3)") != std::string::npos);
  CHECK_THROWS_AS(hg::log_softmax(x, -3), hg::IndexError);
}

TEST_CASE("softmax rejects non-floating inputs with a DTypeError") {
  Tensor x = hg::zeros({2, 3}, hg::kInt64);
  const std::string msg = HG_ERROR_MESSAGE(hg::softmax(x, -1));
  CHECK(msg.find("softmax") != std::string::npos);
  CHECK(msg.find("int64") != std::string::npos);
  CHECK_THROWS_AS(hg::softmax(x, -1), hg::DTypeError);
}
