// Tensor::index and Tensor::index_put_ (libtorch's indexing): every index kind against
// the element formula of an arange tensor, x[i, j, k] = 12 i + 4 j + k, the gradient by
// gradcheck, and the errors.
#include <doctest/doctest.h>

#include <limits>

#include "headgrad/headgrad.hpp"
#include "helpers.hpp"

using namespace headgrad;
using namespace headgrad::indexing;
using testing::check_gradcheck;
using testing::check_values;

namespace {
// (2, 3, 4) with x[i, j, k] = 12 i + 4 j + k.
Tensor cube(DType dtype = kFloat64) { return arange(24.0, dtype).reshape({2, 3, 4}); }
}  // namespace

TEST_CASE("index reads integers, slices, None, Ellipsis and index tensors as libtorch does") {
  const Tensor x = cube();
  check_values(x.index({1, Slice(), 2}), {3}, {14, 18, 22}, 0);             // x[1, :, 2]
  check_values(x.index({-1, -1}), {4}, {20, 21, 22, 23}, 0);                // x[-1, -1]
  check_values(x.index({0, Slice(1, None), Slice(None, None, 2)}), {2, 2},  // x[0, 1:, ::2]
               {4, 6, 8, 10}, 0);
  check_values(x.index({Ellipsis, 3}), {2, 3}, {3, 7, 11, 15, 19, 23}, 0);  // x[..., 3]
  CHECK(x.index({None}).shape() == Shape{1, 2, 3, 4});                      // x[None]
  CHECK(x.index({Slice(), None, 0}).shape() == Shape{2, 1, 4});             // x[:, None, 0]
  check_values(x.index({0, 0, Slice(-3, -1)}), {2}, {1, 2}, 0);             // x[0, 0, -3:-1]
  check_values(x.index({0, 0, Slice(10, 20)}), {0}, {}, 0);                 // clamped, empty
  const Tensor ids = from_vector<std::int64_t>({2, 0, 2}, {3});
  check_values(x.index({0, ids, 1}), {3}, {9, 1, 9}, 0);  // x[0, [2, 0, 2], 1]
  check_values(x.index({1, scalar_tensor(1, kInt64)}), {4}, {16, 17, 18, 19}, 0);
  CHECK(x.index({}).shape() == x.shape());
}

TEST_CASE("index takes negative index-tensor entries and slice steps near INT64_MAX as PyTorch") {
  const Tensor x = cube();  // (2, 3, 4), values 0 .. 23
  // x[0, [-1, 0, -3], 1] == x[0, [2, 0, 0], 1] (PyTorch wraps negatives in x[ids]).
  check_values(x.index({0, from_vector<std::int64_t>({-1, 0, -3}, {3}), 1}), {3}, {9, 1, 1}, 0);
  CHECK_THROWS_WITH_AS(x.index({0, from_vector<std::int64_t>({-4}, {1})}),
                       doctest::Contains("index -4 is out of range for dim 1 of size 3"),
                       IndexError);
  // Its gradient lands on the wrapped rows: d/dx of sum(x[0, [-1, -1], 0]) is 2 at x[0, 2, 0].
  Tensor leaf = x.to(kFloat64).requires_grad_(true);
  leaf.index({0, from_vector<std::int64_t>({-1, -1}, {2}), 0}).sum().backward();
  CHECK(leaf.grad().at({0, 2, 0}) == 2.0);
  CHECK(leaf.grad().sum().item() == 2.0);
  // A step past the dim's end reads the first row only; INT64_MAX must not overflow
  // (x[0, 0, 1::9223372036854775807] is [1]).
  const std::int64_t huge = std::numeric_limits<std::int64_t>::max();
  check_values(x.index({0, 0, Slice(1, None, huge)}), {1}, {1}, 0);
  check_values(x.index({0, 0, Slice(None, None, huge)}), {1}, {0}, 0);
  check_values(x.index({0, 0, Slice(4, None, huge)}), {0}, {}, 0);
  Tensor y = zeros({4});
  y.index_put_({Slice(1, None, huge)}, 5.0);
  CHECK(y.to_vector<float>() == std::vector<float>{0, 5, 0, 0});
}

