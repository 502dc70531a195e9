// Elementwise ops (ops/elementwise.hpp) on the GPU against the CPU, forward and backward, in
// float64 and float32: binary ops over broadcasting shapes, ties of maximum and minimum,
// NaN propagation, every scalar variant and unary op (exact zeros and clamp boundaries
// included), comparisons, logical_not, where, and the operators.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
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

// Broadcasting pairs: equal shapes, a trailing vector, size-1 dims on both sides, 0-d on
// either side, and a large pair (grid-stride loops over several hundred thousand elements).
const std::vector<std::pair<Shape, Shape>> kPairs = {
    {{3, 4}, {3, 4}}, {{2, 3, 4}, {4}}, {{4, 1, 5}, {3, 1}},       {{2, 1, 3}, {1, 4, 1}},
    {{3, 4}, {}},     {{}, {2, 3}},     {{2, 1, 3, 1}, {2, 1, 5}}, {{513, 1025}, {1025}},
};

std::string pair_name(const std::pair<Shape, Shape>& p) {
  return hg::shape_str(p.first) + " with " + hg::shape_str(p.second);
}

// `x` with a share of its entries replaced by exact zeros.
Tensor with_zeros(const Tensor& x, std::uint64_t seed) {
  return hg::masked_fill(x, random_mask(x.shape(), 0.2, seed), 0.0);
}

}  // namespace

TEST_CASE("add, sub, mul, div and pow on the GPU match the CPU for broadcasting shapes") {
  std::uint64_t seed = 100;
  for (const auto& p : kPairs) {
    const std::string shapes = pair_name(p);
    CAPTURE(shapes);
    // The gradient of a broadcast input sums over the broadcast dims: 513 float32 terms for
    // the (1025) of the large pair, added in another order on each side, differ by a few
    // 1e-5 (measured on an H200: up to 3.7e-5); short sums stay at the default 1e-5.
    const std::int64_t out = hg::numel_of(hg::broadcast_shapes(p.first, p.second, "test"));
    const std::int64_t summed =
        out / std::max<std::int64_t>(1, std::min(hg::numel_of(p.first), hg::numel_of(p.second)));
    const ParityOptions options =
        ParityOptions().with_backward({1e-12, summed > 64 ? 1e-4 : 1e-5, 1.0});
    const Tensor a = grad_input(random(p.first, ++seed));
    const Tensor b = grad_input(random(p.second, ++seed));
    const Tensor pos_a = grad_input(random_uniform(p.first, ++seed));
    const Tensor pos_b = grad_input(random_uniform(p.second, ++seed));
    check_parity(
        "add", [](const V& in) { return hg::add(in[0], in[1]); }, {a, b}, options);
    check_parity(
        "add with alpha", [](const V& in) { return hg::add(in[0], in[1], -0.75); }, {a, b},
        options);
    check_parity(
        "sub with alpha", [](const V& in) { return hg::sub(in[0], in[1], 2.5); }, {a, b}, options);
    check_parity(
        "mul", [](const V& in) { return hg::mul(in[0], in[1]); }, {a, b}, options);
    check_parity(
        "div", [](const V& in) { return hg::div(in[0], in[1]); }, {a, pos_b}, options);
    check_parity(
        "pow", [](const V& in) { return hg::pow(in[0], in[1]); }, {pos_a, b}, options);
    check_parity(
        "operators + - * /", [](const V& in) { return (in[0] + in[1]) * in[0] - in[1] / in[2]; },
        {a, b, pos_b}, options);
  }
}

