// AttentionHead and HeadwiseMultiheadAttention against independent compositions: a head
// against softmax(q k^T / sqrt(d)) v written out with primitives; the per-head layer
// against the fused MultiheadAttention (a different composition: packed projections and
// a (N, H, L, d) head split) in outputs, weights and every gradient, over a table of
// option combinations; conversions both ways; fully masked rows; gradcheck; the
// initialization's distribution and generator use; error messages.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "headgrad/nn/attention_head.hpp"
#include "headgrad/nn/multihead_attention.hpp"
#include "helpers.hpp"
#include "nn/random_attention.hpp"

namespace hg = headgrad;
namespace nn = headgrad::nn;
using headgrad::testing::random_fused;
using hg::Shape;
using hg::Tensor;
using hg::testing::check_gradcheck;
using hg::testing::max_abs_diff;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kTol = 1e-12;

Tensor random_bool(const Shape& shape, std::uint64_t seed, double p = 0.3) {
  hg::Generator gen(seed);
  const auto u = hg::rand(shape, hg::kFloat64, &gen).to_vector<double>();
  std::vector<bool> m(u.size());
  for (std::size_t i = 0; i < u.size(); ++i) m[i] = u[i] < p;
  return hg::from_vector<bool>(m, shape);
}

// Normal entries with about a quarter of them -inf (an additive mask that blocks some keys).
Tensor random_additive(const Shape& shape, std::uint64_t seed) {
  hg::Generator gen(seed);
  auto v = hg::randn(shape, hg::kFloat64, &gen).to_vector<double>();
  const auto u = hg::rand(shape, hg::kFloat64, &gen).to_vector<double>();
  for (std::size_t i = 0; i < v.size(); ++i)
    if (u[i] < 0.25) v[i] = -kInf;
  return hg::from_vector<double>(v, shape);
}

bool has_nan(const Tensor& t) {
  for (double x : t.to_vector<double>())
    if (std::isnan(x)) return true;
  return false;
}

enum class AttnMask { none, bool_2d, float_2d, bool_3d, float_3d };
enum class PadMask { none, boolean, additive };

struct Case {
  std::string name;
  std::int64_t embed_dim = 8, num_heads = 2, kdim = 0, vdim = 0;
  bool bias = true, add_bias_kv = false, add_zero_attn = false, batch_first = false;
  bool cross = false, unbatched = false;
  AttnMask attn_mask = AttnMask::none;
  PadMask key_padding_mask = PadMask::none;
  bool is_causal = false, need_weights = true, average = true;
  double dropout = 0.0;
  bool eval = false;
};

// A case from space-separated flags: cross, unbatched, batch_first, nobias, bias_kv,
// zero_attn, causal, per_head, no_weights, eval_dropout, heads=H, embed=E, kdim=K, vdim=V,
// attn=bool2|float2|bool3|float3 (attn_mask (L, S) or (N*H, L, S)), kpm=bool|float.
Case make(std::string name, const std::string& flags) {
  static const std::map<std::string, std::function<void(Case&)>> set = {
      {"cross", [](Case& c) { c.cross = true; }},
      {"unbatched", [](Case& c) { c.unbatched = true; }},
      {"batch_first", [](Case& c) { c.batch_first = true; }},
      {"nobias", [](Case& c) { c.bias = false; }},
      {"bias_kv", [](Case& c) { c.add_bias_kv = true; }},
      {"zero_attn", [](Case& c) { c.add_zero_attn = true; }},
      {"causal", [](Case& c) { c.is_causal = true; }},
      {"per_head", [](Case& c) { c.average = false; }},
      {"no_weights", [](Case& c) { c.need_weights = false; }},
      {"eval_dropout", [](Case& c) { c.dropout = 0.4, c.eval = true; }},
      {"attn=bool2", [](Case& c) { c.attn_mask = AttnMask::bool_2d; }},
      {"attn=float2", [](Case& c) { c.attn_mask = AttnMask::float_2d; }},
      {"attn=bool3", [](Case& c) { c.attn_mask = AttnMask::bool_3d; }},
      {"attn=float3", [](Case& c) { c.attn_mask = AttnMask::float_3d; }},
      {"kpm=bool", [](Case& c) { c.key_padding_mask = PadMask::boolean; }},
      {"kpm=float", [](Case& c) { c.key_padding_mask = PadMask::additive; }}};
  static const std::map<std::string, std::int64_t Case::*> sizes = {{"heads", &Case::num_heads},
                                                                    {"embed", &Case::embed_dim},
                                                                    {"kdim", &Case::kdim},
                                                                    {"vdim", &Case::vdim}};
  Case c;
  c.name = std::move(name);
  std::istringstream in(flags);
  for (std::string f; in >> f;) {
    const auto eq = f.find('=');
    if (set.count(f)) {
      set.at(f)(c);
    } else if (eq != std::string::npos && sizes.count(f.substr(0, eq))) {
      c.*sizes.at(f.substr(0, eq)) = std::stoll(f.substr(eq + 1));
    } else {
      throw std::invalid_argument("unknown case flag " + f);
    }
  }
  return c;
}

