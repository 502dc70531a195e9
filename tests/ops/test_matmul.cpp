// matmul and linear: forward against naive loops (and xt::linalg::dot for 2-d), gradients
// against central differences for every rank combination, float32 against float64, and
// the error messages.
#include <xtensor-blas/xlinalg.hpp>
#include <xtensor/xadapt.hpp>
#include <xtensor/xtensor.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "helpers.hpp"

using namespace headgrad;
using testing::check_float32_matches_float64;
using testing::check_gradcheck;
using testing::max_abs_diff;
using testing::param;

namespace {

// torch.matmul written out element by element: promote 1-d operands, broadcast the batch
// dims (size-1 dims repeat), triple loop per batch, drop the promoted dims.
Tensor naive_matmul(const Tensor& a, const Tensor& b) {
  Shape sa = a.shape(), sb = b.shape();
  const bool a_vec = sa.size() == 1, b_vec = sb.size() == 1;
  if (a_vec) sa.insert(sa.begin(), 1);
  if (b_vec) sb.push_back(1);
  const std::int64_t m = sa[sa.size() - 2], k = sa.back(), n = sb.back();
  REQUIRE(sb[sb.size() - 2] == k);
  const std::size_t batch_rank = std::max(sa.size(), sb.size()) - 2;
  // pad both to the same rank with leading 1s
  sa.insert(sa.begin(), batch_rank + 2 - sa.size(), 1);
  sb.insert(sb.begin(), batch_rank + 2 - sb.size(), 1);
  Shape batch(batch_rank);
  std::int64_t batch_count = 1;
  for (std::size_t d = 0; d < batch_rank; ++d) {
    batch[d] = std::max(sa[d], sb[d]);
    batch_count *= batch[d];
  }
  const auto va = a.to_vector<double>(), vb = b.to_vector<double>();
  std::vector<double> vc(static_cast<std::size_t>(batch_count * m * n), 0.0);
  for (std::int64_t flat = 0; flat < batch_count; ++flat) {
    // multi-index of this batch, then the matrix each operand reads
    std::int64_t rest = flat, ia = 0, ib = 0, stride_a = 1, stride_b = 1;
    for (std::size_t d = batch_rank; d-- > 0;) {
      const std::int64_t idx = rest % batch[d];
      rest /= batch[d];
      ia += (sa[d] == 1 ? 0 : idx) * stride_a;
      ib += (sb[d] == 1 ? 0 : idx) * stride_b;
      stride_a *= sa[d];
      stride_b *= sb[d];
    }
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (std::int64_t p = 0; p < k; ++p)
          s += va[ia * m * k + i * k + p] * vb[ib * k * n + p * n + j];
        vc[flat * m * n + i * n + j] = s;
      }
  }
  Shape out = batch;
  if (!a_vec) out.push_back(m);
  if (!b_vec) out.push_back(n);
  return from_vector(vc, out, kFloat64);
}

// x (*, in) @ W^T + bias, element by element.
Tensor naive_linear(const Tensor& x, const Tensor& w, const Tensor& bias) {
  const std::int64_t out = w.size(0), in = w.size(1);
  const auto vx = x.to_vector<double>(), vw = w.to_vector<double>();
  const std::int64_t rows = x.numel() / in;
  std::vector<double> vy(static_cast<std::size_t>(rows * out));
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t o = 0; o < out; ++o) {
      double s = bias.defined() ? bias.at({o}) : 0.0;
      for (std::int64_t i = 0; i < in; ++i) s += vx[r * in + i] * vw[o * in + i];
      vy[r * out + o] = s;
    }
  Shape shape(x.shape().begin(), x.shape().end() - 1);
  shape.push_back(out);
  return from_vector(vy, shape, kFloat64);
}