TEST_CASE("maximum and minimum on the GPU split tied gradients half and half as the CPU does") {
  std::uint64_t seed = 200;
  for (const auto& p : kPairs) {
    const std::string shapes = pair_name(p);
    CAPTURE(shapes);
    // Integers in [-2, 2]: about a fifth of the pairs tie exactly.
    const Tensor a = grad_input(random_integers(p.first, ++seed));
    const Tensor b = grad_input(random_integers(p.second, ++seed));
    check_parity("maximum", [](const V& in) { return hg::maximum(in[0], in[1]); }, {a, b});
    check_parity("minimum", [](const V& in) { return hg::minimum(in[0], in[1]); }, {a, b});
  }
  // NaN wins on either side; infinities compare as numbers.
  const Tensor x = hg::from_vector<double>({1, kNaN, 2, -kInf, kInf, kNaN}, {6});
  const Tensor y = hg::from_vector<double>({kNaN, 1, 2, 3, -kInf, kNaN}, {6});
  check_parity("maximum with NaN", [](const V& in) { return hg::maximum(in[0], in[1]); }, {x, y});
  check_parity("minimum with NaN", [](const V& in) { return hg::minimum(in[0], in[1]); }, {x, y});
}

TEST_CASE("the scalar variants of the binary ops on the GPU match the CPU") {
  const Shape shape{7, 33};
  const Tensor a = grad_input(random(shape, 300));
  const Tensor pos = grad_input(random_uniform(shape, 301));
  const Tensor ints = grad_input(random_integers(shape, 302, 3));  // negative bases, zeros
  check_parity("add scalar", [](const V& in) { return hg::add(in[0], 1.5); }, {a});
  check_parity("sub scalar", [](const V& in) { return hg::sub(in[0], 0.25); }, {a});
  check_parity("rsub scalar", [](const V& in) { return hg::rsub(in[0], 2.0); }, {a});
  check_parity("mul scalar", [](const V& in) { return hg::mul(in[0], -3.0); }, {a});
  check_parity("div scalar", [](const V& in) { return hg::div(in[0], 7.0); }, {a});
  check_parity("rdiv scalar", [](const V& in) { return hg::rdiv(in[0], 2.0); }, {pos});
  check_parity("pow 2.5", [](const V& in) { return hg::pow(in[0], 2.5); }, {pos});
  check_parity("pow -0.5", [](const V& in) { return hg::pow(in[0], -0.5); }, {pos});
  check_parity("pow 0 (gradient zero)", [](const V& in) { return hg::pow(in[0], 0.0); }, {a});
  check_parity("pow 2 of negatives and zeros", [](const V& in) { return hg::pow(in[0], 2.0); },
               {ints});
  check_parity("pow 3 of negatives and zeros", [](const V& in) { return hg::pow(in[0], 3.0); },
               {ints});
  check_parity("2 ^ x", [](const V& in) { return hg::pow(2.0, in[0]); }, {a});
  check_parity("0.5 ^ x", [](const V& in) { return hg::pow(0.5, in[0]); }, {a});
  check_parity("scalar operators",
               [](const V& in) {
                 return (in[0] + 1.0) * 2.0 - 0.5 / in[1] + (3.0 - in[0]) / 4.0 +
                        (1.0 + in[0]) * (2.0 * in[0]) - (in[1] - 1.0) + -in[0];
               },
               {a, pos});
}