// clang-format off
std::vector<Case> cases() {
  return {
      make("self attention, defaults", ""),
      make("self, batch first, per-head weights", "batch_first per_head"),
      make("cross attention", "cross"),
      make("cross, kdim and vdim", "cross kdim=5 vdim=7"),
      make("bias off", "nobias"),
      make("add_bias_kv", "cross bias_kv"),
      make("add_zero_attn", "zero_attn"),
      make("bias_kv, zero_attn and both masks", "bias_kv zero_attn attn=bool2 kpm=bool per_head"),
      make("bool attn_mask (L, S)", "cross attn=bool2"),
      make("float attn_mask (L, S)", "cross attn=float2"),
      make("bool attn_mask (N*H, L, S)", "cross attn=bool3"),
      make("float attn_mask (N*H, L, S)", "attn=float3 per_head"),
      make("bool key_padding_mask", "cross kpm=bool"),
      make("float key_padding_mask", "kpm=float"),
      make("is_causal", "causal"),
      make("is_causal with float attn_mask and padding, batch first",
           "causal cross attn=float2 kpm=bool batch_first"),
      make("is_causal with add_bias_kv", "causal bias_kv"),
      make("unbatched self attention", "unbatched"),
      make("unbatched cross, everything",
           "unbatched cross kdim=3 vdim=6 attn=bool3 kpm=float bias_kv zero_attn per_head"),
      make("need_weights off", "no_weights attn=float2"),
      make("dropout in eval mode", "eval_dropout cross"),
      make("one head", "heads=1 cross attn=bool3"),
      make("four heads of dim 3", "embed=12 heads=4 per_head kpm=bool"),
      make("everything at once, batch first",
           "cross kdim=4 vdim=9 nobias bias_kv zero_attn attn=float3 kpm=float causal batch_first "
           "per_head"),
  };
}
// clang-format on

nn::MultiheadAttentionOptions options_of(const Case& c) {
  return nn::MultiheadAttentionOptions(c.embed_dim, c.num_heads)
      .with_kdim(c.kdim)
      .with_vdim(c.vdim)
      .with_bias(c.bias)
      .with_add_bias_kv(c.add_bias_kv)
      .with_add_zero_attn(c.add_zero_attn)
      .with_batch_first(c.batch_first)
      .with_dropout(c.dropout);
}

struct Inputs {
  Tensor query, key, value;  // leaves; key and value are query itself for self attention
  nn::MultiheadAttentionArgs args;
};

