// The attention op's scaled_dot_product_attention (ops/attention.hpp): values against a
// plain-loop reference, every mask convention, causal masking, fully masked rows, dropout,
// gradients, the edit callbacks and errors. nn::functional re-exports it.
#include <doctest/doctest.h>

#include <limits>
#include <string>
#include <type_traits>

#include "headgrad/headgrad.hpp"
#include "helpers.hpp"
#include "nn/reference_attention.hpp"

using namespace headgrad;
using headgrad::AttentionMask;
using headgrad::AttentionOptions;
using headgrad::scaled_dot_product_attention;
using testing::param;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// A (L, S) bool mask from a list of blocked (i, j) pairs.
Tensor blocked_mask(std::int64_t L, std::int64_t S,
                    const std::vector<std::pair<int, int>>& blocked) {
  Tensor m = zeros({L, S}, kBool);
  for (auto [i, j] : blocked) m.set_at({i, j}, 1);
  return m;
}

std::vector<bool> as_bools(const Tensor& m) {
  std::vector<bool> out;
  for (double x : m.to_vector<double>()) out.push_back(x != 0);
  return out;
}

}  // namespace

TEST_CASE("scaled_dot_product_attention matches a plain-loop reference") {
  const std::int64_t L = 3, S = 4, E = 5, Ev = 2;
  Tensor q = param({L, E}, 1), k = param({S, E}, 2), v = param({S, Ev}, 3);
  AttentionOptions opts;
  opts.need_weights = true;
  auto r = scaled_dot_product_attention(q, k, v, opts);
  auto ref = testing::reference_attention(q.to_vector<double>(), k.to_vector<double>(),
                                          v.to_vector<double>(), L, S, E, Ev, 1 / std::sqrt(5.0));
  testing::check_values(r.output, {L, Ev}, ref.output, 1e-12);
  testing::check_values(r.weights, {L, S}, ref.weights, 1e-12);

  SUBCASE("with an explicit scale") {
    opts.scale = 0.7;
    auto r2 = scaled_dot_product_attention(q, k, v, opts);
    auto ref2 = testing::reference_attention(q.to_vector<double>(), k.to_vector<double>(),
                                             v.to_vector<double>(), L, S, E, Ev, 0.7);
    testing::check_values(r2.output, {L, Ev}, ref2.output, 1e-12);
  }
}

TEST_CASE("scaled_dot_product_attention broadcasts leading batch and head dims") {
  Tensor q = param({2, 3, 4, 6}, 4), k = param({2, 1, 5, 6}, 5), v = param({5, 3}, 6);
  AttentionOptions opts;
  opts.need_weights = true;
  auto r = scaled_dot_product_attention(q, k, v, opts);
  CHECK(r.output.shape() == Shape{2, 3, 4, 3});
  CHECK(r.weights.shape() == Shape{2, 3, 4, 5});
  // Batch (1, 2) against the reference on its slices.
  Tensor qs = select(select(q, 0, 1), 0, 2), ks = select(select(k, 0, 1), 0, 0);
  auto ref = testing::reference_attention(qs.to_vector<double>(), ks.to_vector<double>(),
                                          v.to_vector<double>(), 4, 5, 6, 3, 1 / std::sqrt(6.0));
  testing::check_values(select(select(r.output, 0, 1), 0, 2), {4, 3}, ref.output, 1e-12);
}

TEST_CASE("the three mask conventions block the same keys") {
  const std::int64_t L = 3, S = 4;
  Tensor q = param({L, 4}, 7), k = param({S, 4}, 8), v = param({S, 3}, 9);
  Tensor blocked = blocked_mask(L, S, {{0, 1}, {0, 3}, {2, 0}});
  auto ref =
      testing::reference_attention(q.to_vector<double>(), k.to_vector<double>(),
                                   v.to_vector<double>(), L, S, 4, 3, 0.5, as_bools(blocked));
  Tensor additive = masked_fill(zeros({L, S}, kFloat64), blocked, -kInf);
  Tensor attend_numeric = logical_not(blocked).to(kFloat64);
  for (const AttentionMask& mask :
       {AttentionMask::blocked_where_true(blocked),
        AttentionMask::attend_where_true(logical_not(blocked)),
        AttentionMask::attend_where_true(attend_numeric), AttentionMask::additive(additive),
        AttentionMask::torch_mha(blocked), AttentionMask::torch_mha(additive)}) {
    AttentionOptions opts;
    opts.masks = {mask};
    opts.need_weights = true;
    auto r = scaled_dot_product_attention(q, k, v, opts);
    testing::check_values(r.output, {L, 3}, ref.output, 1e-12);
    testing::check_values(r.weights, {L, S}, ref.weights, 1e-12);
  }
}

