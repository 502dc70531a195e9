// index_select, embedding and one_hot: forward against loops written here, gradients
// against central differences (repeated indices included), closed-form gradient counts,
// float32 against float64, and the out-of-range messages.
#include <numeric>
#include <string>
#include <vector>

#include "helpers.hpp"

using namespace headgrad;
using testing::check_float32_matches_float64;
using testing::check_gradcheck;
using testing::param;

namespace {

Tensor indices(const std::vector<std::int64_t>& values, const Shape& shape) {
  return from_vector<std::int64_t>(values, shape);
}

Tensor iota(const Shape& shape, DType dtype = kFloat64) {
  std::vector<double> values(static_cast<std::size_t>(numel_of(shape)));
  std::iota(values.begin(), values.end(), 0.0);
  if (dtype == kBool)
    for (auto& v : values) v = static_cast<double>(static_cast<std::int64_t>(v) % 2);
  return from_vector<double>(values, shape).to(dtype);
}

// y[a, k, b] = x[a, index[k], b] for x viewed as (outer, size, inner) around dim.
std::vector<double> naive_index_select(const Tensor& x, std::size_t dim,
                                       const std::vector<std::int64_t>& index) {
  std::int64_t outer = 1, inner = 1;
  for (std::size_t d = 0; d < dim; ++d) outer *= x.shape()[d];
  for (std::size_t d = dim + 1; d < x.shape().size(); ++d) inner *= x.shape()[d];
  const std::int64_t size = x.shape()[dim];
  const auto v = x.to_vector<double>();
  std::vector<double> out;
  for (std::int64_t a = 0; a < outer; ++a)
    for (std::int64_t i : index)
      for (std::int64_t b = 0; b < inner; ++b)
        out.push_back(v[static_cast<std::size_t>((a * size + i) * inner + b)]);
  return out;
}

}  // namespace

TEST_CASE("index_select gathers the rows index arithmetic gathers, repeats included") {
  Tensor x = iota({3, 4, 2});
  const std::vector<std::int64_t> idx = {3, 0, 3, 1, 3};
  Tensor index = indices(idx, {5});
  Tensor y = index_select(x, 1, index);
  CHECK(y.shape() == Shape{3, 5, 2});
  CHECK(y.to_vector<double>() == naive_index_select(x, 1, idx));
  CHECK(index_select(x, -3, indices({2, 2}, {2})).to_vector<double>() ==
        naive_index_select(x, 0, {2, 2}));
  CHECK(index_select(x, -1, indices({1}, {1})).to_vector<double>() ==
        naive_index_select(x, 2, {1}));
  CHECK(index_select(x, 0, indices({}, {0})).shape() == Shape{0, 4, 2});
  CHECK(index_select(x, 1, indices({2}, {})).shape() == Shape{3, 1, 2});  // 0-d index
  for (DType dtype : {kFloat32, kInt64, kBool}) {
    Tensor xt = iota({4, 3}, dtype);
    CHECK(index_select(xt, 0, index).dtype() == dtype);
    CHECK(index_select(xt, 0, index).to_vector<double>() == naive_index_select(xt, 0, idx));
  }
}

TEST_CASE("index_select scatter-adds its gradient, so repeated indices accumulate") {
  check_gradcheck(
      [](const std::vector<Tensor>& t) {
        return index_select(t[0], 1, indices({3, 0, 3, 1}, {4}));
      },
      {param({2, 4, 3}, 1)});
  check_gradcheck(
      [](const std::vector<Tensor>& t) {
        return index_select(t[0], 0, indices({1, 1, 1}, {3}));
      },
      {param({2}, 2)});
  check_gradcheck(
      [](const std::vector<Tensor>& t) {
        return index_select(t[0], -1, indices({0, 2}, {2}));
      },
      {param({1, 3}, 3)});
  // Closed form: d sum(index_select(x, 0, idx)) / dx[i] = number of times i appears.
  Tensor x = param({4}, 4);
  index_select(x, 0, indices({2, 0, 2, 2}, {4})).sum().backward();
  CHECK(x.grad().to_vector<double>() == std::vector<double>{1, 0, 3, 0});
  check_float32_matches_float64(
      [](const std::vector<Tensor>& t) {
        return index_select(t[0], 1, indices({2, 2, 0}, {3}));
      },
      {param({3, 4}, 5)});
}

TEST_CASE("index_select out of range names the op, the index and the size") {
  Tensor x = iota({3, 4});
  std::string msg = HG_ERROR_MESSAGE(index_select(x, 1, indices({0, 4}, {2})));
  CHECK(msg.find("index_select") != std::string::npos);
  CHECK(msg.find("index 4") != std::string::npos);
  CHECK(msg.find("size 4") != std::string::npos);
  CHECK(msg.find("(3,4)") != std::string::npos);
  CHECK_THROWS_AS(index_select(x, 0, indices({-1}, {1})), IndexError);
  CHECK_THROWS_AS(index_select(x, 2, indices({0}, {1})), IndexError);
  CHECK_THROWS_AS(index_select(x, 0, iota({2})), DTypeError);
  CHECK_THROWS_AS(index_select(x, 0, indices({0, 1}, {1, 2})), ShapeError);
}

