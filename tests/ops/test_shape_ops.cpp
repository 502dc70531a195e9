// Shape ops: views share storage, materializing ops match naive index arithmetic written
// here (for float, int64 and bool), gradients match central differences, float32 agrees
// with float64, and bad arguments give messages naming the op and the shapes.
#include <algorithm>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "helpers.hpp"

using namespace headgrad;
using testing::check_float32_matches_float64;
using testing::check_gradcheck;
using testing::param;

namespace {

std::int64_t ravel(const Shape& index, const Shape& shape) {
  std::int64_t flat = 0;
  for (std::size_t d = 0; d < shape.size(); ++d) flat = flat * shape[d] + index[d];
  return flat;
}

// 0, 1, 2, ... in `shape` (distinct values expose any misplaced element); bool gets i % 2,
// int64 gets i.
Tensor iota(const Shape& shape, DType dtype = kFloat64) {
  std::vector<double> values(static_cast<std::size_t>(numel_of(shape)));
  std::iota(values.begin(), values.end(), 0.0);
  if (dtype == kBool)
    for (auto& v : values) v = static_cast<double>(static_cast<std::int64_t>(v) % 2);
  return from_vector<double>(values, shape).to(dtype);
}

// out[i_0..i_r] = x[j] with j[perm[d]] = i[d], by multi-index arithmetic.
std::vector<double> naive_permute(const Tensor& x, const Shape& perm) {
  const Shape& in = x.shape();
  Shape out_shape(perm.size());
  for (std::size_t d = 0; d < perm.size(); ++d)
    out_shape[d] = in[static_cast<std::size_t>(perm[d])];
  const auto values = x.to_vector<double>();
  std::vector<double> out(values.size());
  for (std::int64_t flat = 0; flat < numel_of(out_shape); ++flat) {
    const Shape oi = unravel_index(flat, out_shape);
    Shape ii(in.size());
    for (std::size_t d = 0; d < perm.size(); ++d) ii[static_cast<std::size_t>(perm[d])] = oi[d];
    out[static_cast<std::size_t>(flat)] = values[static_cast<std::size_t>(ravel(ii, in))];
  }
  return out;
}

// y[i] = x[i with every broadcast dim set to 0], right-aligned.
std::vector<double> naive_expand(const Tensor& x, const Shape& out_shape) {
  const Shape& in = x.shape();
  const auto values = x.to_vector<double>();
  std::vector<double> out;
  const std::size_t lead = out_shape.size() - in.size();
  for (std::int64_t flat = 0; flat < numel_of(out_shape); ++flat) {
    const Shape oi = unravel_index(flat, out_shape);
    Shape ii(in.size());
    for (std::size_t d = 0; d < in.size(); ++d) ii[d] = in[d] == 1 ? 0 : oi[lead + d];
    out.push_back(values[static_cast<std::size_t>(ravel(ii, in))]);
  }
  return out;
}

// Elements of x whose index along dim is in `picked` (in that order), by multi-index.
std::vector<double> naive_pick(const Tensor& x, std::size_t dim, const Shape& picked) {
  Shape out_shape = x.shape();
  out_shape[dim] = static_cast<std::int64_t>(picked.size());
  const auto values = x.to_vector<double>();
  std::vector<double> out;
  for (std::int64_t flat = 0; flat < numel_of(out_shape); ++flat) {
    Shape i = unravel_index(flat, out_shape);
    i[dim] = picked[static_cast<std::size_t>(i[dim])];
    out.push_back(values[static_cast<std::size_t>(ravel(i, x.shape()))]);
  }
  return out;
}

Shape range(std::int64_t start, std::int64_t end, std::int64_t step = 1) {
  Shape r;
  for (std::int64_t i = start; i < end; i += step) r.push_back(i);
  return r;
}

}  // namespace