// Operand shapes for ranks (ra, rb) with m=3, k=4, n=5 (non-square). Variant 0 gives both
// operands the full batch (3,2) suffix; variant 1 puts size-1 dims in different places so
// that both operands broadcast against each other.
std::pair<Shape, Shape> rank_case(int ra, int rb, int variant) {
  const Shape full_batch{3, 2};
  auto batch_of = [&](int rank, bool is_a) {
    Shape batch(full_batch.end() - (rank - 2), full_batch.end());
    if (variant == 1 && !batch.empty()) {
      if (is_a)
        batch.back() = 1;  // a broadcasts along the last batch dim
      else if (batch.size() == 2)
        batch.front() = 1;  // b along the first
    }
    return batch;
  };
  Shape a = ra == 1 ? Shape{4} : batch_of(ra, true);
  if (ra > 1) a.insert(a.end(), {3, 4});
  Shape b = rb == 1 ? Shape{4} : batch_of(rb, false);
  if (rb > 1) b.insert(b.end(), {4, 5});
  return {a, b};
}

Tensor matmul_fn(const std::vector<Tensor>& in) { return matmul(in[0], in[1]); }

}  // namespace

TEST_CASE("matmul matches a naive triple loop for every rank combination 1..4 x 1..4") {
  for (int ra = 1; ra <= 4; ++ra)
    for (int rb = 1; rb <= 4; ++rb)
      for (int variant = 0; variant < 2; ++variant) {
        auto [sa, sb] = rank_case(ra, rb, variant);
        INFO(shape_str(sa) << " @ " << shape_str(sb));
        Tensor a = param(sa, 10 + ra), b = param(sb, 20 + rb);
        Tensor c = matmul(a, b);
        Tensor expected = naive_matmul(a, b);
        CHECK(c.shape() == expected.shape());
        CHECK(max_abs_diff(c, expected) < 1e-12);
      }
}

TEST_CASE("matmul follows torch.matmul's shape rules for vectors and broadcast batches") {
  CHECK(matmul(param({4}, 1), param({4}, 2)).shape() == Shape{});  // dot: 0-d
  CHECK(matmul(param({4}, 1), param({4, 5}, 2)).shape() == Shape{5});
  CHECK(matmul(param({3, 4}, 1), param({4}, 2)).shape() == Shape{3});
  CHECK(matmul(param({4}, 1), param({2, 4, 5}, 2)).shape() == Shape{2, 5});
  CHECK(matmul(param({2, 3, 4}, 1), param({4}, 2)).shape() == Shape{2, 3});
  CHECK(matmul(param({2, 1, 3, 4}, 1), param({5, 4, 6}, 2)).shape() == Shape{2, 5, 3, 6});
  // the dot product by hand: 1*4 + 2*5 + 3*6 = 32
  CHECK(matmul(tensor({1, 2, 3}), tensor({4, 5, 6})).item() == doctest::Approx(32.0));
}

TEST_CASE("2-d matmul agrees with xt::linalg::dot") {
  for (auto [m, k, n] : {std::array<std::int64_t, 3>{3, 4, 5}, {7, 1, 2}, {16, 9, 11}}) {
    Tensor a = param({m, k}, 3), b = param({k, n}, 4);
    auto va = a.to_vector<double>(), vb = b.to_vector<double>();
    xt::xtensor<double, 2> xa =
        xt::adapt(va, std::vector<std::size_t>{std::size_t(m), std::size_t(k)});
    xt::xtensor<double, 2> xb =
        xt::adapt(vb, std::vector<std::size_t>{std::size_t(k), std::size_t(n)});
    xt::xtensor<double, 2> xc = xt::linalg::dot(xa, xb);
    std::vector<double> vc(xc.begin(), xc.end());
    CHECK(max_abs_diff(matmul(a, b), from_vector(vc, {m, n}, kFloat64)) < 1e-12);
  }
}

