// Indexing (ops/index.hpp) on the GPU against the CPU: index_select along every dim with
// repeated indices (the backward adds them up), advanced indexing and index_put, embedding
// with repeated indices and padding_idx, one_hot. Dropout (ops/dropout.hpp) on the GPU draws its
// mask from Philox, not from the CPU's stream, so it is checked by its own contract: the same
// generator state gives the bitwise same mask, the keep rate is 1 - p, survivors are scaled by
// exactly 1/(1-p) and so is their gradient, p = 0 and eval mode are the identity.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "parity.hpp"

namespace hg = headgrad;
using hg::Shape;
using hg::Tensor;
using namespace hg::cuda_testing;
using V = std::vector<Tensor>;

TEST_CASE("index_select on the GPU matches the CPU along every dim, repeated indices included") {
  const Tensor x = grad_input(random({5, 6, 4}, 900));
  const Tensor index = hg::from_vector<std::int64_t>({3, 0, 3, 2, 2, 1, 3}, {7});
  for (std::int64_t dim : {0, 1, 2, -1}) {
    CAPTURE(dim);
    // The gradient of a row picked three times is the sum of three slices.
    check_parity("index_select", [=](const V& in) { return hg::index_select(in[0], dim, in[1]); },
                 {x, index});
  }
  check_parity("index_select of an int64 tensor",
               [](const V& in) { return hg::index_select(in[0], 1, in[1]); },
               {random_indices({3, 5}, -50, 50, 901), index});
  // Many repeats of few rows: a deterministic scatter-add without atomics must still sum.
  check_parity(
      "index_select with 2000 picks of 3 rows",
      [](const V& in) { return hg::index_select(in[0], 0, in[1]); },
      {grad_input(random({3, 17}, 902)), random_indices({2000}, 0, 3, 903)},
      tolerances(1e-12, 1e-5, 30.0));
}

TEST_CASE("advanced indexing and index_put on the GPU match the CPU, values and gradients") {
  using namespace hg::indexing;
  const Tensor x = grad_input(random({4, 5, 3}, 910));
  const Tensor rows = hg::from_vector<std::int64_t>({3, -1, 0, 3}, {2, 2});
  const Tensor cols = hg::from_vector<std::int64_t>({1, -2}, {2});
  const Tensor mask = random_mask({4, 5}, 0.5, 911);
  check_parity("x[rows, :, cols] (separated: broadcast dims first)",
               [=](const V& in) {
                 return in[0].index({rows, Slice(), cols});
               },
               {x});
  const Tensor middle = hg::from_vector<std::int64_t>({4, -1, 0, 4}, {2, 2});
  check_parity("x[:, middle, cols] (adjacent)",
               [=](const V& in) {
                 return in[0].index({Slice(), middle, cols});
               },
               {x});
  check_parity("x[mask]", [=](const V& in) { return in[0].index({mask}); }, {x});
  for (bool accumulate : {false, true}) {
    CAPTURE(accumulate);
    // Unique positions without accumulate (a repeated write has no defined winner).
    const Tensor r = accumulate ? rows : hg::from_vector<std::int64_t>({3, 1, 0, 2}, {2, 2});
    check_parity("index_put",
                 [=](const V& in) {
                   return hg::index_put(in[0], {r, Slice(), cols}, in[1], accumulate);
                 },
                 {x, grad_input(random({2, 2, 5}, 912))});
  }
}

TEST_CASE("embedding on the GPU matches the CPU with repeated indices and padding_idx") {
  const Tensor weight = grad_input(random({10, 8}, 910));
  // Index 0 and 7 occur several times; 0 is also the padding index in some cases.
  const Tensor indices =
      hg::from_vector<std::int64_t>({0, 7, 7, 3, 0, 9, 1, 7, 0, 2, 5, 5, 7, 0, 4}, {3, 5});
  check_parity("embedding", [](const V& in) { return hg::embedding(in[0], in[1]); },
               {weight, indices});
  for (std::int64_t padding : {0, 7, 6}) {  // 6 never occurs
    CAPTURE(padding);
    check_parity("embedding with padding_idx",
                 [=](const V& in) { return hg::embedding(in[0], in[1], padding); },
                 {weight, indices});
  }
  check_parity(
      "embedding of 1-d and 0-d indices",
      [](const V& in) {
        return hg::concat(
            {hg::embedding(in[0], in[1]), hg::unsqueeze(hg::embedding(in[0], in[2]), 0)}, 0);
      },
      {weight, hg::from_vector<std::int64_t>({4, 4, 1}, {3}), hg::scalar_tensor(4, hg::kInt64)});
  // A vocabulary-sized table with a batch of tokens, many repeats.
  check_parity("embedding of a batch of tokens",
               [](const V& in) { return hg::embedding(in[0], in[1], 0); },
               {grad_input(random({50, 32}, 911)), random_indices({16, 40}, 0, 50, 912)});
}