TEST_CASE("index refuses out-of-range integers, two Ellipses, bad masks and too many indices") {
  const Tensor x = cube();
  CHECK_THROWS_WITH_AS(x.index({zeros({3}, kBool)}),
                       doctest::Contains("does not match the shape of the indexed dims"),
                       IndexError);
  CHECK_THROWS_WITH_AS(x.index({from_vector<double>({0, 1}, {2})}),
                       doctest::Contains("must be int64 (positions) or bool"), IndexError);
  CHECK_THROWS_WITH_AS(
      x.index({from_vector<std::int64_t>({0, 1}, {2}), from_vector<std::int64_t>({0, 1, 2}, {3})}),
      doctest::Contains("do not broadcast together: (2) and (3)"), IndexError);
  CHECK_THROWS_AS(x.index({2}), IndexError);
  CHECK_THROWS_AS(x.index({0, -4}), IndexError);
  CHECK_THROWS_AS(x.index({Ellipsis, 0, Ellipsis}), IndexError);
  CHECK_THROWS_AS(x.index({0, 0, 0, 0}), IndexError);
  CHECK_THROWS_AS(x.index({Slice(0, 2, 0)}), ValueError);
}

TEST_CASE("several index tensors pick elements pairwise, placed as PyTorch places them") {
  const Tensor x = arange(12.0, kFloat64).view({3, 4});
  const Tensor r = from_vector<std::int64_t>({0, 2}, {2}),
               c = from_vector<std::int64_t>({1, 3}, {2});
  check_values(x.index({r, c}), {2}, {1, 11}, 0);  // x[[0, 2], [1, 3]]: not the 2 x 2 block
  // Broadcast together: x[[[0], [2]], [1, 3]] is the block.
  check_values(x.index({r.view({2, 1}), c}), {2, 2}, {1, 3, 9, 11}, 0);
  const Tensor y = cube();  // (2, 3, 4)
  const Tensor i = from_vector<std::int64_t>({1, 0, 1}, {3}),
               k = from_vector<std::int64_t>({0, -1, 2}, {3});
  // Adjacent: y[:, i, k] keeps dim 0 in front: (2, 3), y[a, i[t], k[t]].
  check_values(y.index({Slice(), i, k}), {2, 3}, {4, 3, 6, 16, 15, 18}, 0);
  // Separated by a slice: y[[1, 0, 1], :, k] puts the broadcast dim first: (3, 3).
  check_values(y.index({i, Slice(), k}), {3, 3}, {12, 16, 20, 3, 7, 11, 14, 18, 22}, 0);
  // An integer applies first (libtorch), so y[0, :, k] is (3, 3) with : in front.
  CHECK(y.index({0, Slice(), k}).shape() == Shape{3, 3});
  // A boolean mask stands for its nonzero() positions.
  check_values(x.index({gt(x, scalar_tensor(8.0, kFloat64))}), {3}, {9, 10, 11}, 0);
  check_values(x.index({Slice(), from_vector<std::int64_t>({1, 0, 0, 1}, {4}).to(kBool)}), {3, 2},
               {0, 3, 4, 7, 8, 11}, 0);
}

TEST_CASE("index_put_ accumulates repeated positions and index_put is differentiable") {
  Tensor x = zeros({3, 4}, kFloat64);
  const Tensor r = from_vector<std::int64_t>({0, 0, 2}, {3}),
               c = from_vector<std::int64_t>({1, 1, -1}, {3});
  x.index_put_({r, c}, from_vector<double>({1, 2, 5}, {3}), /*accumulate=*/true);
  CHECK(x.at({0, 1}) == 3.0);  // both writes to x[0, 1] add up
  CHECK(x.at({2, 3}) == 5.0);
  CHECK(x.sum().item() == 8.0);
  x.index_put_({r, c}, 7.0);  // without accumulate: written, not added
  CHECK(x.at({0, 1}) == 7.0);
  check_gradcheck(
      [](const std::vector<Tensor>& t) {
        const Tensor rows = from_vector<std::int64_t>({2, 0}, {2}).view({2, 1});
        const Tensor cols = from_vector<std::int64_t>({1, -1, 0}, {3});
        return index_put(t[0], {rows, cols}, t[1]) * 2.0;
      },
      {testing::param({3, 4}, 21), testing::param({3}, 22)});
  check_gradcheck(
      [](const std::vector<Tensor>& t) {
        const Tensor ids = from_vector<std::int64_t>({1, 1, 0}, {3});
        return index_put(t[0], {Slice(), ids}, t[1], /*accumulate=*/true);
      },
      {testing::param({2, 3}, 23), testing::param({2, 1}, 24)});
}