TEST_CASE("unary ops on the GPU match the CPU, exact zeros and clamp boundaries included") {
  const Shape shape{9, 65};
  const Tensor a = grad_input(random(shape, 400, 2.0));
  const Tensor wide = grad_input(random(shape, 401, 12.0));  // saturates tanh and sigmoid
  const Tensor zeros = grad_input(with_zeros(random(shape, 402), 403));
  const Tensor pos = grad_input(random_uniform(shape, 404, 0.05, 4.0));
  // Exactly -0.5 and 0.5 at some entries: clamp's gradient is 1 on the boundary.
  const Tensor bounds = grad_input(
      hg::masked_fill(hg::masked_fill(random(shape, 405), random_mask(shape, 0.1, 406), -0.5),
                      random_mask(shape, 0.1, 407), 0.5));
  check_parity("neg", [](const V& in) { return hg::neg(in[0]); }, {a});
  check_parity("exp", [](const V& in) { return hg::exp(in[0]); }, {a});
  check_parity("exp of wide inputs", [](const V& in) { return hg::exp(in[0]); }, {wide});
  check_parity("log", [](const V& in) { return hg::log(in[0]); }, {pos});
  check_parity("sqrt", [](const V& in) { return hg::sqrt(in[0]); }, {pos});
  check_parity("rsqrt", [](const V& in) { return hg::rsqrt(in[0]); }, {pos});
  check_parity("abs", [](const V& in) { return hg::abs(in[0]); }, {zeros});
  check_parity("tanh", [](const V& in) { return hg::tanh(in[0]); }, {wide});
  check_parity("sigmoid", [](const V& in) { return hg::sigmoid(in[0]); }, {wide});
  check_parity("relu", [](const V& in) { return hg::relu(in[0]); }, {zeros});
  check_parity("gelu", [](const V& in) { return hg::gelu(in[0]); }, {a});
  check_parity("gelu tanh",
               [](const V& in) { return hg::gelu(in[0], hg::GeluApproximation::tanh); }, {a});
  check_parity("clamp", [](const V& in) { return hg::clamp(in[0], -0.5, 0.5); }, {bounds});
  check_parity("tensor methods exp, log, pow",
               [](const V& in) { return in[0].exp() + in[1].log() + in[1].pow(1.5); }, {a, pos});
  // Special values go through as on the CPU (forward only).
  const Tensor special =
      hg::from_vector<double>({0.0, -0.0, kInf, -kInf, kNaN, 1e-300, -1e-300, 710.0}, {8});
  using Unary = Tensor (*)(const Tensor&);
  const std::vector<std::pair<const char*, Unary>> unary = {
      {"neg", hg::neg},   {"exp", hg::exp},         {"log", hg::log},
      {"sqrt", hg::sqrt}, {"rsqrt", hg::rsqrt},     {"abs", hg::abs},
      {"tanh", hg::tanh}, {"sigmoid", hg::sigmoid}, {"relu", hg::relu}};
  for (const auto& entry : unary) {
    const Unary fn = entry.second;
    check_parity(std::string(entry.first) + " of special values",
                 [fn](const V& in) { return fn(in[0]); }, {special});
  }
}

TEST_CASE("comparisons, logical_not and where on the GPU match the CPU") {
  std::uint64_t seed = 500;
  for (const auto& p : kPairs) {
    const std::string shapes = pair_name(p);
    CAPTURE(shapes);
    const Tensor a = random_integers(p.first, ++seed);  // ties and exact equality
    const Tensor b = random_integers(p.second, ++seed);
    check_parity_multi(
        "eq ne lt le gt ge",
        [](const V& in) {
          return V{hg::eq(in[0], in[1]), hg::ne(in[0], in[1]), hg::lt(in[0], in[1]),
                   hg::le(in[0], in[1]), hg::gt(in[0], in[1]), hg::ge(in[0], in[1])};
        },
        {a, b}, exact());
  }
  const Tensor mask = random_mask({5, 6}, 0.5, 510);
  check_parity("logical_not", [](const V& in) { return hg::logical_not(in[0]); }, {mask});

  // where broadcasts all three operands; the gradient reaches both branches.
  const Tensor cond = random_mask({3, 1, 6}, 0.5, 511);
  const Tensor x = grad_input(random({4, 1}, 512));
  const Tensor y = grad_input(random({1, 4, 6}, 513));
  check_parity("where", [](const V& in) { return hg::where(in[0], in[1], in[2]); }, {cond, x, y});
  // Comparisons of float operands feed a where, as a mask would.
  check_parity("where of a comparison",
               [](const V& in) { return hg::where(hg::gt(in[0], in[1]), in[0], in[1] * 2.0); },
               {grad_input(random({8, 9}, 514)), grad_input(random({9}, 515))});
}