TEST_CASE("matmul gradients match central differences for every rank combination") {
  for (int ra = 1; ra <= 4; ++ra)
    for (int rb = 1; rb <= 4; ++rb)
      for (int variant = 0; variant < 2; ++variant) {
        auto [sa, sb] = rank_case(ra, rb, variant);
        INFO(shape_str(sa) << " @ " << shape_str(sb));
        check_gradcheck(matmul_fn, {param(sa, 30 + ra), param(sb, 40 + rb)});
      }
}

TEST_CASE("matmul gradients of broadcast operands sum over the batches that read them") {
  // a is shared by 2*5 batches, b by 2; both gradients accumulate into smaller buffers.
  check_gradcheck(matmul_fn, {param({2, 1, 3, 4}, 1), param({5, 4, 6}, 2)});
  check_gradcheck(matmul_fn, {param({1, 3, 4}, 3), param({4, 2, 4, 2}, 4)});
  // folded path: b without batch dims, and b with a size-1 batch
  check_gradcheck(matmul_fn, {param({3, 2, 3, 4}, 5), param({4, 2}, 6)});
  check_gradcheck(matmul_fn, {param({3, 5, 4}, 7), param({1, 4, 2}, 8)});
  // by hand: dA = sum over 4 batches of ones(3,5) @ ones(5,2) = 4 * 5 everywhere
  Tensor a = param({3, 2}, 9);
  Tensor b = ones({4, 2, 5}, kFloat64).requires_grad_(true);
  matmul(a, b).backward(ones({4, 3, 5}, kFloat64));
  for (double g : a.grad().to_vector<double>()) CHECK(g == doctest::Approx(4.0 * 5.0));
}

TEST_CASE("matmul with only the left operand requiring grad gives it dC @ B^T") {
  Tensor a = param({2, 3}, 1);
  Tensor b = param({3, 4}, 2).detach();
  matmul(a, b).backward(ones({2, 4}, kFloat64));
  CHECK_FALSE(b.grad().defined());
  // dC = ones: dA[i][p] = sum_j B[p][j], the row sums of B
  const auto vb = b.to_vector<double>();
  const auto ga = a.grad().to_vector<double>();
  for (int i = 0; i < 2; ++i)
    for (int p = 0; p < 3; ++p)
      CHECK(ga[i * 3 + p] ==
            doctest::Approx(vb[p * 4] + vb[p * 4 + 1] + vb[p * 4 + 2] + vb[p * 4 + 3]));
}

TEST_CASE("matmul handles empty dimensions: an empty inner sum is zero") {
  Tensor a = param({2, 0}, 1), b = param({0, 3}, 2);
  Tensor c = matmul(a, b);
  CHECK(c.shape() == Shape{2, 3});
  for (double v : c.to_vector<double>()) CHECK(v == 0.0);
  Tensor a2 = param({0, 3, 4}, 3), b2 = param({1, 4, 5}, 4);
  matmul(a2, b2).backward(ones({0, 3, 5}, kFloat64));
  CHECK(b2.grad().shape() == Shape{1, 4, 5});
  for (double v : b2.grad().to_vector<double>()) CHECK(v == 0.0);
}

TEST_CASE("matmul in float32 agrees with float64, including broadcast batches") {
  check_float32_matches_float64(matmul_fn, {param({2, 1, 3, 4}, 1), param({5, 4, 6}, 2)});
  check_float32_matches_float64(matmul_fn, {param({6, 8, 16}, 3), param({16, 7}, 4)});
  check_float32_matches_float64(matmul_fn, {param({16}, 5), param({3, 16, 4}, 6)});
}