Inputs make_inputs(const Case& c, std::uint64_t seed) {
  const nn::MultiheadAttentionOptions o = options_of(c);
  const std::int64_t n = 2, l = 3, s = c.cross ? 5 : 3, h = c.num_heads;
  auto shaped = [&](std::int64_t len, std::int64_t features) -> Shape {
    if (c.unbatched) return {len, features};
    return c.batch_first ? Shape{n, len, features} : Shape{len, n, features};
  };
  Inputs in;
  in.query = hg::testing::param(shaped(l, o.embed_dim), seed);
  if (c.cross) {
    in.key = hg::testing::param(shaped(s, o.key_dim()), seed + 1);
    in.value = hg::testing::param(shaped(s, o.value_dim()), seed + 2);
  } else {
    in.key = in.value = in.query;
  }
  const Shape per_head = c.unbatched ? Shape{h, l, s} : Shape{n * h, l, s};
  switch (c.attn_mask) {
    case AttnMask::none:
      break;
    case AttnMask::bool_2d:
      in.args.attn_mask = random_bool({l, s}, seed + 3);
      break;
    case AttnMask::float_2d:
      in.args.attn_mask = random_additive({l, s}, seed + 3);
      break;
    case AttnMask::bool_3d:
      in.args.attn_mask = random_bool(per_head, seed + 3);
      break;
    case AttnMask::float_3d:
      in.args.attn_mask = random_additive(per_head, seed + 3);
      break;
  }
  const Shape padding = c.unbatched ? Shape{s} : Shape{n, s};
  if (c.key_padding_mask == PadMask::boolean)
    in.args.key_padding_mask = random_bool(padding, seed + 4, 0.25);
  if (c.key_padding_mask == PadMask::additive)
    in.args.key_padding_mask = random_additive(padding, seed + 4);
  in.args.is_causal = c.is_causal;
  in.args.need_weights = c.need_weights;
  in.args.average_attn_weights = c.average;
  return in;
}

// The same values as fresh leaves (so the two layers' input gradients stay apart).
Inputs copy_inputs(const Inputs& in) {
  Inputs out = in;
  out.query = in.query.detach().clone().requires_grad_(true);
  const bool self = in.key.impl() == in.query.impl();
  out.key = self ? out.query : in.key.detach().clone().requires_grad_(true);
  out.value = self ? out.query : in.value.detach().clone().requires_grad_(true);
  return out;
}

// loss = sum(output * g) (+ sum(weights * g_w)), backpropagated.
template <typename Layer>
nn::AttentionOutput run_backward(const Layer& layer, const Inputs& in, std::uint64_t seed) {
  nn::AttentionOutput r = layer.forward(in.query, in.key, in.value, in.args);
  hg::Generator gen(seed);
  Tensor loss = hg::sum(hg::mul(r.output, hg::randn(r.output.shape(), hg::kFloat64, &gen)));
  if (r.weights.defined())
    loss = hg::add(loss,
                   hg::sum(hg::mul(r.weights, hg::randn(r.weights.shape(), hg::kFloat64, &gen))));
  loss.backward();
  return r;
}

void check_close(const Tensor& a, const Tensor& b, const std::string& what) {
  INFO(what);
  REQUIRE(a.defined());
  REQUIRE(b.defined());
  CHECK(max_abs_diff(a, b) <= kTol);
}

// Rows [which*E + h*d, +d) of the fused projection gradient (which: 0 = q, 1 = k, 2 = v).
Tensor fused_weight_grad(const nn::MultiheadAttention& f, int which, std::int64_t h) {
  const std::int64_t e = f.embed_dim(), d = f.head_dim();
  if (f.options().packed_in_proj())
    return hg::narrow(f.in_proj_weight.grad(), 0, which * e + h * d, d);
  const Tensor& w = which == 0 ? f.q_proj_weight : which == 1 ? f.k_proj_weight : f.v_proj_weight;
  return hg::narrow(w.grad(), 0, h * d, d);
}

void check_state_dicts_equal(const nn::StateDict& a, const nn::StateDict& b) {
  REQUIRE(a.keys() == b.keys());
  for (const auto& [name, t] : a) {
    INFO(name);
    const Tensor& u = b.at(name);
    CHECK(t.dtype() == u.dtype());
    REQUIRE(t.shape() == u.shape());
    CHECK(t.to_vector<double>() == u.to_vector<double>());  // exact
  }
}

}  // namespace

