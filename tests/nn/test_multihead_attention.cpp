// nn::MultiheadAttention: PyTorch's parameter names and shapes, default init
// distributions, values against a plain-loop reference, layouts, masks, fully masked
// rows, gradients and errors. (The PyTorch oracle itself lives in tests/reference.)
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "headgrad/headgrad.hpp"
#include "helpers.hpp"
#include "nn/reference_attention.hpp"

using namespace headgrad;
using nn::MultiheadAttention;
using nn::MultiheadAttentionArgs;
using nn::MultiheadAttentionOptions;
using testing::param;

namespace {

// Gives every parameter random values (nonzero biases) in float64.
void randomize(MultiheadAttention& mha, std::uint64_t seed) {
  mha.to(kFloat64);
  Generator gen(seed);
  NoGradGuard no_grad;
  for (auto& [name, p] : mha.named_parameters())
    p.copy_(mul(randn(p.shape(), kFloat64, &gen), 0.5));
}

// y (T, out) = x (T, in) W^T (W (out, in)) + b
std::vector<double> project(const std::vector<double>& x, std::int64_t T, std::int64_t in,
                            const std::vector<double>& w, std::int64_t out,
                            const std::vector<double>& b) {
  std::vector<double> y(T * out, 0.0);
  for (std::int64_t t = 0; t < T; ++t)
    for (std::int64_t o = 0; o < out; ++o) {
      double acc = b.empty() ? 0.0 : b[o];
      for (std::int64_t i = 0; i < in; ++i) acc += x[t * in + i] * w[o * in + i];
      y[t * out + o] = acc;
    }
  return y;
}

// Multi-head attention for one batch element with plain loops: x_q (L, E), x_k (S, kdim),
// x_v (S, vdim), blocked (L, S). Returns the output (L, E) and per-head weights (H, L, S').
testing::ReferenceAttention reference_mha(const MultiheadAttention& mha,
                                          const std::vector<double>& xq,
                                          const std::vector<double>& xk,
                                          const std::vector<double>& xv, std::int64_t L,
                                          std::int64_t S, const std::vector<bool>& blocked) {
  const auto& o = mha.options();
  const std::int64_t E = o.embed_dim, H = o.num_heads, d = E / H;
  auto vec = [](const Tensor& t) {
    return t.defined() ? t.detach().to_vector<double>() : std::vector<double>{};
  };
  auto wq = vec(mha.w_q()), wk = vec(mha.w_k()), wv = vec(mha.w_v());
  auto q = project(xq, L, E, wq, E, vec(mha.b_q()));
  auto k = project(xk, S, o.key_dim(), wk, E, vec(mha.b_k()));
  auto v = project(xv, S, o.value_dim(), wv, E, vec(mha.b_v()));
  std::int64_t Sp = S;
  std::vector<bool> mask = blocked.empty() ? std::vector<bool>(L * S, false) : blocked;
  auto append_key = [&](const std::vector<double>& kk, const std::vector<double>& vv) {
    k.insert(k.end(), kk.begin(), kk.end());
    v.insert(v.end(), vv.begin(), vv.end());
    std::vector<bool> wider;
    for (std::int64_t i = 0; i < L; ++i) {
      for (std::int64_t j = 0; j < Sp; ++j) wider.push_back(mask[i * Sp + j]);
      wider.push_back(false);
    }
    mask = wider;
    ++Sp;
  };
  if (o.add_bias_kv) append_key(vec(mha.bias_k), vec(mha.bias_v));
  if (o.add_zero_attn) append_key(std::vector<double>(E, 0.0), std::vector<double>(E, 0.0));

  testing::ReferenceAttention result;
  std::vector<double> concat(L * E, 0.0);
  for (std::int64_t h = 0; h < H; ++h) {
    std::vector<double> qh(L * d), kh(Sp * d), vh(Sp * d);
    for (std::int64_t i = 0; i < L; ++i)
      for (std::int64_t c = 0; c < d; ++c) qh[i * d + c] = q[i * E + h * d + c];
    for (std::int64_t j = 0; j < Sp; ++j)
      for (std::int64_t c = 0; c < d; ++c) {
        kh[j * d + c] = k[j * E + h * d + c];
        vh[j * d + c] = v[j * E + h * d + c];
      }
    auto r = testing::reference_attention(qh, kh, vh, L, Sp, d, d, 1 / std::sqrt(double(d)), mask);
    for (std::int64_t i = 0; i < L; ++i)
      for (std::int64_t c = 0; c < d; ++c) concat[i * E + h * d + c] = r.output[i * d + c];
    result.weights.insert(result.weights.end(), r.weights.begin(), r.weights.end());
  }
  result.output = project(concat, L, E, vec(mha.out_proj->weight), E, vec(mha.out_proj->bias));
  return result;
}

std::vector<std::string> names_of(const nn::StateDict& sd) { return sd.keys(); }

}  // namespace

