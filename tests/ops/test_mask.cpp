// masked_fill and causal_mask: values against a naive broadcast index computation,
// gradcheck with broadcast masks, float32 agreement and error messages.
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

Tensor random_mask(const Shape& shape, std::uint64_t seed, double p = 0.4) {
  hg::Generator gen(seed);
  const auto u = hg::rand(shape, hg::kFloat64, &gen).to_vector<double>();
  std::vector<bool> m(u.size());
  for (std::size_t i = 0; i < u.size(); ++i) m[i] = u[i] < p;
  return hg::from_vector<bool>(m, shape);
}

// The flat mask index read for flat index `flat` of x: the multi-index of x, right-aligned
// onto the mask's dims, with size-1 mask dims pinned to 0.
std::int64_t mask_index(std::int64_t flat, const Shape& x_shape, const Shape& mask_shape) {
  std::int64_t index = 0, mask_stride = 1;
  for (std::size_t i = 0; i < x_shape.size(); ++i) {
    const std::size_t xd = x_shape.size() - 1 - i;
    const std::int64_t coord = flat % x_shape[xd];
    flat /= x_shape[xd];
    if (i >= mask_shape.size()) continue;
    const std::int64_t size = mask_shape[mask_shape.size() - 1 - i];
    index += (size == 1 ? 0 : coord) * mask_stride;
    mask_stride *= size;
  }
  return index;
}

struct MaskCase {
  Shape x;
  Shape mask;
};

// (B,H,L,S) attention scores with the masks attention uses, plus plain broadcasts.
const std::vector<MaskCase> kCases = {
    {{2, 3, 4, 5}, {4, 5}},        // attn_mask (L,S)
    {{2, 3, 4, 5}, {2, 1, 1, 5}},  // key padding (B,1,1,S)
    {{2, 3, 4, 5}, {2, 3, 4, 5}},  // same shape
    {{2, 3, 4, 5}, {3, 1, 1}},     // per head
    {{4, 5}, {4, 1}},              // per row
    {{4, 5}, {}},                  // 0-d mask
    {{3}, {3}},                    // 1-d
};

}  // namespace

TEST_CASE("masked_fill writes value where the broadcast mask is true and keeps x elsewhere") {
  for (const auto& c : kCases) {
    CAPTURE(hg::shape_str(c.x));
    CAPTURE(hg::shape_str(c.mask));
    Tensor x = param(c.x, 3);
    Tensor mask = random_mask(c.mask, 4, 0.5);
    for (double value : {-kInf, 7.25}) {
      const auto y = hg::masked_fill(x, mask, value).to_vector<double>();
      const auto xs = x.to_vector<double>();
      const auto ms = mask.to_vector<bool>();
      REQUIRE(y.size() == xs.size());
      for (std::size_t i = 0; i < y.size(); ++i) {
        const bool masked = ms[mask_index(static_cast<std::int64_t>(i), c.x, c.mask)];
        CHECK(y[i] == (masked ? value : xs[i]));
      }
    }
  }
}

TEST_CASE("masked_fill gradient is zero at masked positions and passes gradcheck") {
  for (const auto& c : kCases) {
    CAPTURE(hg::shape_str(c.x));
    CAPTURE(hg::shape_str(c.mask));
    Tensor x = param(c.x, 5);
    Tensor mask = random_mask(c.mask, 6, 0.5);
    check_gradcheck(
        [](const std::vector<Tensor>& in) { return hg::masked_fill(in[0], in[1], -3.0); },
        {x, mask});
    // the gradient itself: upstream ones -> 0 where masked, 1 elsewhere
    Tensor leaf = x.detach().clone().requires_grad_(true);
    hg::masked_fill(leaf, mask, 0.0).backward(hg::ones(c.x, hg::kFloat64));
    const auto g = leaf.grad().to_vector<double>();
    const auto ms = mask.to_vector<bool>();
    for (std::size_t i = 0; i < g.size(); ++i)
      CHECK(g[i] == (ms[mask_index(static_cast<std::int64_t>(i), c.x, c.mask)] ? 0.0 : 1.0));
  }
}