TEST_CASE("reshape, view, flatten, squeeze and unsqueeze share storage with their input") {
  Tensor x = iota({2, 3, 4});
  Tensor r = reshape(x, {4, -1});
  CHECK(r.shape() == Shape{4, 6});
  Tensor v = x.view({-1});
  Tensor f = flatten(x, 1);
  CHECK(f.shape() == Shape{2, 12});
  Tensor u = unsqueeze(x, -1);
  CHECK(u.shape() == Shape{2, 3, 4, 1});
  Tensor s = squeeze(unsqueeze(x, 0));
  CHECK(s.shape() == Shape{2, 3, 4});
  CHECK(squeeze(iota({1, 3, 1}), 0).shape() == Shape{3, 1});
  CHECK(squeeze(iota({2, 3}), 1).shape() == Shape{2, 3});  // not size 1: unchanged

  r.set_at({3, 5}, -1.0);  // flat 23
  CHECK(x.at({1, 2, 3}) == -1.0);
  CHECK(v.at({23}) == -1.0);
  x.set_at({0, 1, 2}, -2.0);  // flat 6
  CHECK(v.at({6}) == -2.0);
  CHECK(f.at({0, 6}) == -2.0);
  CHECK(u.at({0, 1, 2, 0}) == -2.0);
  CHECK(s.at({0, 1, 2}) == -2.0);
  // A narrowed tensor reshaped still reads from its own offset.
  Tensor tail = narrow(iota({4, 3}), 0, 2, 2).reshape({-1});
  CHECK(tail.to_vector<double>() == std::vector<double>{6, 7, 8, 9, 10, 11});
  // 0-d tensors: flatten gives (1), unsqueeze (1), reshape to () and back.
  Tensor scalar = scalar_tensor(3.5, kFloat64);
  CHECK(flatten(scalar).shape() == Shape{1});
  CHECK(unsqueeze(scalar, 0).shape() == Shape{1});
  CHECK(reshape(iota({1, 1}), {}).shape() == Shape{});
}

TEST_CASE("view ops pass gradients back in the input's shape") {
  // The outputs alias their input's storage: gradcheck must read each evaluation before
  // the next perturbation, which these checks also prove.
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{2, 3, 4}, {4, -1}}, {{}, {1, 1}}, {{1}, {}}, {{5}, {1, 5, 1}}, {{3, 1, 2}, {-1}}};
  for (const auto& [in, out] : cases) {
    CAPTURE(shape_str(in));
    check_gradcheck([out = out](const std::vector<Tensor>& t) { return reshape(t[0], out); },
                    {param(in, 1)});
    check_gradcheck([out = out](const std::vector<Tensor>& t) { return view(t[0], out); },
                    {param(in, 2)});
  }
  check_gradcheck([](const std::vector<Tensor>& t) { return flatten(t[0], -3, -2); },
                  {param({2, 3, 4, 2}, 3)});
  check_gradcheck([](const std::vector<Tensor>& t) { return unsqueeze(t[0], -2); },
                  {param({3, 2}, 4)});
  check_gradcheck([](const std::vector<Tensor>& t) { return squeeze(t[0]); },
                  {param({1, 3, 1, 2}, 5)});
  check_gradcheck([](const std::vector<Tensor>& t) { return squeeze(t[0], -1); },
                  {param({3, 1}, 6)});
  check_float32_matches_float64(
      [](const std::vector<Tensor>& t) {
        return reshape(t[0], {3, -1});
      },
      {param({2, 3, 2}, 8)});
  // The gradient of a view is a reshape of the upstream gradient, element for element.
  Tensor x = param({2, 3}, 7);
  Tensor upstream = iota({3, 2});
  reshape(x, {3, 2}).backward(upstream);
  CHECK(x.grad().shape() == Shape{2, 3});
  CHECK(x.grad().to_vector<double>() == upstream.to_vector<double>());
}

TEST_CASE("reshape to a different number of elements names both shapes") {
  Tensor x = iota({2, 3});
  std::string msg = HG_ERROR_MESSAGE(reshape(x, {4, 2}));
  CHECK(msg.find("reshape") != std::string::npos);
  CHECK(msg.find("(2,3)") != std::string::npos);
  CHECK(msg.find("(4,2)") != std::string::npos);
  CHECK_THROWS_AS(reshape(x, {4, 2}), ShapeError);
  msg = HG_ERROR_MESSAGE(view(x, {-1, -1}));
  CHECK(msg.find("view") != std::string::npos);
  CHECK(msg.find("only one dim may be -1") != std::string::npos);
  msg = HG_ERROR_MESSAGE(reshape(x, {4, -1}));
  CHECK(msg.find("-1") != std::string::npos);
  CHECK(msg.find("(2,3)") != std::string::npos);
  msg = HG_ERROR_MESSAGE(flatten(iota({2, 3, 4}), 2, 1));
  CHECK(msg.find("flatten") != std::string::npos);
  CHECK(msg.find("(2,3,4)") != std::string::npos);
}