TEST_CASE("matmul errors name the op and both shapes") {
  std::string inner = HG_ERROR_MESSAGE(matmul(zeros({32, 64, 128}), zeros({64, 128})));
  CHECK(inner == "matmul: (32,64,128) @ (64,128): inner dimensions 128 and 64 differ");
  CHECK_THROWS_AS(matmul(zeros({2, 3}), zeros({4, 5})), ShapeError);

  std::string batch = HG_ERROR_MESSAGE(matmul(zeros({2, 3, 4, 5}), zeros({4, 5, 6})));
  CHECK(batch.find("matmul: (2,3,4,5) @ (4,5,6)") == 0);
  CHECK(batch.find("do not broadcast") != std::string::npos);
  CHECK_THROWS_AS(matmul(zeros({2, 3, 4, 5}), zeros({4, 5, 6})), ShapeError);

  std::string zero_d = HG_ERROR_MESSAGE(matmul(scalar_tensor(2.0), zeros({3})));
  CHECK(zero_d.find("matmul: () @ (3)") == 0);
  CHECK(zero_d.find("0-d") != std::string::npos);
  CHECK_THROWS_AS(matmul(zeros({3}), scalar_tensor(2.0)), ShapeError);

  std::string dtype = HG_ERROR_MESSAGE(matmul(zeros({2, 3}), zeros({3, 2}, kFloat64)));
  CHECK(dtype.find("matmul") == 0);
  CHECK_THROWS_AS(matmul(zeros({2, 3}), zeros({3, 2}, kFloat64)), DTypeError);
  CHECK_THROWS_AS(matmul(zeros({2, 3}, DType::int64), zeros({3, 2}, DType::int64)), DTypeError);
}

TEST_CASE("linear matches x @ W^T + bias computed by hand for 1-d, 2-d and 3-d x") {
  Tensor w = param({5, 4}, 1), bias = param({5}, 2);
  for (const Shape& xs : {Shape{4}, Shape{3, 4}, Shape{2, 3, 4}}) {
    INFO(shape_str(xs));
    Tensor x = param(xs, 3);
    CHECK(max_abs_diff(linear(x, w, bias), naive_linear(x, w, bias)) < 1e-12);
    CHECK(max_abs_diff(linear(x, w), naive_linear(x, w, Tensor())) < 1e-12);
  }
  // by hand: x = (1,2), W = ((1,0),(1,1),(0,2)), b = (10,20,30) -> (11, 23, 34)
  Tensor y =
      linear(tensor({1, 2}), from_vector<float>({1, 0, 1, 1, 0, 2}, {3, 2}), tensor({10, 20, 30}));
  CHECK(y.to_vector<double>() == std::vector<double>{11, 23, 34});
}

TEST_CASE("linear gradients match central differences with and without bias") {
  auto with_bias = [](const std::vector<Tensor>& in) { return linear(in[0], in[1], in[2]); };
  auto without_bias = [](const std::vector<Tensor>& in) { return linear(in[0], in[1]); };
  for (const Shape& xs : {Shape{4}, Shape{3, 4}, Shape{2, 3, 4}, Shape{1, 1, 4}}) {
    INFO(shape_str(xs));
    check_gradcheck(with_bias, {param(xs, 4), param({5, 4}, 5), param({5}, 6)});
    check_gradcheck(without_bias, {param(xs, 7), param({5, 4}, 8)});
  }
  // bias gradient by hand: column sums of dy = ones over 2*3 rows
  Tensor bias = param({5}, 9);
  linear(param({2, 3, 4}, 10), param({5, 4}, 11), bias).backward(ones({2, 3, 5}, kFloat64));
  for (double g : bias.grad().to_vector<double>()) CHECK(g == doctest::Approx(6.0));
}

TEST_CASE("linear in float32 agrees with float64") {
  auto fn = [](const std::vector<Tensor>& in) { return linear(in[0], in[1], in[2]); };
  check_float32_matches_float64(fn, {param({4, 6, 16}, 1), param({8, 16}, 2), param({8}, 3)});
}