TEST_CASE("MultiheadAttention has PyTorch's state_dict names and shapes") {
  SUBCASE("packed in_proj_weight when kdim == vdim == embed_dim") {
    MultiheadAttention mha(8, 2);
    auto sd = mha.state_dict();
    CHECK(names_of(sd) == std::vector<std::string>{"in_proj_weight", "in_proj_bias",
                                                   "out_proj.weight", "out_proj.bias"});
    CHECK(sd.at("in_proj_weight").shape() == Shape{24, 8});
    CHECK(sd.at("in_proj_bias").shape() == Shape{24});
    CHECK(sd.at("out_proj.weight").shape() == Shape{8, 8});
    CHECK(mha.num_parameters() == 24 * 8 + 24 + 64 + 8);
  }
  SUBCASE("separate projections for kdim and vdim, bias_k and bias_v") {
    MultiheadAttention mha(
        MultiheadAttentionOptions(8, 4).with_kdim(5).with_vdim(3).with_add_bias_kv(true));
    auto sd = mha.state_dict();
    CHECK(names_of(sd) == std::vector<std::string>{"q_proj_weight", "k_proj_weight",
                                                   "v_proj_weight", "in_proj_bias", "bias_k",
                                                   "bias_v", "out_proj.weight", "out_proj.bias"});
    CHECK(sd.at("k_proj_weight").shape() == Shape{8, 5});
    CHECK(sd.at("v_proj_weight").shape() == Shape{8, 3});
    CHECK(sd.at("bias_k").shape() == Shape{1, 1, 8});
  }
  SUBCASE("no biases without bias") {
    MultiheadAttention mha(MultiheadAttentionOptions(6, 3).with_bias(false));
    CHECK(names_of(mha.state_dict()) ==
          std::vector<std::string>{"in_proj_weight", "out_proj.weight"});
  }
}

TEST_CASE("MultiheadAttention's default init follows PyTorch's distributions") {
  manual_seed(3);
  const std::int64_t E = 128;
  MultiheadAttention mha(MultiheadAttentionOptions(E, 4).with_add_bias_kv(true));
  auto stats = [](const Tensor& t) {
    auto v = t.to_vector<double>();
    double m = 0, sq = 0, mx = 0;
    for (double x : v) m += x, sq += x * x, mx = std::max(mx, std::abs(x));
    m /= double(v.size());
    return std::array<double, 3>{m, std::sqrt(sq / double(v.size()) - m * m), mx};
  };
  // xavier_uniform_ on the packed (3E, E) matrix: bound sqrt(6 / (E + 3E)).
  const double packed_bound = std::sqrt(6.0 / (4.0 * E));
  auto w = stats(mha.in_proj_weight);
  CHECK(w[2] <= packed_bound);
  CHECK(w[2] > 0.99 * packed_bound);
  CHECK(w[1] == doctest::Approx(packed_bound / std::sqrt(3.0)).epsilon(0.02));
  // out_proj.weight: nn.Linear's kaiming_uniform_(a = sqrt(5)) -> bound 1 / sqrt(E).
  auto o = stats(mha.out_proj->weight);
  CHECK(o[2] <= 1 / std::sqrt(double(E)));
  CHECK(o[2] > 0.99 / std::sqrt(double(E)));
  // Zero biases; bias_k, bias_v xavier_normal_ with fans (E, E) -> std 1 / sqrt(E).
  CHECK(stats(mha.in_proj_bias)[2] == 0.0);
  CHECK(stats(mha.out_proj->bias)[2] == 0.0);
  auto bk = stats(concat({mha.bias_k.flatten(), mha.bias_v.flatten()}, 0));
  CHECK(bk[1] == doctest::Approx(1 / std::sqrt(double(E))).epsilon(0.15));

  SUBCASE("separate projections get a xavier bound each") {
    MultiheadAttention sep(MultiheadAttentionOptions(E, 4).with_kdim(64));
    const double kb = std::sqrt(6.0 / (E + 64.0));
    CHECK(stats(sep.k_proj_weight)[2] <= kb);
    CHECK(stats(sep.k_proj_weight)[2] > 0.99 * kb);
  }
}