TEST_CASE("masked_fill agrees between float32 and float64") {
  Tensor x = param({2, 3, 4, 5}, 8);
  Tensor mask = random_mask({2, 1, 1, 5}, 9);
  check_float32_matches_float64(
      [](const std::vector<Tensor>& in) { return hg::masked_fill(in[0], in[1], -1e4); }, {x, mask});
}

TEST_CASE("causal_mask blocks exactly the keys after the query") {
  for (std::int64_t size : {0, 1, 4, 7}) {
    Tensor m = hg::causal_mask(size);
    CHECK(m.dtype() == hg::kBool);
    CHECK(m.shape() == Shape{size, size});
    const auto v = m.to_vector<bool>();
    for (std::int64_t i = 0; i < size; ++i)
      for (std::int64_t j = 0; j < size; ++j) CHECK(v[i * size + j] == (j > i));
  }
}

TEST_CASE("causal attention weights put no probability on future keys") {
  // (B,H,L,L) scores, causal (L,L) mask, softmax over keys: row i spreads over keys <= i.
  Tensor scores = param({2, 2, 5, 5}, 10);
  Tensor w = hg::softmax(hg::masked_fill(scores, hg::causal_mask(5), -kInf), -1);
  const auto v = w.to_vector<double>();
  for (std::int64_t b = 0; b < 4; ++b)
    for (std::int64_t i = 0; i < 5; ++i) {
      double total = 0;
      for (std::int64_t j = 0; j < 5; ++j) {
        const double p = v[(b * 5 + i) * 5 + j];
        if (j > i) CHECK(p == 0.0);
        total += p;
      }
      CHECK(total == doctest::Approx(1.0));
      if (i == 0) CHECK(v[b * 25] == doctest::Approx(1.0));
    }
}

TEST_CASE("masked_fill rejects a non-bool mask naming the op and the mask") {
  Tensor x = hg::zeros({2, 3});
  Tensor mask = hg::zeros({2, 3});
  const std::string msg = HG_ERROR_MESSAGE(hg::masked_fill(x, mask, 0.0));
  CHECK(msg.find("masked_fill") != std::string::npos);
  CHECK(msg.find("bool") != std::string::npos);
  CHECK(msg.find("(2,3) float32") != std::string::npos);
  CHECK_THROWS_AS(hg::masked_fill(x, mask, 0.0), hg::DTypeError);
}

TEST_CASE("masked_fill rejects a mask that would enlarge x, naming both shapes") {
  Tensor x = hg::zeros({4, 5});
  for (const Shape& bad : {Shape{2, 4, 5}, Shape{4, 3}, Shape{5, 5}}) {
    CAPTURE(hg::shape_str(bad));
    Tensor mask = hg::zeros(bad, hg::kBool);
    const std::string msg = HG_ERROR_MESSAGE(hg::masked_fill(x, mask, 0.0));
    CHECK(msg.find("masked_fill") != std::string::npos);
    CHECK(msg.find(hg::shape_str(bad)) != std::string::npos);
    CHECK(msg.find("(4,5)") != std::string::npos);
    CHECK_THROWS_AS(hg::masked_fill(x, mask, 0.0), hg::ShapeError);
  }
  // a mask broadcast along x's own size-1 dims would also enlarge it
  Tensor col = hg::zeros({4, 1});
  CHECK_THROWS_AS(hg::masked_fill(col, hg::zeros({4, 5}, hg::kBool), 0.0), hg::ShapeError);
}

TEST_CASE("causal_mask rejects a negative size") {
  const std::string msg = HG_ERROR_MESSAGE(hg::causal_mask(-2));
  CHECK(msg.find("causal_mask") != std::string::npos);
  CHECK(msg.find("-2") != std::string::npos);
  CHECK_THROWS_AS(hg::causal_mask(-2), hg::ValueError);
}
