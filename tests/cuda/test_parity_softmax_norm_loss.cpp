// softmax and log_softmax (ops/softmax.hpp), layer_norm (ops/norm.hpp) and the losses
// (ops/loss.hpp) on the GPU against the CPU, forward and backward, in float64 and float32:
// every dim (last and not), both SoftmaxModes with partly and fully masked rows, layer
// norm over one and two trailing dims with and without affine parameters, cross_entropy
// in every layout with ignore_index and label smoothing, mse_loss.
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

constexpr double kInf = std::numeric_limits<double>::infinity();

const char* mode_name(hg::SoftmaxMode mode) {
  return mode == hg::SoftmaxMode::safe ? "safe" : "standard";
}

// A mask of (4, 6, 5) blocking about a third of the entries, plus every entry of some rows
// along `dim`, so that both modes meet fully masked rows.
Tensor mask_with_full_rows(std::int64_t dim, std::uint64_t seed) {
  const Shape shape{4, 6, 5};
  Shape row_shape = shape;
  row_shape[static_cast<std::size_t>(dim)] = 1;
  return mask_or(random_mask(row_shape, 0.25, seed + 1), random_mask(shape, 0.35, seed));
}

}  // namespace

TEST_CASE("softmax and log_softmax on the GPU match the CPU over every dim") {
  const Tensor x = grad_input(random({4, 6, 5}, 800, 3.0));
  for (std::int64_t dim : {0, 1, 2, -1}) {
    for (hg::SoftmaxMode mode : {hg::SoftmaxMode::standard, hg::SoftmaxMode::safe}) {
      CAPTURE(dim);
      const std::string m = mode_name(mode);
      CAPTURE(m);
      check_parity("softmax", [=](const V& in) { return hg::softmax(in[0], dim, mode); }, {x});
      check_parity("log_softmax", [=](const V& in) { return hg::log_softmax(in[0], dim, mode); },
                   {x});
    }
  }
  // Long rows (several warps or blocks per row), large logits (the max shift matters).
  const Tensor wide = grad_input(random({3, 5000}, 801, 30.0));
  check_parity("softmax of long rows", [](const V& in) { return hg::softmax(in[0], -1); }, {wide});
  check_parity(
      "log_softmax of long rows", [](const V& in) { return hg::log_softmax(in[0], 1); }, {wide},
      tolerances(1e-12, 1e-5, 100.0));
  check_parity("softmax of long columns", [](const V& in) { return in[0].softmax(0); },
               {grad_input(random({2000, 7}, 802, 5.0))});
}

TEST_CASE("softmax on the GPU matches the CPU in both modes, fully masked rows included") {
  const Tensor x = grad_input(random({4, 6, 5}, 810, 2.0));
  std::uint64_t seed = 811;
  for (std::int64_t dim : {2, 1, 0}) {
    const Tensor mask = mask_with_full_rows(dim, seed += 2);
    for (hg::SoftmaxMode mode : {hg::SoftmaxMode::standard, hg::SoftmaxMode::safe}) {
      CAPTURE(dim);
      const std::string m = mode_name(mode);
      CAPTURE(m);
      // Standard mode: NaN rows (output and gradient) exactly where the CPU has them; safe
      // mode: zeros for softmax, -inf for log_softmax, zero gradients.
      check_parity(
          "masked softmax",
          [=](const V& in) { return hg::softmax(hg::masked_fill(in[0], in[1], -kInf), dim, mode); },
          {x, mask});
      check_parity("masked log_softmax",
                   [=](const V& in) {
                     return hg::log_softmax(hg::masked_fill(in[0], in[1], -kInf), dim, mode);
                   },
                   {x, mask});
    }
  }
  // Every row masked.
  for (hg::SoftmaxMode mode : {hg::SoftmaxMode::standard, hg::SoftmaxMode::safe}) {
    const std::string m = mode_name(mode);
    CAPTURE(m);
    check_parity_multi("all rows masked",
                       [=](const V& in) {
                         const Tensor masked = hg::masked_fill(in[0], in[1], -kInf);
                         return V{hg::softmax(masked, -1, mode), hg::log_softmax(masked, 0, mode)};
                       },
                       {grad_input(random({3, 4}, 820)), hg::ones({3, 4}, hg::kBool)});
  }
}