TEST_CASE("embedding looks up weight rows for indices of any shape") {
  Tensor weight = iota({5, 3});
  Tensor idx = indices({4, 0, 4, 2, 1, 4}, {2, 3});
  Tensor y = embedding(weight, idx);
  REQUIRE(y.shape() == Shape{2, 3, 3});
  for (std::int64_t i = 0; i < 2; ++i)
    for (std::int64_t j = 0; j < 3; ++j)
      for (std::int64_t k = 0; k < 3; ++k)
        CHECK(y.at({i, j, k}) == weight.at({static_cast<std::int64_t>(idx.at({i, j})), k}));
  Tensor single = embedding(weight, indices({3}, {}));
  CHECK(single.shape() == Shape{3});
  CHECK(single.to_vector<double>() == std::vector<double>{9, 10, 11});
  // The padding row is still looked up (its values are whatever the weight holds).
  CHECK(embedding(weight, indices({1}, {1}), 1).to_vector<double>() ==
        std::vector<double>{3, 4, 5});
}

TEST_CASE("embedding gradients add up per row and skip the padding row") {
  check_gradcheck(
      [](const std::vector<Tensor>& t) {
        return embedding(t[0], indices({1, 3, 1, 0, 1, 3}, {3, 2}));
      },
      {param({4, 3}, 11)});
  check_gradcheck([](const std::vector<Tensor>& t) { return embedding(t[0], indices({2}, {})); },
                  {param({3, 2}, 12)});
  // Closed form with padding: counts of each non-padding index, zero for the padding row.
  Tensor weight = param({4, 2}, 13);
  embedding(weight, indices({1, 0, 1, 3, 0, 1}, {6}), 0).sum().backward();
  CHECK(weight.grad().to_vector<double>() == std::vector<double>{0, 0, 3, 3, 0, 0, 1, 1});
  // Negative padding_idx counts from the end (row 3 here).
  Tensor w2 = param({4, 2}, 14);
  embedding(w2, indices({3, 2, 3}, {3}), -1).sum().backward();
  CHECK(w2.grad().to_vector<double>() == std::vector<double>{0, 0, 0, 0, 1, 1, 0, 0});
  // With the padding row held constant (as padding_idx declares it), the gradient matches
  // central differences: rows 0 and 1 vary, row 2 is the fixed padding row.
  Tensor padding_row = iota({1, 4});
  check_gradcheck(
      [&](const std::vector<Tensor>& t) {
        return embedding(concat({t[0], padding_row}, 0), indices({2, 0, 2, 1}, {2, 2}), 2);
      },
      {param({2, 4}, 15)});
  check_float32_matches_float64(
      [](const std::vector<Tensor>& t) {
        return embedding(t[0], indices({0, 2, 2}, {3}));
      },
      {param({3, 5}, 16)});
}

TEST_CASE("embedding rejects out-of-range indices, bad padding_idx and non-2-d weights") {
  Tensor weight = iota({5, 3});
  std::string msg = HG_ERROR_MESSAGE(embedding(weight, indices({1, 5}, {2})));
  CHECK(msg.find("embedding") != std::string::npos);
  CHECK(msg.find("index 5") != std::string::npos);
  CHECK(msg.find("size 5") != std::string::npos);
  CHECK_THROWS_AS(embedding(weight, indices({-1}, {1})), IndexError);
  CHECK_THROWS_AS(embedding(weight, indices({0}, {1}), 5), IndexError);
  msg = HG_ERROR_MESSAGE(embedding(iota({5}), indices({0}, {1})));
  CHECK(msg.find("embedding") != std::string::npos);
  CHECK(msg.find("(5)") != std::string::npos);
  CHECK_THROWS_AS(embedding(weight, iota({2})), DTypeError);
}

TEST_CASE("one_hot sets exactly one entry per index in the requested dtype") {
  Tensor idx = indices({2, 0, 3, 2}, {2, 2});
  Tensor y = one_hot(idx, 4);
  CHECK(y.dtype() == kFloat32);
  REQUIRE(y.shape() == Shape{2, 2, 4});
  for (std::int64_t i = 0; i < 2; ++i)
    for (std::int64_t j = 0; j < 2; ++j)
      for (std::int64_t c = 0; c < 4; ++c)
        CHECK(y.at({i, j, c}) == (idx.at({i, j}) == static_cast<double>(c) ? 1.0 : 0.0));
  CHECK(one_hot(indices({1}, {1}), 3, kInt64).to_vector<std::int64_t>() ==
        std::vector<std::int64_t>{0, 1, 0});
  CHECK(one_hot(indices({0}, {}), 2, kBool).to_vector<bool>() == std::vector<bool>{true, false});
  CHECK(one_hot(indices({0, 4}, {2}), -1).shape() == Shape{2, 5});  // inferred max + 1
  CHECK_FALSE(one_hot(idx, 4).requires_grad());

  std::string msg = HG_ERROR_MESSAGE(one_hot(indices({0, 3}, {2}), 3));
  CHECK(msg.find("one_hot") != std::string::npos);
  CHECK(msg.find("index 3") != std::string::npos);
  CHECK_THROWS_AS(one_hot(indices({-1}, {1}), 3), IndexError);
  CHECK_THROWS_AS(one_hot(iota({2}), 3), DTypeError);
}
