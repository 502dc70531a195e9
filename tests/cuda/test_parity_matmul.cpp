// matmul and linear (ops/matmul.hpp) on the GPU (cuBLAS) against the CPU (OpenBLAS),
// forward and backward, in float64 and float32: every rank combination torch.matmul
// allows, batched 3-d and 4-d operands, broadcast batches, odd sizes, empty inner
// dimensions; linear with and without bias. With TF32 off (the default) float32 agrees
// with the CPU to about 1e-5 of the result's scale; with TF32 on, to a few 1e-3.
//
// Tolerances are normwise (relative to the largest entry of the result): every entry of a
// product carries rounding errors of the size of the largest partial sums.
#include <cstdint>
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

ParityOptions normwise(double f64, double f32) { return tolerances(f64, f32, kNormwise); }

// (a, b) shape pairs: 1-d and 2-d operands in every combination, batches of 3-d and 4-d,
// broadcast batches on either side, k = 1, and odd sizes beyond a few tiles.
const std::vector<std::pair<Shape, Shape>> kShapes = {
    {{5}, {5}},
    {{3, 5}, {5}},
    {{5}, {5, 4}},
    {{3, 5}, {5, 4}},
    {{7, 1}, {1, 9}},
    {{2, 3, 5}, {2, 5, 4}},
    {{2, 3, 3, 5}, {2, 3, 5, 4}},
    {{2, 3, 5}, {5, 4}},
    {{3, 5}, {2, 5, 4}},
    {{5}, {2, 5, 4}},
    {{2, 3, 5}, {5}},
    {{2, 1, 3, 5}, {1, 4, 5, 6}},
    {{3, 1, 3, 5}, {2, 5, 4}},
    {{64, 256}, {256, 96}},
    {{4, 33, 257}, {4, 257, 65}},
    {{2, 2, 31, 129}, {129, 47}},
};

std::string shapes_name(const std::pair<Shape, Shape>& p) {
  return hg::shape_str(p.first) + " @ " + hg::shape_str(p.second);
}

}  // namespace

TEST_CASE("matmul on the GPU matches the CPU for every rank combination and broadcast batch") {
  std::uint64_t seed = 1000;
  for (const auto& p : kShapes) {
    const std::string shapes = shapes_name(p);
    CAPTURE(shapes);
    const Tensor a = grad_input(random(p.first, ++seed));
    const Tensor b = grad_input(random(p.second, ++seed));
    check_parity(
        "matmul", [](const V& in) { return hg::matmul(in[0], in[1]); }, {a, b},
        normwise(1e-12, 1e-5));
  }
  // Only one operand requiring grad, and the method form.
  const Tensor a = grad_input(random({2, 6, 8}, 1100));
  const Tensor b = random({8, 3}, 1101);
  check_parity(
      "matmul with a constant right operand", [](const V& in) { return in[0].matmul(in[1]); },
      {a, b}, normwise(1e-12, 1e-5));
  check_parity(
      "matmul with a constant left operand", [](const V& in) { return hg::matmul(in[1], in[0]); },
      {grad_input(random({8, 3}, 1102)), random({4, 5, 8}, 1103)}, normwise(1e-12, 1e-5));
}

TEST_CASE("matmul on the GPU handles empty dimensions as the CPU does") {
  // An empty inner sum is zero; empty outer or batch dims give empty results.
  const std::vector<std::pair<Shape, Shape>> empty = {
      {{2, 0}, {0, 3}}, {{0, 3, 4}, {1, 4, 5}}, {{3, 4}, {4, 0}}, {{0, 4}, {4, 2}}};
  for (const auto& p : empty) {
    const std::string shapes = shapes_name(p);
    CAPTURE(shapes);
    check_parity(
        "matmul with an empty dimension", [](const V& in) { return hg::matmul(in[0], in[1]); },
        {grad_input(random(p.first, 1110)), grad_input(random(p.second, 1111))}, exact());
  }
}

TEST_CASE(
    "linear on the GPU matches the CPU for 1-d, 2-d, 3-d and 4-d inputs, with and without "
    "bias") {
  const Tensor w = grad_input(random({5, 6}, 1200));
  const Tensor bias = grad_input(random({5}, 1201));
  std::uint64_t seed = 1202;
  for (const Shape& xs : std::vector<Shape>{{6}, {4, 6}, {2, 3, 6}, {2, 2, 3, 6}}) {
    const std::string name = hg::shape_str(xs);
    CAPTURE(name);
    const Tensor x = grad_input(random(xs, ++seed));
    check_parity(
        "linear", [](const V& in) { return hg::linear(in[0], in[1], in[2]); }, {x, w, bias},
        normwise(1e-12, 1e-5));
    check_parity(
        "linear without bias", [](const V& in) { return hg::linear(in[0], in[1]); }, {x, w},
        normwise(1e-12, 1e-5));
  }
  // A transformer-sized projection: (B*T, D) rows folded into one GEMM.
  check_parity(
      "linear of (8, 64, 128) by (384, 128)",
      [](const V& in) { return hg::linear(in[0], in[1], in[2]); },
      {grad_input(random({8, 64, 128}, 1210)), grad_input(random({384, 128}, 1211, 0.1)),
       grad_input(random({384}, 1212))},
      normwise(1e-12, 1e-5));
}

TEST_CASE("float32 matmul on the GPU rounds as the CPU does with TF32 off, the default") {
  CHECK_FALSE(hg::cuda_allow_tf32());
  AllowTf32Guard off(false);
  const Tensor a = grad_input(random({3, 128, 512}, 1300));
  const Tensor b = grad_input(random({512, 256}, 1301));
  check_parity(
      "float32 matmul with TF32 off", [](const V& in) { return hg::matmul(in[0], in[1]); }, {a, b},
      normwise(1e-12, 1e-5).with_dtypes({hg::kFloat32}));
}

TEST_CASE("with TF32 allowed, float32 GPU matmuls agree with the CPU to a looser tolerance") {
  const Tensor a = grad_input(random({3, 128, 512}, 1310));
  const Tensor b = grad_input(random({512, 256}, 1311));
  const Tensor w = grad_input(random({96, 512}, 1312));
  {
    AllowTf32Guard on(true);
    if (hg::cuda_built()) CHECK(hg::cuda_allow_tf32());  // (a build without CUDA keeps it off)
    // TF32 rounds the operands to 10 mantissa bits (relative 2^-11, about 5e-4); the sums
    // are float32. Normwise errors of a few 1e-4 are expected; 5e-3 leaves room.
    check_parity(
        "float32 matmul with TF32", [](const V& in) { return hg::matmul(in[0], in[1]); }, {a, b},
        normwise(1e-12, 5e-3));
    check_parity(
        "float32 linear with TF32", [](const V& in) { return hg::linear(in[0], in[1]); }, {a, w},
        normwise(1e-12, 5e-3));
    // float64 never uses TF32.
    check_parity(
        "float64 matmul with TF32 allowed", [](const V& in) { return hg::matmul(in[0], in[1]); },
        {a, b}, normwise(1e-12, 0).with_dtypes({hg::kFloat64}));
  }
  // The guard restored the default.
  CHECK_FALSE(hg::cuda_allow_tf32());
}