TEST_CASE("flatten of a 0-d tensor takes only the dims -1 and 0, as in PyTorch") {
  const Tensor scalar = scalar_tensor(3.5, kFloat64);
  for (auto [start, end] : {std::pair{0, -1}, {-1, 0}, {0, 0}, {-1, -1}})
    CHECK(flatten(scalar, start, end).shape() == Shape{1});
  // torch: IndexError "Dimension out of range (expected to be in range of [-1, 0], but got 3)"
  CHECK_THROWS_AS(flatten(scalar, 3, -1), IndexError);
  CHECK_THROWS_AS(flatten(scalar, 0, 3), IndexError);
  CHECK_THROWS_AS(flatten(scalar, -2, 0), IndexError);
  CHECK(HG_ERROR_MESSAGE(flatten(scalar, 3, -1)).find("[-1, 0]") != std::string::npos);
}

TEST_CASE("permute matches index arithmetic for every order of a rank-4 tensor and every dtype") {
  Shape perm = {0, 1, 2, 3};
  for (const Shape& shape : {Shape{2, 3, 4, 5}, Shape{2, 1, 3, 1}, Shape{1, 4, 1, 3}}) {
    for (DType dtype : {kFloat32, kFloat64, kInt64, kBool}) {
      Tensor x = iota(shape, dtype);
      std::sort(perm.begin(), perm.end());
      do {
        CAPTURE(shape_str(shape));
        CAPTURE(shape_str(perm));
        CAPTURE(to_string(dtype));
        Tensor y = permute(x, perm);
        CHECK(y.dtype() == dtype);
        REQUIRE(y.shape() == Shape{shape[perm[0]], shape[perm[1]], shape[perm[2]], shape[perm[3]]});
        CHECK(y.to_vector<double>() == naive_permute(x, perm));
      } while (std::next_permutation(perm.begin(), perm.end()));
    }
  }
  // 0-d and 1-d
  CHECK(permute(scalar_tensor(2.0), {}).item() == 2.0);
  CHECK(permute(iota({4}), {-1}).to_vector<double>() == iota({4}).to_vector<double>());
}

TEST_CASE("transposes across tile edges and the head split match index arithmetic") {
  // Sizes that are not multiples of the 32-element tile, several batches, both dtypes.
  for (DType dtype : {kFloat32, kFloat64, kInt64}) {
    Tensor x = iota({3, 67, 33}, dtype);
    CHECK(transpose(x, -1, -2).to_vector<double>() == naive_permute(x, {0, 2, 1}));
    CHECK(transpose(x, 0, 2).to_vector<double>() == naive_permute(x, {2, 1, 0}));
    Tensor w = iota({70, 45}, dtype);
    CHECK(w.t().to_vector<double>() == naive_permute(w, {1, 0}));
  }
  // (B,L,H,D) -> (B,H,L,D) and back: the attention head split and merge.
  Tensor x = iota({2, 5, 4, 8}, kFloat32);
  Tensor heads = permute(x, {0, 2, 1, 3});
  CHECK(heads.shape() == Shape{2, 4, 5, 8});
  CHECK(heads.to_vector<double>() == naive_permute(x, {0, 2, 1, 3}));
  CHECK(transpose(heads, 1, 2).to_vector<double>() == x.to_vector<double>());
  // A rank-5 mixed order where neither the runs nor the transpose dims are adjacent.
  Tensor big = iota({3, 2, 4, 35, 3});
  CHECK(permute(big, {3, 0, 4, 2, 1}).to_vector<double>() == naive_permute(big, {3, 0, 4, 2, 1}));
  // transpose writes a new tensor: changing it leaves the input alone.
  Tensor y = transpose(x, 0, 1);
  y.set_at({0, 0, 0, 0}, 99.0);
  CHECK(x.at({0, 0, 0, 0}) == 0.0);
}