TEST_CASE("one_hot on the GPU matches the CPU in float32 and float64") {
  const Tensor indices = random_indices({9}, 0, 6, 920);
  for (hg::DType dtype : {hg::kFloat32, hg::kFloat64}) {
    check_parity(
        "one_hot", [=](const V& in) { return hg::one_hot(in[0], 6, dtype); }, {indices},
        exact(/*backward=*/false));
  }
  check_parity(
      "one_hot of a matrix of indices", [](const V& in) { return hg::one_hot(in[0], 4); },
      {random_indices({3, 5}, 0, 4, 921)}, exact(/*backward=*/false));
}

// gpu_only: the CPU takes one draw per element, not one per call.
TEST_CASE("dropout on the GPU gives bitwise identical masks for the same generator state" *
          doctest::test_suite("gpu_only")) {
  for (hg::DType dtype : {hg::kFloat32, hg::kFloat64}) {
    CAPTURE(hg::to_string(dtype));
    const Tensor x = to_gpu(random_uniform({64, 129}, 930, 0.5, 2.0).to(dtype));
    hg::Generator g1(9), g2(9), g3(10);
    const Tensor a = hg::dropout(x, 0.4, true, &g1);
    const Tensor b = hg::dropout(x, 0.4, true, &g2);
    const Tensor c = hg::dropout(x, 0.4, true, &g3);
    CHECK(a.device() == gpu());
    CHECK(bitwise_equal(a, b));
    CHECK_FALSE(bitwise_equal(a, c));
    // The generator moved on: the next call draws another mask.
    CHECK_FALSE(bitwise_equal(hg::dropout(x, 0.4, true, &g1), a));
    // One next_u64 per call keys the whole mask.
    hg::Generator ref(9);
    ref.next_u64();
    ref.next_u64();
    CHECK(g1.next_u64() == ref.next_u64());
    // The default generator, reseeded, repeats itself too.
    hg::manual_seed(2024);
    const Tensor d = hg::dropout(x, 0.4, true);
    hg::manual_seed(2024);
    CHECK(bitwise_equal(hg::dropout(x, 0.4, true), d));
  }
}

TEST_CASE("dropout on the GPU keeps a fraction 1-p of a million elements") {
  const Tensor x = to_gpu(hg::ones({1000, 1000}, hg::kFloat32));
  for (double p : {0.05, 0.1, 0.5, 0.9}) {
    CAPTURE(p);
    hg::Generator gen(77);
    const Tensor y = hg::dropout(x, p, true, &gen);
    const double kept =
        hg::mean(hg::ne(y, hg::zeros({}, hg::TensorOptions(hg::kFloat32).device(gpu())))
                     .to(hg::kFloat64))
            .item();
    // The standard deviation of the kept fraction is sqrt(p(1-p)/n) <= 5e-4: 3e-3 is 6 of them.
    CHECK(std::abs(kept - (1.0 - p)) < 3e-3);
  }
}

TEST_CASE("dropout on the GPU scales survivors and their gradients by exactly 1/(1-p)") {
  for (hg::DType dtype : {hg::kFloat32, hg::kFloat64}) {
    for (double p : {0.1, 0.3, 0.75, 1.0}) {
      CAPTURE(hg::to_string(dtype));
      CAPTURE(p);
      const Tensor x_cpu = random_uniform({40, 25}, 940, 0.5, 2.0).to(dtype);  // never 0
      const Tensor x = copy_to(x_cpu, gpu(), true);
      hg::Generator gen(6);
      const Tensor y = hg::dropout(x, p, true, &gen);
      const Tensor w_cpu = random({40, 25}, 941).to(dtype);
      hg::sum(hg::mul(y, to_gpu(w_cpu))).backward();
      // The expected values, from the GPU's own keep pattern, with the CPU's arithmetic:
      // x * scale, scale = 1/(1-p) rounded to the dtype, exactly 0 where dropped.
      const Tensor kept = to_cpu(hg::ne(y, hg::zeros_like(y)));
      const Tensor zero = hg::zeros({}, dtype);
      const double scale = p < 1.0 ? 1.0 / (1.0 - p) : 0.0;
      CHECK(bitwise_equal(y, hg::where(kept, hg::mul(x_cpu, scale), zero)));
      CHECK(bitwise_equal(x.grad(), hg::where(kept, hg::mul(w_cpu, scale), zero)));
      if (p == 1.0) CHECK(hg::sum(kept.to(hg::kFloat64)).item() == 0.0);
    }
  }
}

TEST_CASE("dropout on the GPU with p = 0 or in eval mode is the identity") {
  const Tensor x = copy_to(random({7, 9}, 950), gpu(), true);
  hg::Generator gen(3);
  const std::uint64_t before = hg::Generator(3).next_u64();
  for (const Tensor& y : {hg::dropout(x, 0.0, true, &gen), hg::dropout(x, 0.5, false, &gen)}) {
    CHECK(y.device() == gpu());
    CHECK(bitwise_equal(y, x));
  }
  // Neither took a draw.
  CHECK(gen.next_u64() == before);
  const Tensor w = random({7, 9}, 951);
  hg::sum(hg::mul(hg::dropout(x, 0.5, false), to_gpu(w))).backward();
  CHECK(bitwise_equal(x.grad(), w));
}
