// Shape and layout ops (ops/shape_ops.hpp) and masked_fill (ops/mask.hpp) on the GPU
// against the CPU, forward and backward, in float64 and float32. These ops only move or
// select elements, so their outputs and gradients (the loss weights moved back into
// place) must be equal to the CPU's, not just close; only expand's backward sums.
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

const ParityOptions kExact = exact();

// Pieces returned as the outputs of a multi-output case.
V pieces(std::vector<Tensor> v) { return v; }

}  // namespace

TEST_CASE("reshape, view, flatten, squeeze and unsqueeze on the GPU give the CPU's values") {
  const Tensor x = grad_input(random({2, 1, 3, 4}, 700));
  check_parity(
      "reshape",
      [](const V& in) {
        return hg::reshape(in[0], {4, -1});
      },
      {x}, kExact);
  check_parity(
      "view",
      [](const V& in) {
        return hg::view(in[0], {3, 8});
      },
      {x}, kExact);
  check_parity(
      "reshape method", [](const V& in) { return in[0].reshape({24}); }, {x}, kExact);
  check_parity(
      "flatten", [](const V& in) { return hg::flatten(in[0], 1, 2); }, {x}, kExact);
  check_parity(
      "flatten all", [](const V& in) { return in[0].flatten(); }, {x}, kExact);
  check_parity(
      "unsqueeze", [](const V& in) { return hg::unsqueeze(in[0], -1); }, {x}, kExact);
  check_parity(
      "squeeze all", [](const V& in) { return hg::squeeze(in[0]); }, {x}, kExact);
  check_parity(
      "squeeze dim", [](const V& in) { return hg::squeeze(in[0], 1); }, {x}, kExact);
  check_parity(
      "squeeze of a non-1 dim", [](const V& in) { return hg::squeeze(in[0], 2); }, {x}, kExact);
}

TEST_CASE("transpose and permute on the GPU give the CPU's values for every dim order") {
  const Tensor x = grad_input(random({2, 3, 4, 5}, 710));
  const std::vector<Shape> orders = {{0, 1, 2, 3}, {3, 2, 1, 0}, {0, 2, 1, 3},
                                     {1, 0, 3, 2}, {2, 0, 3, 1}, {0, 1, 3, 2}};
  for (const Shape& order : orders) {
    const std::string name = hg::shape_str(order);
    CAPTURE(name);
    check_parity(
        "permute", [&](const V& in) { return hg::permute(in[0], order); }, {x}, kExact);
  }
  for (auto [d0, d1] : std::vector<std::pair<std::int64_t, std::int64_t>>{
           {0, 1}, {1, 2}, {2, 3}, {-1, -2}, {0, 3}, {1, 1}}) {
    CAPTURE(d0);
    CAPTURE(d1);
    check_parity(
        "transpose", [=](const V& in) { return hg::transpose(in[0], d0, d1); }, {x}, kExact);
  }
  // A large transpose (tiles of a blocked kernel, ragged edges).
  check_parity(
      "t of a large matrix", [](const V& in) { return in[0].t(); },
      {grad_input(random({515, 257}, 711))}, kExact);
}

TEST_CASE("expand on the GPU gives the CPU's values and summed gradients") {
  const Tensor x = grad_input(random({3, 1, 4}, 720));
  check_parity(
      "expand",
      [](const V& in) {
        return hg::expand(in[0], {2, 3, 5, 4});
      },
      {x}, exact(/*backward=*/false));
  check_parity(
      "expand with -1",
      [](const V& in) {
        return in[0].expand({-1, 6, -1});
      },
      {x}, exact(/*backward=*/false));
  check_parity(
      "expand a 0-d tensor",
      [](const V& in) {
        return hg::expand(in[0], {7, 9});
      },
      {grad_input(random({}, 721))}, exact(/*backward=*/false));
}

TEST_CASE("concat and stack on the GPU give the CPU's values along every dim") {
  const Tensor a = grad_input(random({2, 3, 4}, 730));
  const Tensor b = grad_input(random({2, 3, 4}, 731));
  const Tensor c = grad_input(random({2, 3, 4}, 732));
  for (std::int64_t dim : {0, 1, 2, -1}) {
    CAPTURE(dim);
    check_parity(
        "concat", [=](const V& in) { return hg::concat(in, dim); }, {a, b, c}, kExact);
    check_parity(
        "stack", [=](const V& in) { return hg::stack(in, dim); }, {a, b, c}, kExact);
  }
  check_parity(
      "stack at the end", [](const V& in) { return hg::stack(in, 3); }, {a, b}, kExact);
  // Pieces of different sizes along the concatenated dim.
  check_parity(
      "cat of uneven pieces", [](const V& in) { return hg::cat(in, 1); },
      {grad_input(random({2, 1, 4}, 733)), grad_input(random({2, 5, 4}, 734)),
       grad_input(random({2, 2, 4}, 735))},
      kExact);
}