TEST_CASE("permute and transpose gradients are the inverse permutation") {
  check_gradcheck(
      [](const std::vector<Tensor>& t) {
        return permute(t[0], {2, 0, 3, 1});
      },
      {param({2, 3, 4, 2}, 11)});
  check_gradcheck(
      [](const std::vector<Tensor>& t) {
        return permute(t[0], {-1, 0, -2});
      },
      {param({3, 1, 4}, 12)});
  check_gradcheck([](const std::vector<Tensor>& t) { return transpose(t[0], -1, -2); },
                  {param({2, 5, 3}, 13)});
  check_gradcheck([](const std::vector<Tensor>& t) { return transpose(t[0], 0, 0); },
                  {param({4}, 14)});
  check_gradcheck([](const std::vector<Tensor>& t) { return permute(t[0], {}); }, {param({}, 15)});
  check_float32_matches_float64(
      [](const std::vector<Tensor>& t) {
        return permute(t[0], {0, 2, 1, 3});
      },
      {param({2, 5, 3, 4}, 16)});
}

TEST_CASE("permute rejects a repeated dim, a wrong count and an out-of-range dim") {
  Tensor x = iota({2, 3, 4});
  std::string msg = HG_ERROR_MESSAGE(permute(x, {0, 1, 1}));
  CHECK(msg.find("permute") != std::string::npos);
  CHECK(msg.find("repeated") != std::string::npos);
  CHECK(msg.find("(0,1,1)") != std::string::npos);
  CHECK(msg.find("(2,3,4)") != std::string::npos);
  CHECK_THROWS_AS(permute(x, {0, 1, -2}), ShapeError);  // -2 is dim 1 again
  msg = HG_ERROR_MESSAGE(permute(x, {1, 0}));
  CHECK(msg.find("permute") != std::string::npos);
  CHECK(msg.find("(2,3,4)") != std::string::npos);
  CHECK_THROWS_AS(permute(x, {0, 1, 3}), IndexError);
  CHECK(HG_ERROR_MESSAGE(transpose(x, 0, 3)).find("transpose") != std::string::npos);
}

TEST_CASE("expand repeats size-1 dims and sums the gradient back") {
  const std::vector<std::pair<Shape, Shape>> cases = {{{3, 1}, {3, 4}},
                                                      {{1, 4}, {2, 3, 4}},
                                                      {{}, {2, 3}},
                                                      {{2, 1, 3}, {4, -1, 5, -1}},
                                                      {{2, 3}, {2, 3}}};
  for (const auto& [in, target] : cases) {
    CAPTURE(shape_str(in));
    CAPTURE(shape_str(target));
    Tensor x = iota(in);
    Tensor y = expand(x, target);
    Shape expected_shape = target;
    for (std::size_t d = 0; d < target.size(); ++d)
      if (target[d] == -1) expected_shape[d] = in[d - (target.size() - in.size())];
    REQUIRE(y.shape() == expected_shape);
    CHECK(y.to_vector<double>() == naive_expand(x, expected_shape));
    check_gradcheck([t = target](const std::vector<Tensor>& v) { return expand(v[0], t); },
                    {param(in, 21)});
  }
  Tensor mask = iota({1, 3}, kBool);
  CHECK(expand(mask, {2, 3}).to_vector<double>() == std::vector<double>{0, 1, 0, 0, 1, 0});
  // Gradient closed form: each element of x is used 4 times.
  Tensor x = param({3, 1}, 22);
  expand(x, {3, 4}).sum().backward();
  CHECK(x.grad().to_vector<double>() == std::vector<double>{4, 4, 4});
  check_float32_matches_float64(
      [](const std::vector<Tensor>& v) {
        return expand(v[0], {2, 3, 4});
      },
      {param({3, 1}, 23)});
}

TEST_CASE("expand names the shapes when a dim is not size 1") {
  std::string msg = HG_ERROR_MESSAGE(expand(iota({2, 3}), {2, 4}));
  CHECK(msg.find("expand") != std::string::npos);
  CHECK(msg.find("(2,3)") != std::string::npos);
  CHECK(msg.find("(2,4)") != std::string::npos);
  CHECK_THROWS_AS(expand(iota({2, 3}), {3}), ShapeError);
  CHECK_THROWS_AS(expand(iota({3}), {-1, 3}), ShapeError);
}