TEST_CASE("layer_norm on the GPU matches the CPU with and without affine parameters") {
  const Tensor x = grad_input(random({3, 4, 16}, 830, 2.0));
  const Tensor w = grad_input(random({16}, 831));
  const Tensor b = grad_input(random({16}, 832));
  check_parity("layer_norm", [](const V& in) { return hg::layer_norm(in[0], {16}, in[1], in[2]); },
               {x, w, b});
  check_parity("layer_norm without bias",
               [](const V& in) { return hg::layer_norm(in[0], {16}, in[1]); }, {x, w});
  check_parity("layer_norm without affine",
               [](const V& in) { return hg::layer_norm(in[0], {16}, {}, {}, 1e-3); }, {x});
  // Over the last two dims.
  check_parity("layer_norm over two dims",
               [](const V& in) {
                 return hg::layer_norm(in[0], {4, 16}, in[1], in[2]);
               },
               {x, grad_input(random({4, 16}, 833)), grad_input(random({4, 16}, 834))});
  // Long rows, an offset mean and a constant row (variance 0: only eps keeps it finite).
  Tensor rows = hg::add(random({8, 3000}, 835), 50.0);
  rows = hg::where(random_mask({8, 1}, 0.3, 836), hg::full({8, 3000}, 4.0, hg::kFloat64), rows);
  check_parity(
      "layer_norm of long offset rows",
      [](const V& in) { return hg::layer_norm(in[0], {3000}, in[1], in[2]); },
      {grad_input(rows), grad_input(random({3000}, 837)), grad_input(random({3000}, 838))},
      tolerances(1e-11, 2e-4, 1.0));
}

TEST_CASE("cross_entropy on the GPU matches the CPU with ignore_index and label smoothing") {
  const std::int64_t n = 12, c = 7;
  const Tensor logits = grad_input(random({n, c}, 840, 2.0));
  // Targets with -100 (the default ignore_index) and 3 (a custom one) mixed in.
  const Tensor classes = random_indices({n}, 0, c, 841);
  const Tensor ignored = random_mask({n}, 0.25, 842);
  for (hg::Reduction reduction : {hg::Reduction::mean, hg::Reduction::sum, hg::Reduction::none}) {
    for (double smoothing : {0.0, 0.1, 0.5}) {
      for (std::int64_t ignore : {std::int64_t{-100}, std::int64_t{3}}) {
        CAPTURE(static_cast<int>(reduction));
        CAPTURE(smoothing);
        CAPTURE(ignore);
        // A quarter of the targets are ignore_index; with 3, genuine 3s are ignored too.
        check_parity("cross_entropy (N, C)",
                     [=](const V& in) {
                       return hg::cross_entropy(in[0], in[1], reduction, ignore, smoothing);
                     },
                     {logits, replace_where(classes, ignored, ignore)});
      }
    }
  }
  // (N, C, d1, d2) logits with (N, d1, d2) targets: classes along dim 1, not the last.
  const Tensor spatial_targets =
      replace_where(random_indices({2, 3, 4}, 0, 5, 843), random_mask({2, 3, 4}, 0.2, 844), -100);
  for (double smoothing : {0.0, 0.2}) {
    CAPTURE(smoothing);
    check_parity("cross_entropy (N, C, d1, d2)",
                 [=](const V& in) {
                   return hg::cross_entropy(in[0], in[1], hg::Reduction::mean, -100, smoothing);
                 },
                 {grad_input(random({2, 5, 3, 4}, 845, 2.0)), spatial_targets});
  }
  // (C) logits with a 0-d target.
  check_parity(
      "cross_entropy (C)",
      [](const V& in) { return hg::cross_entropy(in[0], in[1], hg::Reduction::mean, -100, 0.1); },
      {grad_input(random({9}, 846)), hg::scalar_tensor(4, hg::kInt64)});
  // Every target ignored: the mean is NaN (0/0) on both devices, the gradient zero.
  check_parity("cross_entropy with every target ignored",
               [](const V& in) { return hg::cross_entropy(in[0], in[1]); },
               {logits, hg::full({n}, -100, hg::kInt64)});
  // Many classes (a long row per position, as a language model's vocabulary).
  check_parity(
      "cross_entropy over 5000 classes",
      [](const V& in) { return hg::cross_entropy(in[0], in[1], hg::Reduction::mean, -100, 0.1); },
      {grad_input(random({6, 5000}, 847, 3.0)), random_indices({6}, 0, 5000, 848)},
      tolerances(1e-12, 2e-5));
}

TEST_CASE("mse_loss on the GPU matches the CPU for every reduction and broadcast targets") {
  const Tensor input = grad_input(random({5, 6}, 850));
  const Tensor target = grad_input(random({5, 6}, 851));
  for (hg::Reduction reduction : {hg::Reduction::mean, hg::Reduction::sum, hg::Reduction::none}) {
    CAPTURE(static_cast<int>(reduction));
    check_parity("mse_loss", [=](const V& in) { return hg::mse_loss(in[0], in[1], reduction); },
                 {input, target});
    check_parity("mse_loss with a broadcast target",
                 [=](const V& in) { return hg::mse_loss(in[0], in[1], reduction); },
                 {input, grad_input(random({6}, 852))});
  }
}