TEST_CASE("an additive mask adds to the scores and several masks combine") {
  const std::int64_t L = 2, S = 3;
  Tensor q = param({L, 4}, 10), k = param({S, 4}, 11), v = param({S, 2}, 12);
  Tensor bias = param({L, S}, 13).detach();
  Tensor blocked = blocked_mask(L, S, {{1, 2}});
  AttentionOptions opts;
  opts.masks = {AttentionMask::additive(bias), AttentionMask::blocked_where_true(blocked)};
  opts.need_weights = true;
  auto r = scaled_dot_product_attention(q, k, v, opts);
  auto ref = testing::reference_attention(q.to_vector<double>(), k.to_vector<double>(),
                                          v.to_vector<double>(), L, S, 4, 2, 0.5, as_bools(blocked),
                                          bias.to_vector<double>());
  testing::check_values(r.output, {L, 2}, ref.output, 1e-12);
  testing::check_values(r.weights, {L, S}, ref.weights, 1e-12);
}

TEST_CASE("is_causal blocks later keys, top-left aligned when L and S differ") {
  const std::int64_t L = 3, S = 5;
  Tensor q = param({L, 4}, 14), k = param({S, 4}, 15), v = param({S, 2}, 16);
  AttentionOptions opts;
  opts.is_causal = true;
  opts.need_weights = true;
  auto r = scaled_dot_product_attention(q, k, v, opts);
  std::vector<bool> blocked(L * S);
  for (int i = 0; i < L; ++i)
    for (int j = 0; j < S; ++j) blocked[i * S + j] = j > i;
  auto ref = testing::reference_attention(q.to_vector<double>(), k.to_vector<double>(),
                                          v.to_vector<double>(), L, S, 4, 2, 0.5, blocked);
  testing::check_values(r.weights, {L, S}, ref.weights, 1e-12);
  testing::check_values(r.output, {L, 2}, ref.output, 1e-12);
  CHECK(r.weights.at({0, 1}) == 0.0);
}

TEST_CASE("a fully masked query row gives zero weights, zero output and zero gradients") {
  const std::int64_t L = 3, S = 4;
  Tensor q = param({L, 4}, 17), k = param({S, 4}, 18), v = param({S, 2}, 19);
  Tensor blocked = blocked_mask(L, S, {{1, 0}, {1, 1}, {1, 2}, {1, 3}, {2, 0}});
  AttentionOptions opts;
  opts.masks = {AttentionMask::blocked_where_true(blocked)};
  opts.need_weights = true;
  auto r = scaled_dot_product_attention(q, k, v, opts);
  for (int j = 0; j < S; ++j) CHECK(r.weights.at({1, j}) == 0.0);
  for (int e = 0; e < 2; ++e) CHECK(r.output.at({1, e}) == 0.0);
  (r.output * param({L, 2}, 20).detach()).sum().backward();
  for (const Tensor& g : {q.grad(), k.grad(), v.grad()})
    for (double x : g.to_vector<double>()) CHECK(std::isfinite(x));
  for (int e = 0; e < 4; ++e) CHECK(q.grad().at({1, e}) == 0.0);
  CHECK(q.grad().at({0, 0}) != 0.0);
}

TEST_CASE("scaled_dot_product_attention passes gradcheck with masks and causal masking") {
  Tensor q = param({2, 3, 4}, 21), k = param({2, 5, 4}, 22), v = param({2, 5, 3}, 23);
  Tensor additive = mul(param({3, 5}, 24).detach(), 0.5);
  Tensor padding = zeros({2, 1, 5}, kBool);
  padding.set_at({1, 0, 4}, 1);
  testing::check_gradcheck(
      [&](const std::vector<Tensor>& in) {
        AttentionOptions opts;
        opts.masks = {AttentionMask::additive(additive),
                      AttentionMask::blocked_where_true(padding)};
        opts.is_causal = true;
        opts.need_weights = true;
        auto r = scaled_dot_product_attention(in[0], in[1], in[2], opts);
        return r.output.sum() + (r.weights * r.weights).sum();
      },
      {q, k, v});
}