TEST_CASE("MultiheadAttention matches a plain-loop reference for every option") {
  struct Case {
    const char* name;
    std::int64_t kdim, vdim;
    bool bias, bias_kv, zero_attn;
  };
  for (const Case& c :
       {Case{"plain", 0, 0, true, false, false}, Case{"kdim vdim", 5, 3, true, false, false},
        Case{"no bias", 0, 0, false, false, false},
        Case{"bias kv and zero attn", 7, 0, true, true, true}}) {
    CAPTURE(c.name);
    const std::int64_t E = 6, H = 3, N = 2, L = 3, S = 4;
    MultiheadAttention mha(MultiheadAttentionOptions(E, H)
                               .with_kdim(c.kdim)
                               .with_vdim(c.vdim)
                               .with_bias(c.bias)
                               .with_add_bias_kv(c.bias_kv)
                               .with_add_zero_attn(c.zero_attn)
                               .with_batch_first(true));
    randomize(mha, 5);
    const auto& o = mha.options();
    Tensor q = param({N, L, E}, 40), k = param({N, S, o.key_dim()}, 41),
           v = param({N, S, o.value_dim()}, 42);
    Tensor attn_mask = zeros({L, S}, kBool);
    attn_mask.set_at({0, 2}, 1);
    Tensor padding = zeros({N, S}, kBool);
    padding.set_at({1, 3}, 1);
    auto r = mha(q, k, v,
                 MultiheadAttentionArgs()
                     .with_attn_mask(attn_mask)
                     .with_key_padding_mask(padding)
                     .with_average_attn_weights(false));
    const std::int64_t Sp = S + c.bias_kv + c.zero_attn;
    REQUIRE(r.output.shape() == Shape{N, L, E});
    REQUIRE(r.weights.shape() == Shape{N, H, L, Sp});
    for (std::int64_t n = 0; n < N; ++n) {
      std::vector<bool> blocked(L * S);
      for (std::int64_t i = 0; i < L; ++i)
        for (std::int64_t j = 0; j < S; ++j)
          blocked[i * S + j] = attn_mask.at({i, j}) != 0 || padding.at({n, j}) != 0;
      auto ref = reference_mha(mha, select(q, 0, n).to_vector<double>(),
                               select(k, 0, n).to_vector<double>(),
                               select(v, 0, n).to_vector<double>(), L, S, blocked);
      testing::check_values(select(r.output, 0, n), {L, E}, ref.output, 1e-12);
      testing::check_values(select(r.weights, 0, n), {H, L, Sp}, ref.weights, 1e-12);
    }
  }
}

TEST_CASE("MultiheadAttention layouts: sequence first, batch first and unbatched agree") {
  const std::int64_t E = 4, H = 2, N = 2, L = 3, S = 5;
  MultiheadAttention seq_first(E, H);
  randomize(seq_first, 7);
  MultiheadAttention batch_first(MultiheadAttentionOptions(E, H).with_batch_first(true));
  batch_first.to(kFloat64);
  batch_first.load_state_dict(seq_first.state_dict());
  Tensor q = param({N, L, E}, 50), k = param({N, S, E}, 51), v = param({N, S, E}, 52);
  auto a = batch_first(q, k, v);
  auto b = seq_first(transpose(q, 0, 1), transpose(k, 0, 1), transpose(v, 0, 1));
  CHECK(testing::max_abs_diff(a.output, transpose(b.output, 0, 1)) < 1e-14);
  CHECK(testing::max_abs_diff(a.weights, b.weights) < 1e-14);
  CHECK(a.weights.shape() == Shape{N, L, S});
  // Unbatched: (L, E) in, (L, E) out, weights (L, S); the same as batch element 1.
  auto u = seq_first(select(q, 0, 1), select(k, 0, 1), select(v, 0, 1));
  CHECK(u.output.shape() == Shape{L, E});
  CHECK(testing::max_abs_diff(u.output, select(a.output, 0, 1)) < 1e-14);
  CHECK(testing::max_abs_diff(u.weights, select(a.weights, 0, 1)) < 1e-14);
}