TEST_CASE("index is differentiable: gradcheck through integers, slices, None and index tensors") {
  const Tensor ids = from_vector<std::int64_t>({1, 0, 1}, {3});
  check_gradcheck(
      [ids](const std::vector<Tensor>& t) {
        return t[0].index({Slice(), ids, None, Slice(1, None, 2)}) * 3.0;
      },
      {testing::param({2, 3, 4}, 11)});
  check_gradcheck(
      [](const std::vector<Tensor>& t) {
        return t[0].index({-1, Ellipsis, 0});
      },
      {testing::param({2, 3, 4}, 12)});
  check_gradcheck(
      [](const std::vector<Tensor>& t) {
        const Tensor i = from_vector<std::int64_t>({1, 0, 1, 1}, {2, 2});
        const Tensor k = from_vector<std::int64_t>({-1, 2}, {2});
        return t[0].index({i, Slice(), k});  // repeated elements: their gradients add up
      },
      {testing::param({2, 3, 4}, 13)});
}

TEST_CASE("index_put_ writes a number or a broadcast tensor into the indexed region") {
  Tensor x = cube();
  x.index_put_({0, Slice(0, 2), Slice(None, None, 3)}, -1.0);  // x[0, 0:2, ::3] = -1
  auto expected = [](std::int64_t i, std::int64_t j, std::int64_t k) {
    return i == 0 && j < 2 && k % 3 == 0 ? -1.0 : double(12 * i + 4 * j + k);
  };
  for (std::int64_t i = 0; i < 2; ++i)
    for (std::int64_t j = 0; j < 3; ++j)
      for (std::int64_t k = 0; k < 4; ++k) CHECK(x.at({i, j, k}) == expected(i, j, k));
  Tensor y = zeros({2, 3, 4});
  y.index_put_({Ellipsis, 1}, from_vector<float>({5, 6, 7}, {3}));  // broadcast over i
  check_values(y.index({Slice(), Slice(), 1}), {2, 3}, {5, 6, 7, 5, 6, 7}, 0);
  CHECK(y.sum().item() == 36.0);
  Tensor z = zeros({4});
  z.index_put_({from_vector<std::int64_t>({3, -4}, {2})}, 2.0);  // x[[3, -4]] = 2
  check_values(z, {4}, {2, 0, 0, 2}, 0);
  Tensor w = zeros({2, 2});
  w.index_put_({None, 1}, 9.0);
  check_values(w, {2, 2}, {0, 0, 9, 9}, 0);
}

TEST_CASE(
    "index_put_ refuses a leaf that requires grad outside no_grad and a value that does not fit") {
  Tensor p = zeros({3}).requires_grad_(true);
  CHECK_THROWS_AS(p.index_put_({0}, 1.0), AutogradError);
  {
    NoGradGuard no_grad;
    p.index_put_({0}, 1.0);
  }
  CHECK(p.at({0}) == 1.0);
  Tensor x = zeros({2, 3});
  CHECK_THROWS_AS(x.index_put_({0}, zeros({2})), ShapeError);
  CHECK_THROWS_AS(x.index_put_({5}, 1.0), IndexError);
}

TEST_CASE("index_put_ and index_put errors describe the caller's tensor, not int64 positions") {
  Tensor x = zeros({2, 3}, kFloat64);
  x.set_name("w");
  const Tensor mask = from_vector<bool>({true, false, true}, {3});
  for (const std::string& msg :
       {HG_ERROR_MESSAGE(x.index_put_({0, 1, 2}, 1.0)), HG_ERROR_MESSAGE(x.index_put_({mask}, 1.0)),
        HG_ERROR_MESSAGE(index_put(x, {0, 1, 2}, scalar_tensor(1.0, kFloat64))),
        HG_ERROR_MESSAGE(index_put(x, {mask}, scalar_tensor(1.0, kFloat64)))}) {
    CAPTURE(msg);
    CHECK(msg.find("'w' (2,3) float64") != std::string::npos);
    CHECK(msg.find("int64") == std::string::npos);
  }
  // Reading names the tensor as before.
  CHECK(HG_ERROR_MESSAGE(x.index({0, 1, 2})).find("'w' (2,3) float64") != std::string::npos);
}