TEST_CASE("attention dropout is seeded and scales the kept weights") {
  Tensor q = param({4, 8}, 25), k = param({6, 8}, 26), v = param({6, 3}, 27);
  AttentionOptions opts;
  opts.dropout_p = 0.5;
  opts.need_weights = true;
  Generator g1(42), g2(42);
  opts.generator = &g1;
  auto a = scaled_dot_product_attention(q, k, v, opts);
  opts.generator = &g2;
  auto b = scaled_dot_product_attention(q, k, v, opts);
  CHECK(testing::max_abs_diff(a.output, b.output) == 0.0);
  // Each returned weight is 0 or twice the undropped weight, and output = weights @ v.
  opts.dropout_p = 0.0;
  auto clean = scaled_dot_product_attention(q, k, v, opts);
  auto wa = a.weights.to_vector<double>(), wc = clean.weights.to_vector<double>();
  int dropped = 0;
  for (std::size_t i = 0; i < wa.size(); ++i) {
    if (wa[i] == 0.0)
      ++dropped;
    else
      CHECK(wa[i] == doctest::Approx(2 * wc[i]).epsilon(1e-12));
  }
  CHECK(dropped > 0);
  CHECK(dropped < static_cast<int>(wa.size()));
  CHECK(testing::max_abs_diff(a.output, matmul(a.weights, v)) < 1e-12);
}

TEST_CASE("scaled_dot_product_attention rejects mismatched inputs with the shapes") {
  Tensor q = param({3, 4}, 28), k = param({5, 4}, 29), v = param({5, 2}, 30);
  CHECK_THROWS_AS(scaled_dot_product_attention(q, param({5, 3}, 31), v), ShapeError);
  CHECK_THROWS_WITH_AS(scaled_dot_product_attention(q, k, param({6, 2}, 32)),
                       doctest::Contains("k and v lengths differ"), ShapeError);
  CHECK_THROWS_AS(scaled_dot_product_attention(q.to(kFloat32), k, v), DTypeError);
  AttentionOptions opts;
  opts.masks = {AttentionMask::blocked_where_true(zeros({4, 5}, kBool))};
  CHECK_THROWS_WITH_AS(scaled_dot_product_attention(q, k, v, opts),
                       doctest::Contains("does not broadcast to the scores (3,5)"), ShapeError);
  CHECK_THROWS_AS(AttentionMask::blocked_where_true(zeros({3, 5}, kFloat64)), DTypeError);
  CHECK_THROWS_AS(AttentionMask::additive(zeros({3, 5}, kBool)), DTypeError);
}

TEST_CASE(
    "the edit callbacks see the scores, then the pattern, and the attention uses their result") {
  const std::int64_t L = 3, S = 4, E = 5, Ev = 2;
  Tensor q = param({L, E}, 33), k = param({S, E}, 34), v = param({S, Ev}, 35);
  AttentionOptions opts;
  opts.keep_internals = true;
  std::vector<std::string> seen;
  // Keep only key 0's score unchanged and block the rest, then double the pattern.
  Tensor key0 = zeros({L, S}, kBool);
  for (std::int64_t i = 0; i < L; ++i)
    for (std::int64_t j = 1; j < S; ++j) key0.set_at({i, j}, 1);
  opts.edit_scores = [&](const Tensor& t) {
    seen.push_back("scores");
    return masked_fill(t, key0, -kInf);
  };
  opts.edit_pattern = [&](const Tensor& t) {
    seen.push_back("pattern");
    return mul(t, 2.0);
  };
  auto r = scaled_dot_product_attention(q, k, v, opts);
  CHECK(seen == std::vector<std::string>{"scores", "pattern"});
  // Every query attends to key 0 alone, with weight 2 after the edit: output = 2 v[0].
  CHECK(testing::max_abs_diff(r.output, expand(mul(narrow(v, 0, 0, 1), 2.0), {L, Ev})) == 0.0);
  CHECK(testing::max_abs_diff(r.pattern, mul(softmax(r.scores, -1, SoftmaxMode::safe), 2.0)) ==
        0.0);
  // nn::functional re-exports the op.
  static_assert(std::is_same_v<nn::functional::AttentionOptions, AttentionOptions>);
  CHECK(testing::max_abs_diff(nn::functional::scaled_dot_product_attention(q, k, v).output,
                              scaled_dot_product_attention(q, k, v).output) == 0.0);
}