TEST_CASE("self-attention through the packed projection equals the general path") {
  MultiheadAttention mha(MultiheadAttentionOptions(6, 2).with_batch_first(true));
  randomize(mha, 9);
  Tensor x = param({2, 4, 6}, 60);
  Tensor x_copy = x.detach().clone().requires_grad_(true);
  auto packed = mha(x, x, x);
  auto general = mha(x_copy, x_copy.clone(), x_copy.clone());
  CHECK(testing::max_abs_diff(packed.output, general.output) < 1e-13);
  Tensor g = param({2, 4, 6}, 61).detach();
  (packed.output * g).sum().backward();
  (general.output * g).sum().backward();
  CHECK(testing::max_abs_diff(x.grad(), x_copy.grad()) < 1e-12);
}

TEST_CASE("attn_mask per batch and head, float masks and is_causal") {
  const std::int64_t E = 4, H = 2, N = 2, L = 3, S = 3;
  MultiheadAttention mha(MultiheadAttentionOptions(E, H).with_batch_first(true));
  randomize(mha, 11);
  Tensor q = param({N, L, E}, 70), k = param({N, S, E}, 71), v = param({N, S, E}, 72);
  Tensor causal = causal_mask(L);
  auto args = MultiheadAttentionArgs().with_average_attn_weights(false);
  auto by_flag = mha(q, k, v, MultiheadAttentionArgs(args).with_is_causal(true));
  auto by_bool = mha(q, k, v, MultiheadAttentionArgs(args).with_attn_mask(causal));
  Tensor float_mask =
      masked_fill(zeros({L, S}, kFloat64), causal, -std::numeric_limits<double>::infinity());
  auto by_float = mha(q, k, v, MultiheadAttentionArgs(args).with_attn_mask(float_mask));
  Tensor per_head = expand(unsqueeze(causal, 0), {N * H, L, S}).clone();
  auto by_3d = mha(q, k, v, MultiheadAttentionArgs(args).with_attn_mask(per_head));
  for (auto* r : {&by_bool, &by_float, &by_3d}) {
    CHECK(testing::max_abs_diff(r->output, by_flag.output) < 1e-14);
    CHECK(testing::max_abs_diff(r->weights, by_flag.weights) < 1e-14);
  }
  CHECK(by_flag.weights.at({1, 1, 0, 2}) == 0.0);

  SUBCASE("a (N*H, L, S) mask addresses head h of batch n at index n*H + h") {
    Tensor m = zeros({N * H, L, S}, kBool);
    m.set_at({1 * H + 0, 2, 1}, 1);  // batch 1, head 0, query 2, key 1
    auto r = mha(q, k, v, MultiheadAttentionArgs(args).with_attn_mask(m));
    CHECK(r.weights.at({1, 0, 2, 1}) == 0.0);
    CHECK(r.weights.at({1, 1, 2, 1}) > 0.0);
    CHECK(r.weights.at({0, 0, 2, 1}) > 0.0);
  }
}

TEST_CASE("a fully masked query row gives zero weights, out_proj.bias as output and no NaN") {
  const std::int64_t E = 4, H = 2, N = 1, L = 2, S = 3;
  MultiheadAttention mha(MultiheadAttentionOptions(E, H).with_batch_first(true));
  randomize(mha, 13);
  Tensor q = param({N, L, E}, 80), k = param({N, S, E}, 81), v = param({N, S, E}, 82);
  Tensor m = zeros({L, S}, kBool);
  for (int j = 0; j < S; ++j) m.set_at({1, j}, 1);
  auto r = mha(q, k, v, MultiheadAttentionArgs().with_attn_mask(m));
  for (int j = 0; j < S; ++j) CHECK(r.weights.at({0, 1, j}) == 0.0);
  for (int e = 0; e < E; ++e) CHECK(r.output.at({0, 1, e}) == mha.out_proj->bias.at({e}));
  r.output.sum().backward();
  for (const auto& [name, p] : mha.named_parameters())
    for (double x : p.grad().to_vector<double>()) CHECK(std::isfinite(x));
  for (int e = 0; e < E; ++e) CHECK(q.grad().at({0, 1, e}) == 0.0);
}