TEST_CASE("fused and per-head attention agree in outputs and gradients") {
  std::uint64_t seed = 100;
  for (const Case& c : cases()) {
    INFO("case: " << c.name);
    seed += 10;
    auto fused = random_fused(options_of(c), seed);
    if (c.eval) fused->eval();
    auto headwise = nn::HeadwiseMultiheadAttention::from_fused(*fused);
    REQUIRE(headwise->is_training() == !c.eval);

    const Inputs in_f = make_inputs(c, seed + 5);
    const Inputs in_h = copy_inputs(in_f);
    const nn::AttentionOutput rf = run_backward(*fused, in_f, seed + 7);
    const nn::AttentionOutput rh = run_backward(*headwise, in_h, seed + 7);

    check_close(rh.output, rf.output, "output");
    CHECK(rh.output.shape() == in_f.query.shape());
    CHECK_FALSE(has_nan(rh.output));
    if (c.need_weights) {
      check_close(rh.weights, rf.weights, "weights");
      CHECK_FALSE(has_nan(rh.weights));
    } else {
      CHECK_FALSE(rh.weights.defined());
      CHECK_FALSE(rf.weights.defined());
    }

    check_close(in_h.query.grad(), in_f.query.grad(), "query grad");
    if (c.cross) {
      check_close(in_h.key.grad(), in_f.key.grad(), "key grad");
      check_close(in_h.value.grad(), in_f.value.grad(), "value grad");
    }
    check_close(headwise->out_proj->weight.grad(), fused->out_proj->weight.grad(),
                "out_proj.weight grad");
    if (c.bias)
      check_close(headwise->out_proj->bias.grad(), fused->out_proj->bias.grad(),
                  "out_proj.bias grad");

    const std::int64_t e = fused->embed_dim(), d = fused->head_dim();
    for (std::int64_t h = 0; h < c.num_heads; ++h) {
      INFO("head " << h);
      const nn::AttentionHead& head = *(*headwise->heads)[static_cast<std::size_t>(h)];
      const nn::Linear* proj[3] = {head.q_proj.get(), head.k_proj.get(), head.v_proj.get()};
      for (int which = 0; which < 3; ++which) {
        INFO("projection "
             << "qkv"[which]);
        check_close(proj[which]->weight.grad(), fused_weight_grad(*fused, which, h), "weight grad");
        if (c.bias)
          check_close(proj[which]->bias.grad(),
                      hg::narrow(fused->in_proj_bias.grad(), 0, which * e + h * d, d), "bias grad");
      }
      if (c.add_bias_kv) {
        check_close(head.bias_k.grad(), hg::narrow(fused->bias_k.grad(), 2, h * d, d),
                    "bias_k grad");
        check_close(head.bias_v.grad(), hg::narrow(fused->bias_v.grad(), 2, h * d, d),
                    "bias_v grad");
      }
    }
  }
}