TEST_CASE("split, split_with_sizes and chunk on the GPU give the CPU's pieces") {
  const Tensor x = grad_input(random({5, 7, 3}, 740));
  for (std::int64_t dim : {0, 1, -1}) {
    CAPTURE(dim);
    check_parity_multi(
        "split by 2", [=](const V& in) { return pieces(hg::split(in[0], 2, dim)); }, {x}, kExact);
    check_parity_multi(
        "chunk into 3", [=](const V& in) { return pieces(hg::chunk(in[0], 3, dim)); }, {x}, kExact);
  }
  check_parity_multi(
      "split_with_sizes",
      [](const V& in) {
        return pieces(hg::split_with_sizes(in[0], {1, 4, 2}, 1));
      },
      {x}, kExact);
  // Only some pieces used: the others get zero gradient.
  check_parity(
      "one piece of a split", [](const V& in) { return hg::split(in[0], 3, 1)[1] * 2.0; }, {x},
      kExact);
}

TEST_CASE("narrow, slice and select on the GPU give the CPU's values and gradients") {
  const Tensor x = grad_input(random({6, 8, 5}, 750));
  check_parity(
      "narrow", [](const V& in) { return hg::narrow(in[0], 1, 2, 4); }, {x}, kExact);
  check_parity(
      "narrow method", [](const V& in) { return in[0].narrow(-1, 1, 3); }, {x}, kExact);
  struct Slice {
    std::int64_t dim, start, end, step;
  };
  for (const Slice& s : std::vector<Slice>{{0, 1, 5, 1},
                                           {1, 0, 8, 3},
                                           {1, -5, -1, 2},
                                           {2, -100, 100, 1},
                                           {0, 4, 2, 1},  // empty
                                           {2, 1, 5, 4}}) {
    CAPTURE(s.dim);
    CAPTURE(s.start);
    CAPTURE(s.end);
    CAPTURE(s.step);
    check_parity(
        "slice", [=](const V& in) { return hg::slice(in[0], s.dim, s.start, s.end, s.step); }, {x},
        kExact);
  }
  for (auto [dim, index] : std::vector<std::pair<std::int64_t, std::int64_t>>{
           {0, 0}, {0, -1}, {1, 3}, {2, 4}, {-1, 0}}) {
    CAPTURE(dim);
    CAPTURE(index);
    check_parity(
        "select", [=](const V& in) { return hg::select(in[0], dim, index); }, {x}, kExact);
  }
}

TEST_CASE("masked_fill on the GPU matches the CPU for broadcast masks and causal masks") {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const Tensor x = grad_input(random({2, 3, 5, 5}, 760));
  const std::vector<Shape> mask_shapes = {{2, 3, 5, 5}, {5, 5}, {2, 1, 1, 5}, {3, 1, 1}, {}};
  std::uint64_t seed = 761;
  for (const Shape& ms : mask_shapes) {
    const std::string name = hg::shape_str(ms);
    CAPTURE(name);
    const Tensor mask = random_mask(ms, 0.4, ++seed);
    check_parity(
        "masked_fill with 0", [](const V& in) { return hg::masked_fill(in[0], in[1], 0.0); },
        {x, mask}, kExact);
    check_parity(
        "masked_fill with -inf", [](const V& in) { return in[0].masked_fill(in[1], -kInf); },
        {x, mask}, kExact);
  }
  // causal_mask builds on the CPU; moved to the GPU it blocks the same entries.
  check_parity(
      "masked_fill with a causal mask",
      [](const V& in) { return hg::masked_fill(in[0], in[1], -1e9); }, {x, hg::causal_mask(5)},
      kExact);
  check_parity(
      "causal_mask (target, source)",
      [](const V& in) { return hg::masked_fill(in[0], in[1], 7.0); },
      {grad_input(random({4, 6}, 770)), hg::causal_mask(4, 6)}, kExact);
}