TEST_CASE("MultiheadAttention passes gradcheck for inputs and parameters") {
  MultiheadAttention mha(
      MultiheadAttentionOptions(4, 2).with_kdim(3).with_add_bias_kv(true).with_add_zero_attn(true));
  randomize(mha, 15);
  Tensor q = param({2, 1, 4}, 90), k = param({3, 1, 3}, 91), v = param({3, 1, 4}, 92);
  Tensor padding = zeros({1, 3}, kBool);
  padding.set_at({0, 1}, 1);
  std::vector<Tensor> inputs{q, k, v};
  for (auto& p : mha.parameters()) inputs.push_back(p);
  testing::check_gradcheck(
      [&](const std::vector<Tensor>& in) {
        auto r = mha(in[0], in[1], in[2],
                     MultiheadAttentionArgs().with_key_padding_mask(padding).with_is_causal(true));
        return r.output.sum() + r.weights.pow(2.0).sum();
      },
      inputs);
}

TEST_CASE("MultiheadAttention dropout acts in training only and is seeded") {
  MultiheadAttention mha(MultiheadAttentionOptions(8, 2).with_dropout(0.5).with_batch_first(true));
  randomize(mha, 17);
  Tensor x = param({2, 5, 8}, 100).detach();
  Generator g1(1), g2(1);
  auto a = mha(x, x, x, MultiheadAttentionArgs{}.with_need_weights(false));
  (void)a;
  MultiheadAttentionArgs args1, args2;
  args1.dropout_generator = &g1;
  args2.dropout_generator = &g2;
  auto r1 = mha(x, x, x, args1), r2 = mha(x, x, x, args2);
  CHECK(testing::max_abs_diff(r1.output, r2.output) == 0.0);
  mha.eval();
  auto e1 = mha(x, x, x), e2 = mha(x, x, x);
  CHECK(testing::max_abs_diff(e1.output, e2.output) == 0.0);
  CHECK(testing::max_abs_diff(e1.output, r1.output) > 1e-3);
  CHECK(!mha.out_proj->is_training());
}

TEST_CASE("MultiheadAttention rejects bad shapes, masks and dtypes with a clear message") {
  MultiheadAttention mha(8, 2);
  mha.to(kFloat64);
  Tensor q = param({3, 2, 8}, 110), k = param({4, 2, 8}, 111);
  CHECK_THROWS_WITH_AS(mha(q, param({4, 2, 6}, 112), k),
                       doctest::Contains("key features must equal kdim 8"), ShapeError);
  CHECK_THROWS_WITH_AS(mha(q, k, param({5, 2, 8}, 113)),
                       doctest::Contains("key and value lengths differ"), ShapeError);
  CHECK_THROWS_WITH_AS(mha(q, k, k, MultiheadAttentionArgs().with_attn_mask(zeros({3, 3}, kBool))),
                       doctest::Contains("attn_mask (3,3) bool must be (L, S) = (3,4)"),
                       ShapeError);
  CHECK_THROWS_AS(
      mha(q, k, k, MultiheadAttentionArgs().with_key_padding_mask(zeros({4, 2}, kBool))),
      ShapeError);
  CHECK_THROWS_AS(mha(q, k, k, MultiheadAttentionArgs().with_attn_mask(zeros({3, 4}, kInt64))),
                  DTypeError);
  CHECK_THROWS_WITH_AS(mha(q.to(kFloat32), k.to(kFloat32), k.to(kFloat32)),
                       doctest::Contains("parameters are float64"), DTypeError);
  CHECK_THROWS_WITH_AS(MultiheadAttention(10, 3), doctest::Contains("divisible"), ValueError);
}

TEST_CASE("MultiheadAttention draws its init in PyTorch's order: out_proj first, once") {
  // PyTorch builds out_proj (nn.Linear draws its weight and bias), then _reset_parameters
  // draws in_proj_weight; out_proj.bias is then zeroed.
  Generator for_mha(21), for_parts(21);
  MultiheadAttention mha(MultiheadAttentionOptions(6, 2), &for_mha);
  nn::Linear out_proj(6, 6, true, &for_parts);
  Tensor in_proj = empty({18, 6});
  nn::init::xavier_uniform_(in_proj, 1.0, &for_parts);
  CHECK(testing::max_abs_diff(mha.out_proj->weight, out_proj.weight) == 0.0);
  CHECK(testing::max_abs_diff(mha.in_proj_weight, in_proj) == 0.0);
  CHECK(for_mha.next_u64() == for_parts.next_u64());
}