TEST_CASE(
    "an attention head is softmax of scaled projected scores over keys with bias and zero "
    "positions appended") {
  const std::int64_t n = 2, l = 3, s = 4, e = 5, kdim = 3, vdim = 6, d = 2;
  nn::AttentionHead head(
      nn::AttentionHeadOptions(e, d).with_kdim(kdim).with_vdim(vdim).with_add_bias_kv(true));
  head.to(hg::kFloat64);
  {
    hg::Generator gen(5);
    hg::NoGradGuard no_grad;
    for (auto& [name, p] : head.named_parameters())
      p.copy_(hg::randn(p.shape(), hg::kFloat64, &gen));
  }
  CHECK(head.bias_k.shape() == Shape{1, 1, d});
  const Tensor q = hg::testing::param({n, l, e}, 1), k = hg::testing::param({n, s, kdim}, 2),
               v = hg::testing::param({n, s, vdim}, 3);
  const Tensor blocked = random_bool({n, l, s}, 4, 0.4);
  const nn::AttentionHeadArgs args = nn::AttentionHeadArgs()
                                         .with_mask(nn::AttentionMask::blocked_where_true(blocked))
                                         .with_add_zero_attn(true);
  const auto r = head.forward(q, k, v, args);

  // By hand: the projections with linear(), then per query a softmax over S + 2 scalar scores.
  const Tensor zero = hg::zeros({n, 1, d}, hg::kFloat64);
  const auto qh = hg::linear(q, head.q_proj->weight, head.q_proj->bias).to_vector<double>();
  const auto kh = hg::concat({hg::linear(k, head.k_proj->weight, head.k_proj->bias),
                              hg::expand(head.bias_k, {n, 1, d}), zero},
                             1)
                      .to_vector<double>();
  const auto vh = hg::concat({hg::linear(v, head.v_proj->weight, head.v_proj->bias),
                              hg::expand(head.bias_v, {n, 1, d}), zero},
                             1)
                      .to_vector<double>();
  const auto m = blocked.to_vector<bool>();
  const std::int64_t sp = s + 2;  // the bias position, then the zero position
  std::vector<double> expected_out(n * l * d, 0.0), expected_w(n * l * sp);
  for (std::int64_t row = 0; row < n * l; ++row) {  // row = b * L + i
    const std::int64_t b = row / l;
    std::vector<double> p(sp);
    double mx = -kInf, z = 0;
    for (std::int64_t j = 0; j < sp; ++j) {
      double dot = 0;
      for (std::int64_t c = 0; c < d; ++c) dot += qh[row * d + c] * kh[(b * sp + j) * d + c];
      p[j] = (j < s && m[row * s + j]) ? -kInf : dot / std::sqrt(static_cast<double>(d));
      mx = std::max(mx, p[j]);
    }
    for (double& x : p) z += (x = std::exp(x - mx));
    for (std::int64_t j = 0; j < sp; ++j) {
      expected_w[row * sp + j] = p[j] / z;
      for (std::int64_t c = 0; c < d; ++c)
        expected_out[row * d + c] += p[j] / z * vh[(b * sp + j) * d + c];
    }
  }
  hg::testing::check_values(r.output, {n, l, d}, expected_out, 1e-12);
  hg::testing::check_values(r.weights, {n, l, sp}, expected_w, 1e-12);

  // The simple form with one mask equals the full form with that mask.
  const auto simple = head.forward(q, k, v, nn::AttentionMask::blocked_where_true(blocked));
  const auto full = head.forward(
      q, k, v, nn::AttentionHeadArgs().with_mask(nn::AttentionMask::blocked_where_true(blocked)));
  CHECK(max_abs_diff(simple.output, full.output) == 0.0);
  CHECK(simple.weights.shape() == Shape{n, l, s + 1});
}

TEST_CASE("per-head parameters are named by head and are the fused row blocks") {
  auto fused = random_fused(nn::MultiheadAttentionOptions(6, 3).with_add_bias_kv(true), 3);
  auto headwise = nn::HeadwiseMultiheadAttention::from_fused(*fused);
  const auto keys = headwise->state_dict().keys();
  for (const char* name : {"heads.0.q_proj.weight", "heads.2.v_proj.bias", "heads.1.bias_k",
                           "heads.2.bias_v", "out_proj.weight", "out_proj.bias"})
    CHECK(std::find(keys.begin(), keys.end(), name) != keys.end());
  CHECK(keys.size() == 3 * 8 + 2);
  // Head 1's key weight is rows E + d .. E + 2d of in_proj_weight, read element by element.
  const Tensor wk1 = headwise->parameter("heads.1.k_proj.weight");
  REQUIRE(wk1.shape() == Shape{2, 6});
  for (std::int64_t r = 0; r < 2; ++r)
    for (std::int64_t c = 0; c < 6; ++c)
      CHECK(wk1.at({r, c}) == fused->in_proj_weight.at({6 + 2 + r, c}));
  CHECK(headwise->parameter("heads.2.bias_v").at({0, 0, 1}) == fused->bias_v.at({0, 0, 5}));
  // Values, not a graph: leaves, independent of the fused tensors.
  CHECK(wk1.is_leaf());
  CHECK(wk1.requires_grad());
  {
    hg::NoGradGuard no_grad;
    fused->in_proj_weight.fill_(0.0);
  }
  CHECK(wk1.at({0, 0}) != 0.0);
}