TEST_CASE("concat and stack place every input at its offset, for every dtype") {
  for (DType dtype : {kFloat32, kInt64, kBool}) {
    Tensor a = iota({2, 3}, dtype);
    Tensor b = iota({2, 1}, dtype);
    Tensor c = iota({2, 2}, dtype);
    Tensor y = concat({a, b, c}, -1);
    REQUIRE(y.shape() == Shape{2, 6});
    for (std::int64_t i = 0; i < 2; ++i) {
      for (std::int64_t j = 0; j < 6; ++j) {
        const double expected =
            j < 3 ? a.at({i, j}) : (j < 4 ? b.at({i, j - 3}) : c.at({i, j - 4}));
        CHECK(y.at({i, j}) == expected);
      }
    }
    Tensor rows = cat({a, iota({1, 3}, dtype)}, 0);
    CHECK(rows.shape() == Shape{3, 3});
    CHECK(rows.at({2, 1}) == iota({1, 3}, dtype).at({0, 1}));
    Tensor s = stack({a, a}, 1);  // (2,2,3), s[i, k, j] = a[i, j]
    REQUIRE(s.shape() == Shape{2, 2, 3});
    for (std::int64_t i = 0; i < 2; ++i)
      for (std::int64_t k = 0; k < 2; ++k)
        for (std::int64_t j = 0; j < 3; ++j) CHECK(s.at({i, k, j}) == a.at({i, j}));
  }
  CHECK(stack({scalar_tensor(1.0), scalar_tensor(2.0)}, 0).to_vector<double>() ==
        std::vector<double>{1, 2});
  CHECK(concat({iota({0, 3}), iota({2, 3})}, 0).shape() == Shape{2, 3});
}

TEST_CASE("concat and stack send each input the slice of the gradient at its offset") {
  check_gradcheck(
      [](const std::vector<Tensor>& t) {
        return concat({t[0], t[1], t[2]}, 1);
      },
      {param({2, 3, 2}, 31), param({2, 1, 2}, 32), param({2, 4, 2}, 33)});
  check_gradcheck(
      [](const std::vector<Tensor>& t) {
        return concat({t[0], t[1]}, -1);
      },
      {param({3, 2}, 34), param({3, 5}, 35)});
  check_gradcheck(
      [](const std::vector<Tensor>& t) {
        return stack({t[0], t[1], t[0]}, -1);
      },
      {param({2, 3}, 36), param({2, 3}, 37)});
  check_gradcheck(
      [](const std::vector<Tensor>& t) {
        return stack({t[0], t[1]}, 0);
      },
      {param({}, 38), param({}, 39)});
  // Only the input that requires grad gets one.
  Tensor fixed = iota({2, 2});
  check_gradcheck(
      [&](const std::vector<Tensor>& t) {
        return concat({fixed, t[0]}, 0);
      },
      {param({1, 2}, 40)});
  check_float32_matches_float64(
      [](const std::vector<Tensor>& t) {
        return concat({t[0], t[1]}, 0);
      },
      {param({2, 3}, 41), param({3, 3}, 42)});
}

TEST_CASE("concat names the mismatched shapes, dtypes and an empty list") {
  std::string msg = HG_ERROR_MESSAGE(concat({iota({2, 3}), iota({3, 3})}, 1));
  CHECK(msg.find("concat") != std::string::npos);
  CHECK(msg.find("(2,3)") != std::string::npos);
  CHECK(msg.find("(3,3)") != std::string::npos);
  CHECK_THROWS_AS(concat({iota({2, 3}), iota({2, 3, 1})}, 0), ShapeError);
  CHECK_THROWS_AS(concat({iota({2}), iota({2}, kFloat32)}, 0), DTypeError);
  CHECK_THROWS_AS(concat({}, 0), ValueError);
  CHECK_THROWS_AS(concat({scalar_tensor(1.0)}, 0), ShapeError);
  msg = HG_ERROR_MESSAGE(stack({iota({2, 3}), iota({3, 2})}, 0));
  CHECK(msg.find("stack") != std::string::npos);
  CHECK(msg.find("(3,2)") != std::string::npos);
}