TEST_CASE("linear errors name the op and the shapes") {
  std::string features = HG_ERROR_MESSAGE(linear(zeros({4, 5}), zeros({3, 6})));
  CHECK(features.find("linear: input (4,5), weight (3,6)") == 0);
  CHECK(features.find("5") != std::string::npos);
  CHECK_THROWS_AS(linear(zeros({4, 5}), zeros({3, 6})), ShapeError);

  std::string bias = HG_ERROR_MESSAGE(linear(zeros({4, 6}), zeros({3, 6}), zeros({4})));
  CHECK(bias.find("linear: input (4,6), weight (3,6), bias (4)") == 0);

  std::string weight = HG_ERROR_MESSAGE(linear(zeros({4, 6}), zeros({6})));
  CHECK(weight.find("linear: input (4,6), weight (6): weight must be 2-d") == 0);

  std::string zero_d = HG_ERROR_MESSAGE(linear(scalar_tensor(1.0), zeros({3, 1})));
  CHECK(zero_d.find("linear: input ()") == 0);

  CHECK_THROWS_AS(linear(zeros({4, 6}), zeros({3, 6}, kFloat64)), DTypeError);
}

// --- grouped_linear: one linear per slice of the leading dim -----------------------------

TEST_CASE("grouped_linear gradients match central differences with and without bias") {
  auto with_bias = [](const std::vector<Tensor>& in) {
    return grouped_linear(in[0], in[1], in[2]);
  };
  auto without_bias = [](const std::vector<Tensor>& in) { return grouped_linear(in[0], in[1]); };
  check_gradcheck(with_bias, {param({3, 2, 4, 5}, 71), param({3, 6, 5}, 72), param({3, 6}, 73)});
  check_gradcheck(without_bias, {param({2, 3, 5}, 74), param({2, 4, 5}, 75)});
}

TEST_CASE("grouped_linear is bitwise linear of each group's slices, in float32") {
  Generator gen(7);
  const Tensor x = randn({4, 6, 9, 16}, kFloat32, &gen);
  const Tensor w = randn({4, 24, 16}, kFloat32, &gen).requires_grad_(true);
  const Tensor b = randn({4, 24}, kFloat32, &gen).requires_grad_(true);
  const Tensor xg = x.detach().requires_grad_(true);
  const Tensor y = grouped_linear(xg, w, b);
  const Tensor dy = randn(y.shape(), kFloat32, &gen);
  sum(mul(y, dy)).backward();
  for (std::int64_t g = 0; g < 4; ++g) {
    CAPTURE(g);
    const Tensor xs = select(x, 0, g).requires_grad_(true);
    const Tensor ws = select(w, 0, g).detach().requires_grad_(true);
    const Tensor bs = select(b, 0, g).detach().requires_grad_(true);
    const Tensor ys = linear(xs, ws, bs);
    sum(mul(ys, select(dy, 0, g))).backward();
    CHECK(select(y, 0, g).to_vector<float>() == ys.to_vector<float>());
    CHECK(select(xg.grad(), 0, g).to_vector<float>() == xs.grad().to_vector<float>());
    CHECK(select(w.grad(), 0, g).to_vector<float>() == ws.grad().to_vector<float>());
    CHECK(select(b.grad(), 0, g).to_vector<float>() == bs.grad().to_vector<float>());
  }
}

TEST_CASE("grouped_linear errors name the op, the shapes and what was expected") {
  const Tensor w = zeros({3, 4, 5});
  auto message = [](const auto& f) {
    try {
      f();
    } catch (const ShapeError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string groups = message([&] { grouped_linear(zeros({2, 7, 5}), w); });
  CHECK(groups.find("grouped_linear: input (2,7,5), weight (3,4,5)") != std::string::npos);
  CHECK(groups.find("groups = 3") != std::string::npos);
  CHECK(message([&] {
          grouped_linear(zeros({3, 7, 6}), w);
        }).find("in_features 5") != std::string::npos);
  CHECK(message([&] {
          grouped_linear(zeros({3, 7, 5}), zeros({4, 5}));
        }).find("weight must be 3-d") != std::string::npos);
  CHECK(message([&] {
          grouped_linear(zeros({3, 7, 5}), w, zeros({4}));
        }).find("bias must be (groups, out_features) = (3,4)") != std::string::npos);
}