TEST_CASE("fused to per-head to fused and back reproduce the state dict exactly") {
  for (bool packed : {true, false}) {
    INFO("packed " << packed);
    auto options = nn::MultiheadAttentionOptions(8, 4).with_add_bias_kv(true);
    if (!packed) options.with_kdim(3).with_vdim(5);
    auto fused = random_fused(options, 21);
    fused->eval();
    auto headwise = nn::HeadwiseMultiheadAttention::from_fused(*fused);
    CHECK_FALSE(headwise->is_training());
    CHECK_FALSE((*headwise->heads)[1]->is_training());
    CHECK(headwise->out_proj->weight.dtype() == hg::kFloat64);
    auto back = headwise->to_fused();
    CHECK_FALSE(back->is_training());
    check_state_dicts_equal(back->state_dict(), fused->state_dict());

    // Per-head first: random per-head values survive per-head -> fused -> per-head.
    auto start = nn::HeadwiseMultiheadAttention::from_fused(*random_fused(options, 22));
    {
      hg::Generator gen(23);
      hg::NoGradGuard no_grad;
      for (auto& [name, p] : start->named_parameters())
        p.copy_(hg::randn(p.shape(), hg::kFloat64, &gen));
    }
    auto again = nn::HeadwiseMultiheadAttention::from_fused(*start->to_fused());
    CHECK(again->is_training());
    check_state_dicts_equal(again->state_dict(), start->state_dict());
  }
  // float32 stays float32, bias off stays off.
  auto f32 = std::make_shared<nn::MultiheadAttention>(
      nn::MultiheadAttentionOptions(4, 2).with_bias(false));
  auto h32 = nn::HeadwiseMultiheadAttention::from_fused(*f32);
  CHECK(h32->out_proj->weight.dtype() == hg::kFloat32);
  CHECK_FALSE((*h32->heads)[0]->q_proj->bias.defined());
  check_state_dicts_equal(h32->to_fused()->state_dict(), f32->state_dict());
}

TEST_CASE(
    "a fully masked query row gets zero weights and no NaN in the fused and per-head layers") {
  for (bool batch_first : {false, true}) {
    INFO("batch_first " << batch_first);
    const auto options = nn::MultiheadAttentionOptions(4, 2).with_batch_first(batch_first);
    auto fused = random_fused(options, 31);
    auto headwise = nn::HeadwiseMultiheadAttention::from_fused(*fused);
    const std::int64_t n = 2, l = 3, s = 4;
    std::vector<bool> blocked(l * s, false);
    for (std::int64_t j = 0; j < s; ++j) blocked[1 * s + j] = true;  // query 1 sees nothing
    blocked[0 * s + 2] = true;
    Inputs in;
    const Shape qs = batch_first ? Shape{n, l, 4} : Shape{l, n, 4};
    const Shape ks = batch_first ? Shape{n, s, 4} : Shape{s, n, 4};
    in.query = hg::testing::param(qs, 1);
    in.key = hg::testing::param(ks, 2);
    in.value = hg::testing::param(ks, 3);
    in.args.attn_mask = hg::from_vector<bool>(blocked, {l, s});
    in.args.average_attn_weights = false;
    const Inputs in_h = copy_inputs(in);
    const auto rf = run_backward(*fused, in, 5);
    const auto rh = run_backward(*headwise, in_h, 5);
    for (const Tensor& w : {rf.weights, rh.weights}) {
      REQUIRE(w.shape() == Shape{n, 2, l, s});
      for (std::int64_t b = 0; b < n; ++b)
        for (std::int64_t h = 0; h < 2; ++h)
          for (std::int64_t j = 0; j < s; ++j) CHECK(w.at({b, h, 1, j}) == 0.0);
    }
    // The masked query's output is out_proj.bias (a zero attended value).
    for (std::int64_t b = 0; b < n; ++b)
      for (std::int64_t c = 0; c < 4; ++c) {
        const Shape at = batch_first ? Shape{b, 1, c} : Shape{1, b, c};
        CHECK(rh.output.at(at) == doctest::Approx(headwise->out_proj->bias.at({c})).epsilon(1e-14));
      }
    std::vector<Tensor> all{rh.output,         rh.weights, in_h.query.grad(), in_h.key.grad(),
                            in_h.value.grad(), rf.output,  in.query.grad(),   in.value.grad()};
    for (const auto& p : headwise->parameters()) all.push_back(p.grad());
    for (const auto& p : fused->parameters()) all.push_back(p.grad());
    for (const Tensor& t : all) {
      REQUIRE(t.defined());
      CHECK_FALSE(has_nan(t));
    }
    check_close(rh.output, rf.output, "output");
    check_close(in_h.key.grad(), in.key.grad(), "key grad");
  }
}

