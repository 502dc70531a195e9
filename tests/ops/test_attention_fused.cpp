// The attention op's fused kernel (src/ops/attention_fused.hpp) against the composed
// reference, which splits heads, runs scaled_dot_product_attention and merges heads: the
// outputs, the weights and every input gradient agree to 1e-12 in float64, for packed and
// separate q/k/v, every mask convention, a fully padded example and need_weights. Also a
// float64 gradcheck of the op itself (through the weights too), the accumulating path
// where two operands read the same columns, and the errors. Then multihead_attention, the
// op's entry point: which path it takes and that both give the same result.
//
// Shapes: N batch, L queries, S keys, H heads, d / dv head dims.
#include <limits>
#include <vector>

#include "headgrad/ops/attention.hpp"
#include "helpers.hpp"
#include "ops/attention_fused.hpp"

namespace hg = headgrad;
using hg::AttentionMask;
using hg::HeadAttentionArgs;
using hg::Shape;
using hg::Tensor;
using hg::detail::fused_multihead_attention;
using hg::testing::check_gradcheck;
using hg::testing::max_abs_diff;

namespace {

constexpr double kTol = 1e-12;

// Head h's columns of (N, len, F) as (N, H, len, width).
Tensor split_heads(const hg::HeadColumns& c, std::int64_t h, std::int64_t width) {
  const Tensor& t = c.tensor;
  const Tensor cols = hg::narrow(t, 2, c.offset, h * width);
  return hg::permute(hg::reshape(cols, {t.size(0), t.size(1), h, width}), {0, 2, 1, 3});
}

// The composed path: split, scaled_dot_product_attention, merge (dropout as `a` asks).
std::vector<Tensor> composed(const HeadAttentionArgs& a) {
  const Tensor q = split_heads(a.q, a.heads, a.head_dim);
  const Tensor k = split_heads(a.k, a.heads, a.head_dim);
  const Tensor v = split_heads(a.v, a.heads, a.value_head_dim);
  hg::AttentionOptions o;
  o.masks = a.masks;
  o.scale = a.scale;
  o.dropout_p = a.dropout_p;
  o.generator = a.generator;
  o.need_weights = true;
  const auto r = hg::scaled_dot_product_attention(q, k, v, o);
  const std::int64_t n = q.size(0), l = q.size(2);
  const Tensor out =
      hg::reshape(hg::permute(r.output, {0, 2, 1, 3}), {n, l, a.heads * a.value_head_dim});
  return {out, r.weights};
}

std::vector<Tensor> fused(const HeadAttentionArgs& a) {
  const auto r = fused_multihead_attention(a);
  return {r.output, r.weights};
}

// Outputs and the gradients of sum(out * g_out) + sum(weights * g_w) in `inputs`.
std::vector<Tensor> values_and_grads(const std::vector<Tensor>& outs,
                                     const std::vector<Tensor>& inputs) {
  const Tensor g_out = hg::testing::param(outs[0].shape(), 71).detach();
  const Tensor g_w = hg::testing::param(outs[1].shape(), 72).detach();
  const Tensor loss = hg::add(hg::sum(hg::mul(outs[0], g_out)), hg::sum(hg::mul(outs[1], g_w)));
  std::vector<Tensor> result{outs[0].detach(), outs[1].detach()};
  for (const Tensor& g : hg::autograd::grad({loss}, inputs)) result.push_back(g);
  return result;
}

void check_matches_composed(const HeadAttentionArgs& a, const std::vector<Tensor>& inputs) {
  HeadAttentionArgs with_weights = a;
  with_weights.need_weights = true;
  const auto got = values_and_grads(fused(with_weights), inputs);
  const auto want = values_and_grads(composed(a), inputs);
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    CAPTURE(i);  // 0 output, 1 weights, then the gradient of each input
    REQUIRE(got[i].defined());
    CHECK(max_abs_diff(got[i], want[i]) <= kTol);
  }
}