TEST_CASE("narrow, slice and select pick the rows index arithmetic picks") {
  Tensor x = iota({3, 7, 2});
  CHECK(narrow(x, 1, 2, 3).to_vector<double>() == naive_pick(x, 1, {2, 3, 4}));
  CHECK(narrow(x, -3, -1, 1).to_vector<double>() == naive_pick(x, 0, {2}));
  CHECK(narrow(x, 1, 7, 0).shape() == Shape{3, 0, 2});
  CHECK(slice(x, 1, 1, 6, 2).to_vector<double>() == naive_pick(x, 1, {1, 3, 5}));
  CHECK(slice(x, 1, -3, 100).to_vector<double>() == naive_pick(x, 1, {4, 5, 6}));
  CHECK(slice(x, 1, -100, -4, 3).to_vector<double>() == naive_pick(x, 1, {0}));
  CHECK(slice(x, 1, 5, 2).shape() == Shape{3, 0, 2});
  CHECK(slice(x, -1, 0, 2, 5).to_vector<double>() == naive_pick(x, 2, {0}));
  CHECK(slice(x, 1, 0, 7, 3).to_vector<double>() == naive_pick(x, 1, range(0, 7, 3)));
  Tensor row = select(x, 1, -2);  // index 5
  CHECK(row.shape() == Shape{3, 2});
  CHECK(row.to_vector<double>() == naive_pick(x, 1, {5}));
  CHECK(select(iota({4}), 0, 3).shape() == Shape{});
  CHECK(select(iota({4}), 0, 3).item() == 3.0);
  Tensor mask = iota({2, 4}, kBool);
  CHECK(slice(mask, 1, 1, 4, 2).to_vector<double>() == std::vector<double>{1, 1, 1, 1});
}

TEST_CASE("narrow, slice and select scatter the gradient into zeros of the input shape") {
  check_gradcheck([](const std::vector<Tensor>& t) { return narrow(t[0], 1, 1, 2); },
                  {param({2, 4, 3}, 51)});
  check_gradcheck([](const std::vector<Tensor>& t) { return narrow(t[0], -1, 0, 1); },
                  {param({5, 1}, 52)});
  check_gradcheck([](const std::vector<Tensor>& t) { return slice(t[0], 0, -5, 100, 2); },
                  {param({6, 2}, 53)});
  check_gradcheck([](const std::vector<Tensor>& t) { return slice(t[0], -1, 1, 7, 3); },
                  {param({2, 3, 8}, 54)});
  check_gradcheck([](const std::vector<Tensor>& t) { return select(t[0], -2, 1); },
                  {param({2, 3, 2}, 55)});
  check_gradcheck([](const std::vector<Tensor>& t) { return select(t[0], 0, -1); },
                  {param({3}, 56)});
  // Closed form: the gradient of sum(x[:, 1:4:2]) is 1 at columns 1 and 3, 0 elsewhere.
  Tensor x = param({2, 5}, 57);
  slice(x, 1, 1, 4, 2).sum().backward();
  CHECK(x.grad().to_vector<double>() == std::vector<double>{0, 1, 0, 1, 0, 0, 1, 0, 1, 0});
  check_float32_matches_float64(
      [](const std::vector<Tensor>& t) { return slice(t[0], 1, 0, 5, 2); }, {param({3, 5}, 58)});
}