TEST_CASE("the per-head layer's gradient with respect to query, key and value passes gradcheck") {
  auto fused = random_fused(nn::MultiheadAttentionOptions(4, 2)
                                .with_kdim(3)
                                .with_vdim(5)
                                .with_add_bias_kv(true)
                                .with_add_zero_attn(true),
                            41);
  auto headwise = nn::HeadwiseMultiheadAttention::from_fused(*fused);
  nn::MultiheadAttentionArgs args;
  args.attn_mask = random_additive({2, 3}, 42);
  args.key_padding_mask = hg::from_vector<bool>({false, false, true, false, true, false}, {2, 3});
  args.average_attn_weights = false;
  const Tensor q = hg::testing::param({2, 2, 4}, 43), k = hg::testing::param({3, 2, 3}, 44),
               v = hg::testing::param({3, 2, 5}, 45);
  check_gradcheck(
      [&](const std::vector<Tensor>& in) {
        return headwise->forward(in[0], in[1], in[2], args).output;
      },
      {q, k, v});
  check_gradcheck(
      [&](const std::vector<Tensor>& in) {
        return headwise->forward(in[0], in[1], in[2], args).weights;
      },
      {q, k, v});
}

TEST_CASE(
    "a fresh per-head layer has the fused initialization, drawn from the generator the same way") {
  // Same seed: the per-head layer equals the fused one, and the default generator is left
  // in the same state.
  for (bool packed : {true, false}) {
    INFO("packed " << packed);
    auto options = nn::MultiheadAttentionOptions(8, 2).with_add_bias_kv(true);
    if (!packed) options.with_kdim(4).with_vdim(6);
    hg::manual_seed(77);
    auto fused = std::make_shared<nn::MultiheadAttention>(options);
    const double next_after_fused = hg::default_generator().next_double();
    hg::manual_seed(77);
    auto headwise = std::make_shared<nn::HeadwiseMultiheadAttention>(options);
    const double next_after_headwise = hg::default_generator().next_double();
    CHECK(next_after_headwise == next_after_fused);
    check_state_dicts_equal(headwise->state_dict(),
                            nn::HeadwiseMultiheadAttention::from_fused(*fused)->state_dict());
    // reset_parameters with a generator: the fused layer's draws.
    hg::Generator g1(5), g2(5);
    fused->reset_parameters(&g1);
    headwise->reset_parameters(&g2);
    CHECK(g1.next_u64() == g2.next_u64());
    check_state_dicts_equal(headwise->state_dict(),
                            nn::HeadwiseMultiheadAttention::from_fused(*fused)->state_dict());
  }
  // Conversions draw nothing.
  auto fused = std::make_shared<nn::MultiheadAttention>(4, 2);
  hg::manual_seed(3);
  const double expected = hg::default_generator().next_double();
  hg::manual_seed(3);
  auto converted = nn::HeadwiseMultiheadAttention::from_fused(*fused)->to_fused();
  CHECK(hg::default_generator().next_double() == expected);
}

TEST_CASE(
    "per-head weight slices are uniform with the packed bound sqrt(6 over 4E), not a per-slice "
    "bound") {
  const std::int64_t e = 64, heads = 4;
  hg::manual_seed(11);
  nn::HeadwiseMultiheadAttention layer(e, heads);
  // xavier_uniform_ on the packed (3E, E) matrix; a per-slice (16, 64) xavier would give 0.27.
  const double bound = std::sqrt(6.0 / (4.0 * e));
  std::vector<double> w;
  for (const auto& head : *layer.heads)
    for (const auto* proj : {head->q_proj.get(), head->k_proj.get(), head->v_proj.get()}) {
      const auto v = proj->weight.to_vector<double>();
      w.insert(w.end(), v.begin(), v.end());
      for (double b : proj->bias.to_vector<double>()) CHECK(b == 0.0);
    }
  REQUIRE(w.size() == static_cast<std::size_t>(3 * e * e));
  double max_abs = 0, sum = 0, sum_sq = 0;
  for (double x : w) {
    max_abs = std::max(max_abs, std::abs(x));
    sum += x;
    sum_sq += x * x;
  }
  const double count = static_cast<double>(w.size());
  const double mean = sum / count, stddev = std::sqrt(sum_sq / count - mean * mean);
  CHECK(max_abs <= bound);
  CHECK(max_abs >= 0.99 * bound);
  CHECK(stddev == doctest::Approx(bound / std::sqrt(3.0)).epsilon(0.03));
  CHECK(std::abs(mean) < 0.01 * bound);
  for (double b : layer.out_proj->bias.to_vector<double>()) CHECK(b == 0.0);
  // out_proj keeps nn.Linear's bound 1/sqrt(E).
  for (double x : layer.out_proj->weight.to_vector<double>())
    CHECK(std::abs(x) <= 1.0 / std::sqrt(double(e)));
}