// Self-attention on a packed (N, L, 3 H d) tensor: q, k, v are its three column blocks.
HeadAttentionArgs packed(const Tensor& qkv, std::int64_t h, std::int64_t d) {
  HeadAttentionArgs a;
  a.q = {qkv, 0};
  a.k = {qkv, h * d};
  a.v = {qkv, 2 * h * d};
  a.heads = h;
  a.head_dim = d;
  a.value_head_dim = d;
  return a;
}

// A scalar of both outputs for gradcheck: sum(output^2) + sum(weights^2).
Tensor squared_outputs(const HeadAttentionArgs& a) {
  const auto r = fused_multihead_attention(a);
  return hg::add(hg::sum(hg::mul(r.output, r.output)), hg::sum(hg::mul(r.weights, r.weights)));
}

// (1, 1, L, S) bool, true where key j > query i.
AttentionMask causal(std::int64_t l, std::int64_t s) {
  return AttentionMask::blocked_where_true(hg::reshape(hg::causal_mask(l, s), {1, 1, l, s}));
}

// (N, 1, 1, S) bool: every other example has its last `padded` keys blocked, and example 1
// (when there is one) has every key blocked.
AttentionMask padding(std::int64_t n, std::int64_t s, std::int64_t padded) {
  std::vector<bool> blocked;
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < s; ++j)
      blocked.push_back(i == 1 || (i % 2 == 0 && j >= s - padded));
  Tensor t = hg::from_vector<bool>(blocked, {n, s});
  return AttentionMask::blocked_where_true(hg::reshape(t, {n, 1, 1, s}));
}

}  // namespace

TEST_CASE("the fused attention kernel matches the composed path on packed self-attention") {
  const std::int64_t n = 3, l = 5, h = 2, d = 3, e = h * d;
  const Tensor qkv = hg::testing::param({n, l, 3 * e}, 1);
  HeadAttentionArgs a = packed(qkv, h, d);
  a.scale = 0.37;
  SUBCASE("no mask") {}
  SUBCASE("causal") { a.masks = {causal(l, l)}; }
  SUBCASE("key padding with a fully padded example") { a.masks = {padding(n, l, 2)}; }
  SUBCASE("causal and key padding") { a.masks = {causal(l, l), padding(n, l, 2)}; }
  SUBCASE("additive per head") {
    a.masks = {AttentionMask::additive(hg::testing::param({1, h, l, l}, 5).detach())};
  }
  SUBCASE("attend-where-true, numeric, 2-d") {
    std::vector<double> keep;
    for (std::int64_t i = 0; i < l; ++i)
      for (std::int64_t j = 0; j < l; ++j) keep.push_back((i + j) % 3 == 0 ? 0.0 : 1.0);
    a.masks = {AttentionMask::attend_where_true(hg::from_vector<double>(keep, {l, l}))};
  }
  check_matches_composed(a, {qkv});
}