TEST_CASE("split, split_with_sizes and chunk cut torch's pieces and gradients flow to each") {
  Tensor x = iota({2, 7});
  auto pieces = split(x, 3, 1);
  REQUIRE(pieces.size() == 3);
  CHECK(pieces[0].shape() == Shape{2, 3});
  CHECK(pieces[2].shape() == Shape{2, 1});
  CHECK(pieces[1].to_vector<double>() == naive_pick(x, 1, {3, 4, 5}));
  CHECK(pieces[2].to_vector<double>() == naive_pick(x, 1, {6}));
  auto sized = split_with_sizes(x, {1, 0, 6}, -1);
  REQUIRE(sized.size() == 3);
  CHECK(sized[1].shape() == Shape{2, 0});
  CHECK(sized[2].to_vector<double>() == naive_pick(x, 1, range(1, 7)));
  auto chunks = chunk(x, 3, 1);  // ceil(7/3) = 3: sizes 3, 3, 1
  REQUIRE(chunks.size() == 3);
  CHECK(chunks[2].shape() == Shape{2, 1});
  CHECK(chunk(iota({6}), 4, 0).size() == 3);  // ceil(6/4) = 2: three pieces, like torch
  CHECK(chunk(iota({0, 2}), 2, 0).size() == 2);
  CHECK(split(iota({0}), 2, 0).size() == 1);

  // Each piece weighted differently, so a gradient sent to the wrong piece shows.
  check_gradcheck(
      [](const std::vector<Tensor>& t) {
        auto p = split(t[0], 2, 0);
        return concat({mul(p[0], 1.0), mul(p[1], 2.0), mul(p[2], 3.0)}, 0);
      },
      {param({5, 2}, 61)});
  check_gradcheck(
      [](const std::vector<Tensor>& t) {
        auto p = chunk(t[0], 2, -1);
        return add(mul(p[0], 3.0), p[1]);
      },
      {param({3, 4}, 62)});

  std::string msg = HG_ERROR_MESSAGE(split_with_sizes(x, {3, 3}, 1));
  CHECK(msg.find("split_with_sizes") != std::string::npos);
  CHECK(msg.find("(3,3)") != std::string::npos);
  CHECK(msg.find("(2,7)") != std::string::npos);
  CHECK_THROWS_AS(split(x, 0, 1), ValueError);
  CHECK_THROWS_AS(chunk(x, 0, 1), ValueError);
}

TEST_CASE("narrow, slice and select out of range name the op, the range and the shape") {
  Tensor x = iota({2, 4});
  std::string msg = HG_ERROR_MESSAGE(narrow(x, 1, 2, 3));
  CHECK(msg.find("narrow") != std::string::npos);
  CHECK(msg.find("start 2") != std::string::npos);
  CHECK(msg.find("length 3") != std::string::npos);
  CHECK(msg.find("size 4") != std::string::npos);
  CHECK(msg.find("(2,4)") != std::string::npos);
  CHECK_THROWS_AS(narrow(x, 1, -5, 1), IndexError);
  CHECK_THROWS_AS(narrow(x, 1, 0, -1), IndexError);
  CHECK_THROWS_AS(narrow(x, 2, 0, 1), IndexError);
  CHECK_THROWS_AS(narrow(scalar_tensor(1.0), 0, 0, 1), ShapeError);
  msg = HG_ERROR_MESSAGE(select(x, 0, 2));
  CHECK(msg.find("select") != std::string::npos);
  CHECK(msg.find("index 2") != std::string::npos);
  CHECK(msg.find("size 2") != std::string::npos);
  CHECK_THROWS_AS(slice(x, 1, 0, 4, 0), ValueError);
  CHECK_THROWS_AS(slice(x, 1, 0, 4, -1), ValueError);
}

TEST_CASE("narrow and slice with lengths or steps near the int64 limit fail cleanly") {
  Tensor x = zeros({4, 3});
  const std::int64_t huge = std::numeric_limits<std::int64_t>::max();
  CHECK_THROWS_AS(narrow(x, 0, 2, huge), IndexError);
  CHECK(slice(x, 0, 1, huge, huge).shape() == Shape{1, 3});
  CHECK(slice(x, 0, 0, 4, 3).shape() == Shape{2, 3});
}

TEST_CASE("unbind gives the slices along a dim, one node, gradients stacked back") {
  const Tensor x = arange(24.0, TensorOptions(kFloat64)).reshape({2, 3, 4});
  const std::vector<Tensor> rows = unbind(x, 1);
  REQUIRE(rows.size() == 3);
  CHECK(rows[1].shape() == Shape{2, 4});
  CHECK(rows[1].to_vector<double>() == std::vector<double>{4, 5, 6, 7, 16, 17, 18, 19});
  testing::check_gradcheck(
      [](const std::vector<Tensor>& in) {
        const std::vector<Tensor> parts = unbind(in[0], 0);
        return add(mul(parts[0], 2.0), parts[2]);  // parts[1] gets no gradient: zeros
      },
      {testing::param({3, 2, 5}, 91)});
  CHECK_THROWS_AS(unbind(scalar_tensor(1.0)), ShapeError);
  CHECK_THROWS_AS(unbind(x, 3), std::exception);
}