TEST_CASE("per-head dropout in training mode zeroes weights or scales them by 1 over 1-p") {
  const double p = 0.5;
  auto fused = random_fused(nn::MultiheadAttentionOptions(8, 2).with_dropout(p), 51);
  auto headwise = nn::HeadwiseMultiheadAttention::from_fused(*fused);
  const Tensor q = hg::testing::param({4, 3, 8}, 52);
  nn::MultiheadAttentionArgs args;
  args.average_attn_weights = false;
  hg::Generator gen(53);
  args.dropout_generator = &gen;
  const Tensor dropped = headwise->forward(q, q, q, args).weights;
  headwise->eval();
  const Tensor kept = headwise->forward(q, q, q, args).weights;
  const auto a = dropped.to_vector<double>(), b = kept.to_vector<double>();
  int zeros = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i] == 0.0) {
      ++zeros;
    } else {
      CHECK(a[i] == doctest::Approx(b[i] / (1 - p)).epsilon(1e-12));
    }
  }
  CHECK(zeros > 0);
  CHECK(zeros < static_cast<int>(a.size()));
}

TEST_CASE("bad shapes raise ShapeError naming HeadwiseMultiheadAttention") {
  nn::HeadwiseMultiheadAttention layer(nn::MultiheadAttentionOptions(4, 2).with_kdim(3));
  const Tensor q = hg::randn({3, 2, 4}), k = hg::randn({5, 2, 3}), v = hg::randn({5, 2, 4});
  auto expect_shape_error = [](auto&& call) {
    const std::string message = HG_ERROR_MESSAGE(call());
    CHECK(message.find("HeadwiseMultiheadAttention") != std::string::npos);
    CHECK_THROWS_AS(call(), hg::ShapeError);
  };
  expect_shape_error([&] { return layer.forward(hg::randn({3, 2, 5}), k, v); });  // query features
  expect_shape_error([&] { return layer.forward(q, hg::randn({5, 2, 4}), v); });  // kdim
  expect_shape_error([&] { return layer.forward(q, k, hg::randn({6, 2, 4})); });  // lengths
  expect_shape_error([&] { return layer.forward(q, k, hg::randn({4})); });        // rank
  expect_shape_error([&] {
    return layer.forward(q, k, v, nn::MultiheadAttentionArgs().with_attn_mask(hg::zeros({3, 4})));
  });
  expect_shape_error([&] {
    return layer.forward(q, k, v,
                         nn::MultiheadAttentionArgs().with_key_padding_mask(hg::zeros({5, 2})));
  });
  CHECK(HG_ERROR_MESSAGE(nn::HeadwiseMultiheadAttention(6, 4)).find("HeadwiseMultiheadAttention") !=
        std::string::npos);
  CHECK_THROWS_AS(nn::HeadwiseMultiheadAttention(6, 4), hg::ValueError);
  CHECK_THROWS_AS(layer.forward(q.to(hg::kFloat64), k.to(hg::kFloat64), v.to(hg::kFloat64)),
                  hg::DTypeError);

  nn::AttentionHead head(nn::AttentionHeadOptions(4, 2));
  const std::string message = HG_ERROR_MESSAGE(
      head.forward(hg::randn({2, 3, 4}), hg::randn({2, 5, 3}), hg::randn({2, 5, 4})));
  CHECK(message.find("AttentionHead") != std::string::npos);
  CHECK(message.find("(2,5,3)") != std::string::npos);
  CHECK_THROWS_AS(head.forward(hg::randn({3, 4}), hg::randn({3, 4}), hg::randn({3, 4})),
                  hg::ShapeError);
}