TEST_CASE("the fused attention kernel matches the composed path on separate q, k, v") {
  const std::int64_t n = 2, l = 4, s = 6, h = 3, d = 2, dv = 4;
  for (bool extra_columns : {false, true}) {
    CAPTURE(extra_columns);
    // With extra columns, the heads sit at offsets with unread columns on both sides
    // (their gradient must be zero, so the gradient buffers start from zeros); without,
    // the heads cover every column and every gradient element is written exactly once.
    const std::int64_t pad = extra_columns ? 1 : 0;
    const Tensor q = hg::testing::param({n, l, h * d + 3 * pad}, 2);
    const Tensor k = hg::testing::param({n, s, h * d + pad}, 3);
    const Tensor v = hg::testing::param({n, s, h * dv + 2 * pad}, 4);
    HeadAttentionArgs a;
    a.q = {q, 2 * pad};
    a.k = {k, pad};
    a.v = {v, 0};
    a.heads = h;
    a.head_dim = d;
    a.value_head_dim = dv;
    a.scale = 1.0 / std::sqrt(2.0);
    SUBCASE("no mask") {}
    SUBCASE("causal, L != S: keys L..S-1 are blocked for every row") { a.masks = {causal(l, s)}; }
    SUBCASE("key padding and a per-example per-head bool mask") {
      hg::Generator gen(9);
      const Tensor blocked =
          hg::gt(hg::rand({n, h, l, s}, hg::kFloat64, &gen), hg::scalar_tensor(0.7, hg::kFloat64));
      a.masks = {padding(n, s, 3), AttentionMask::blocked_where_true(blocked)};
    }
    check_matches_composed(a, {q, k, v});
    if (extra_columns) {  // the unread columns of q get exactly zero gradient
      HeadAttentionArgs w = a;
      w.need_weights = false;
      const Tensor g = hg::autograd::grad({hg::sum(fused_multihead_attention(w).output)}, {q})[0];
      CHECK(max_abs_diff(hg::narrow(g, 2, 0, 2), hg::zeros({n, l, 2}, hg::kFloat64)) == 0.0);
    }
  }
}

TEST_CASE("the fused attention kernel skips the keys a shared mask blocks, in row blocks") {
  // More than one block of 32 query rows, so a causal (or any shared) bool mask lets
  // blocks skip key columns; the result must not change.
  const std::int64_t n = 2, h = 2, d = 3, e = h * d;
  SUBCASE("packed self-attention, causal, L = 70 (three blocks, the last partial)") {
    const std::int64_t l = 70;
    const Tensor qkv = hg::testing::param({n, l, 3 * e}, 51);
    HeadAttentionArgs a = packed(qkv, h, d);
    a.scale = 0.4;
    a.masks = {causal(l, l), padding(n, l, 9)};
    check_matches_composed(a, {qkv});
  }
  for (auto [l, s] : {std::pair<std::int64_t, std::int64_t>{40, 70}, {70, 40}}) {
    CAPTURE(l);
    CAPTURE(s);
    const Tensor q = hg::testing::param({n, l, e}, 52);
    const Tensor k = hg::testing::param({n, s, e}, 53);
    const Tensor v = hg::testing::param({n, s, e}, 54);
    HeadAttentionArgs a;
    a.q = {q, 0};
    a.k = {k, 0};
    a.v = {v, 0};
    a.heads = h;
    a.head_dim = d;
    a.value_head_dim = d;
    a.scale = 0.5;
    SUBCASE("causal, L != S") { a.masks = {causal(l, s)}; }
    SUBCASE("the first 35 rows fully blocked, the rest causal") {
      std::vector<bool> blocked;
      for (std::int64_t i = 0; i < l; ++i)
        for (std::int64_t j = 0; j < s; ++j) blocked.push_back(i < 35 || j > i);
      a.masks = {AttentionMask::blocked_where_true(hg::from_vector<bool>(blocked, {l, s}))};
    }
    SUBCASE("a shared mask with holes below the diagonal too") {
      std::vector<bool> blocked;
      for (std::int64_t i = 0; i < l; ++i)
        for (std::int64_t j = 0; j < s; ++j) blocked.push_back(j > i || (j % 3 == 1 && j != i));
      a.masks = {AttentionMask::blocked_where_true(hg::from_vector<bool>(blocked, {1, 1, l, s})),
                 padding(n, s, 5)};
    }
    check_matches_composed(a, {q, k, v});
  }
}

TEST_CASE("the fused attention kernel passes gradcheck, through the output and the weights") {
  const std::int64_t n = 2, l = 3, s = 4, h = 2, d = 2;
  auto with = [&](HeadAttentionArgs a, std::vector<AttentionMask> masks) {
    a.scale = 0.6;
    a.need_weights = true;
    a.masks = std::move(masks);
    return squared_outputs(a);
  };
  SUBCASE("packed, causal") {
    check_gradcheck(
        [&](const std::vector<Tensor>& in) { return with(packed(in[0], h, d), {causal(l, l)}); },
        {hg::testing::param({n, l, 3 * h * d}, 11)});
  }
  SUBCASE("separate, key padding with a fully padded example") {
    check_gradcheck(
        [&](const std::vector<Tensor>& in) {
          HeadAttentionArgs a = packed(in[0], h, d);
          a.k = {in[1], 0};
          a.v = {in[2], 0};
          return with(a, {padding(n, s, 2)});
        },
        {hg::testing::param({n, l, h * d}, 12), hg::testing::param({n, s, h * d}, 13),
         hg::testing::param({n, s, h * d}, 14)});
  }
  SUBCASE("packed, causal, 40 rows: two row blocks") {
    const std::int64_t rows = 40;
    check_gradcheck(
        [&](const std::vector<Tensor>& in) {
          return with(packed(in[0], h, d), {causal(rows, rows)});
        },
        {hg::testing::param({1, rows, 3 * h * d}, 16)});
  }
  SUBCASE("q and k read the same columns: gradients accumulate") {
    check_gradcheck(
        [&](const std::vector<Tensor>& in) {
          HeadAttentionArgs a = packed(in[0], h, d);
          a.k = {in[0], 0};
          a.v = {in[0], 0};
          return with(a, {});
        },
        {hg::testing::param({n, l, h * d}, 15)});
  }
}

TEST_CASE("the fused attention kernel gives a fully blocked query row zeros, never NaN") {
  const std::int64_t n = 2, l = 3, h = 2, d = 2, e = h * d;
  const Tensor qkv = hg::testing::param({n, l, 3 * e}, 21);
  HeadAttentionArgs a = packed(qkv, h, d);
  a.masks = {padding(n, l, 1)};  // example 1: every key blocked
  a.need_weights = true;
  const auto r = fused_multihead_attention(a);
  CHECK(max_abs_diff(hg::select(r.output, 0, 1), hg::zeros({l, e}, hg::kFloat64)) == 0.0);
  CHECK(max_abs_diff(hg::select(r.weights, 0, 1), hg::zeros({h, l, l}, hg::kFloat64)) == 0.0);
  const Tensor g = hg::autograd::grad({hg::sum(r.output)}, {qkv})[0];
  CHECK(max_abs_diff(hg::select(g, 0, 1), hg::zeros({l, 3 * e}, hg::kFloat64)) == 0.0);
  for (double x : g.to_vector<double>()) CHECK(std::isfinite(x));
}

TEST_CASE("the fused attention kernel is the same in float32 as in float64") {
  const std::int64_t n = 2, l = 4, h = 2, d = 3, e = h * d;
  hg::testing::check_float32_matches_float64(
      [&](const std::vector<Tensor>& in) {
        HeadAttentionArgs a = packed(in[0], h, d);
        a.scale = 0.5;
        a.masks = {causal(l, l)};
        return fused_multihead_attention(a).output;
      },
      {hg::testing::param({n, l, 3 * e}, 31)});
}

TEST_CASE("the fused attention kernel rejects bad input with the op and the shapes") {
  const Tensor x = hg::testing::param({2, 3, 12}, 41);
  HeadAttentionArgs a;
  a.q = {x, 0};
  a.k = {x, 4};
  a.v = {x, 8};
  a.heads = 2;
  a.head_dim = 2;
  a.value_head_dim = 2;
  SUBCASE("columns past the features") {
    a.v = {x, 10};
    CHECK_THROWS_WITH_AS(
        fused_multihead_attention(a),
        doctest::Contains("fused_multihead_attention: q (2,3,12) float64 at column 0"),
        hg::ShapeError);
  }
  SUBCASE("a 2-d operand") {
    a.k = {hg::testing::param({3, 12}, 42), 0};
    CHECK_THROWS_AS(fused_multihead_attention(a), hg::ShapeError);
  }
  SUBCASE("a mask that does not broadcast") {
    a.masks = {causal(4, 4)};
    CHECK_THROWS_WITH_AS(
        fused_multihead_attention(a),
        doctest::Contains(
            "mask (1,1,4,4) bool does not broadcast to the scores (N, H, L, S) = (2,2,3,3)"),
        hg::ShapeError);
  }
  SUBCASE("a mixed dtype") {
    a.v = {hg::zeros({2, 3, 12}, hg::kFloat32), 8};
    CHECK_THROWS_AS(fused_multihead_attention(a), hg::DTypeError);
  }
  SUBCASE("a mask that requires grad") {
    a.masks = {AttentionMask::additive(hg::testing::param({3, 3}, 43))};
    CHECK_THROWS_AS(fused_multihead_attention(a), hg::ValueError);
  }
  SUBCASE("dropout") {
    a.dropout_p = 0.1;
    CHECK_THROWS_WITH_AS(fused_multihead_attention(a),
                         doctest::Contains("the fused kernel has no dropout"), hg::ValueError);
  }
  SUBCASE("the entry point names itself") {
    a.v = {x, 10};
    CHECK_THROWS_WITH_AS(hg::multihead_attention(a),
                         doctest::Contains("multihead_attention: q (2,3,12) float64 at column 0"),
                         hg::ShapeError);
  }
}

TEST_CASE("multihead_attention takes the fused kernel only where it applies") {
  const std::int64_t n = 2, l = 4, h = 2, d = 3, e = h * d;
  const Tensor qkv = hg::testing::param({n, l, 3 * e}, 61);
  HeadAttentionArgs a = packed(qkv, h, d);
  a.scale = 0.45;
  a.masks = {causal(l, l)};
  a.need_weights = true;
  auto grad_fn_of = [](const Tensor& t) { return t.grad_fn() ? t.grad_fn()->name() : ""; };
  SUBCASE("the common case: one fused node, bitwise the kernel's result") {
    CHECK(hg::detail::fused_attention_applies(a));
    const auto r = hg::multihead_attention(a);
    CHECK(grad_fn_of(r.output) == "fused_multihead_attention");
    CHECK(max_abs_diff(r.output, fused_multihead_attention(a).output) == 0.0);
  }
  SUBCASE("a mask that requires grad: composed, and the mask gets a gradient") {
    const Tensor bias = hg::testing::param({1, h, l, l}, 62);
    a.masks.push_back(AttentionMask::additive(bias));
    CHECK_FALSE(hg::detail::fused_attention_applies(a));
    const auto r = hg::multihead_attention(a);
    CHECK(grad_fn_of(r.output) != "fused_multihead_attention");
    const auto want = composed(a);
    CHECK(max_abs_diff(r.output, want[0]) == 0.0);
    CHECK(max_abs_diff(r.weights, want[1]) == 0.0);
    HeadAttentionArgs detached = a;
    detached.masks.back() = AttentionMask::additive(bias.detach());
    CHECK(max_abs_diff(r.output, fused_multihead_attention(detached).output) <= kTol);
    const Tensor g = hg::autograd::grad({hg::sum(r.output)}, {bias})[0];
    CHECK(hg::sum(hg::abs(g)).item() > 0.0);
  }
  SUBCASE("dropout: composed, the same draws as scaled_dot_product_attention") {
    hg::Generator gen_op(5), gen_ref(5);
    a.dropout_p = 0.3;
    CHECK_FALSE(hg::detail::fused_attention_applies(a));
    a.generator = &gen_op;
    const auto r = hg::multihead_attention(a);
    a.generator = &gen_ref;
    const auto want = composed(a);
    CHECK(max_abs_diff(r.output, want[0]) == 0.0);
    CHECK(max_abs_diff(r.weights, want[1]) == 0.0);
  }
}
