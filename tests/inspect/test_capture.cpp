// inspect::Capture against independent computations, for the fused MultiheadAttention and
// the per-head HeadwiseMultiheadAttention: off by default; tap shapes in every layout
// (batch first or not, unbatched, add_bias_kv / add_zero_attn, cross-attention); tap
// values recomputed with plain loops from the layer's parameters (q = x W_q,h^T + b_q,h,
// scores = q k^T / sqrt(d) with -inf where padded, pattern = softmax rows, z = pattern v,
// contribution = z_h W_o,h^T, summing to the output); tap gradients for
// L = sum(output * R) derived by hand (dz_h = R W_o,h, dpattern = dz v^T, the softmax
// backward, dq, dk, dv); fused and per-head agreement; names and errors.
//
// Shapes: N batch, L queries, S keys (S' after add_bias_kv / add_zero_attn), E embed,
// H heads, d = E / H. Layers are float64 with random nonzero parameters.
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "headgrad/inspect/capture.hpp"
#include "headgrad/nn/attention_head.hpp"
#include "headgrad/nn/gpt.hpp"
#include "headgrad/nn/multihead_attention.hpp"
#include "helpers.hpp"
#include "nn/random_attention.hpp"

namespace hg = headgrad;
namespace nn = headgrad::nn;
using headgrad::testing::layout_of;
using headgrad::testing::random_fused;
namespace inspect = headgrad::inspect;
using hg::Shape;
using hg::Tensor;
using hg::testing::max_abs_diff;

namespace {

constexpr double kTol = 1e-12;
constexpr double kInf = std::numeric_limits<double>::infinity();

// Element access by multi-index into a copy of a tensor's values.
struct Values {
  std::vector<double> v;
  Shape shape;
  explicit Values(const Tensor& t) : v(t.to_vector<double>()), shape(t.shape()) {}
  double operator()(std::initializer_list<std::int64_t> index) const {
    std::int64_t flat = 0;
    std::size_t k = 0;
    for (std::int64_t i : index) flat = flat * shape[k++] + i;
    return v[static_cast<std::size_t>(flat)];
  }
};

// The largest |a - b| relative to max(1, |b|); equal infinities count 0.
double max_rel_diff(const std::vector<double>& a, const std::vector<double>& b) {
  REQUIRE(a.size() == b.size());
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::isinf(a[i]) || std::isinf(b[i])) {
      if (a[i] != b[i]) return kInf;
      continue;
    }
    m = std::max(m, std::abs(a[i] - b[i]) / std::max(1.0, std::abs(b[i])));
  }
  return m;
}

// Canonical (N, len, F) tensors to the layer's layout and back.
Tensor to_layout(const Tensor& x, bool batch_first, bool unbatched) {
  if (unbatched) return hg::select(x, 0, 0);
  return batch_first ? x : hg::transpose(x, 0, 1);
}
Tensor from_layout(const Tensor& y, bool batch_first, bool unbatched) {
  if (unbatched) return hg::unsqueeze(y, 0);
  return batch_first ? y : hg::transpose(y, 0, 1);
}

Tensor padding_mask(std::int64_t n, std::int64_t s) {  // (N, S): a different key per example
  std::vector<bool> m(static_cast<std::size_t>(n * s), false);
  for (std::int64_t i = 0; i < n; ++i) m[static_cast<std::size_t>(i * s + (i + 1) % s)] = true;
  m[static_cast<std::size_t>(s - 1)] = true;  // example 0 loses its last key too
  return hg::from_vector<bool>(m, {n, s});
}

const std::vector<std::string> kTapNames = {"k", "pattern", "q", "result", "scores", "v", "z"};

}  // namespace

TEST_CASE("a capture records nothing unless it is active, and nested captures both record") {
  auto fused = random_fused(nn::MultiheadAttentionOptions(4, 2), 1);
  auto other = random_fused(nn::MultiheadAttentionOptions(4, 2), 2);
  const Tensor x = hg::testing::param({3, 2, 4}, 3);
  CHECK(nn::active_hook_handlers().empty());
  inspect::Capture a(*fused), b(*fused);
  (*fused)(x, x, x);
  CHECK(a.names().empty());
  CHECK(b.names().empty());
  {
    auto scope_a = a.activate();
    CHECK(nn::active_hook_handlers() == std::vector<nn::HookHandler*>{&a});
    {
      auto scope_b = b.activate();
      CHECK(nn::active_hook_handlers() == std::vector<nn::HookHandler*>{&a, &b});
      (*other)(x, x, x);  // a layer neither watches
      CHECK(a.names().empty());
      CHECK(b.names().empty());
      (*fused)(x, x, x);
      CHECK(b.names() == kTapNames);
    }
    CHECK(nn::active_hook_handlers() == std::vector<nn::HookHandler*>{&a});
    b.clear();
    (*fused)(x, x, x);
  }
  CHECK(nn::active_hook_handlers().empty());
  CHECK(a.names() == kTapNames);
  CHECK(b.names().empty());
  a.clear();
  CHECK(a.names().empty());
  CHECK_FALSE(a.contains("pattern"));
}

TEST_CASE("taps have the documented shapes for fused and per-head layers in every layout") {
  struct Layout {
    const char* name;
    bool batch_first, unbatched, bias_kv, zero_attn, cross;
    std::int64_t kdim, vdim;
  };
  const std::vector<Layout> layouts = {
      {"sequence first, self", false, false, false, false, false, 0, 0},
      {"batch first, self", true, false, false, false, false, 0, 0},
      {"unbatched, self", false, true, false, false, false, 0, 0},
      {"add_bias_kv and add_zero_attn", true, false, true, true, false, 0, 0},
      {"cross, kdim and vdim, sequence first", false, false, false, false, true, 5, 7},
      {"unbatched cross with both extra keys", true, true, true, true, true, 0, 0},
  };
  const std::int64_t e = 6, h = 3, d = 2, l = 3;
  for (const Layout& c : layouts) {
    const std::int64_t n = c.unbatched ? 1 : 2, s = c.cross ? 5 : l;
    const std::int64_t s2 = s + c.bias_kv + c.zero_attn;
    const auto options = nn::MultiheadAttentionOptions(e, h)
                             .with_batch_first(c.batch_first)
                             .with_add_bias_kv(c.bias_kv)
                             .with_add_zero_attn(c.zero_attn)
                             .with_kdim(c.kdim)
                             .with_vdim(c.vdim);
    auto fused = random_fused(options, 10);
    for (bool per_head : {false, true}) {
      CAPTURE(c.name);
      CAPTURE(per_head);
      auto layer = layout_of(fused, per_head);
      const Tensor q = to_layout(hg::testing::param({n, l, e}, 11), c.batch_first, c.unbatched);
      Tensor k = q, v = q;
      if (c.cross) {
        k = to_layout(hg::testing::param({n, s, options.key_dim()}, 12), c.batch_first,
                      c.unbatched);
        v = to_layout(hg::testing::param({n, s, options.value_dim()}, 13), c.batch_first,
                      c.unbatched);
      }
      inspect::Capture capture(*layer);
      {
        auto scope = capture.activate();
        (*layer)(q, k, v);
      }
      CHECK(capture.names() == kTapNames);
      CHECK(capture.get("q").shape() == Shape{n, h, l, d});
      CHECK(capture.get("k").shape() == Shape{n, h, s2, d});
      CHECK(capture.get("v").shape() == Shape{n, h, s2, d});
      CHECK(capture.get("scores").shape() == Shape{n, h, l, s2});
      CHECK(capture.get("pattern").shape() == Shape{n, h, l, s2});
      CHECK(capture.get("z").shape() == Shape{n, h, l, d});
      CHECK(capture.get("result").shape() == Shape{n, h, l, e});
    }
  }
}

TEST_CASE("tap values equal plain loops over the layer's parameters and inputs") {
  // Sequence-first layout with a key padding mask; self-attention (the packed path) and
  // cross-attention (separate projections, L != S).
  const std::int64_t n = 2, l = 3, e = 6, h = 3, d = 2;
  for (bool cross : {false, true}) {
    const std::int64_t s = cross ? 4 : l;
    auto fused = random_fused(nn::MultiheadAttentionOptions(e, h).with_dropout(0.5), 20);
    fused->eval();  // dropout off: the returned weights are the pattern
    const Values w(fused->in_proj_weight), b(fused->in_proj_bias);
    const Values wo(fused->out_proj->weight), bo(fused->out_proj->bias);
    const Tensor xq = hg::testing::param({n, l, e}, 21);
    const Tensor xk = cross ? hg::testing::param({n, s, e}, 22) : xq;
    const Tensor xv = cross ? hg::testing::param({n, s, e}, 23) : xq;
    const Tensor kpm = padding_mask(n, s);
    const auto args =
        nn::MultiheadAttentionArgs().with_key_padding_mask(kpm).with_average_attn_weights(false);
    const Tensor q_in = to_layout(xq, false, false);
    const Tensor k_in = cross ? to_layout(xk, false, false) : q_in;
    const Tensor v_in = cross ? to_layout(xv, false, false) : q_in;
    const Values kpm_v(kpm.to(hg::kFloat64)), x_q(xq), x_k(xk), x_v(xv);
    for (bool per_head : {false, true}) {
      CAPTURE(cross);
      CAPTURE(per_head);
      auto layer = layout_of(fused, per_head);
      const Tensor plain = from_layout((*layer)(q_in, k_in, v_in, args).output, false, false);
      inspect::Capture capture(*layer);
      nn::AttentionOutput out;
      {
        auto scope = capture.activate();
        out = (*layer)(q_in, k_in, v_in, args);
      }
      const Values q(capture.get("q")), k(capture.get("k")), v(capture.get("v"));
      const Values scores(capture.get("scores")), pattern(capture.get("pattern"));
      const Values z(capture.get("z")), contribution(capture.get("result"));
      CHECK(max_abs_diff(capture.get("pattern"), out.weights) == 0.0);

      // Projections: head hd of q/k/v is rows [hd*d, (hd+1)*d) of each third of in_proj.
      std::vector<double> q_ref, k_ref, v_ref;
      auto project = [&](const Values& x, std::int64_t third, std::int64_t len,
                         std::vector<double>& ref) {
        for (std::int64_t i = 0; i < n; ++i)
          for (std::int64_t hd = 0; hd < h; ++hd)
            for (std::int64_t t = 0; t < len; ++t)
              for (std::int64_t c = 0; c < d; ++c) {
                const std::int64_t row = third * e + hd * d + c;
                double acc = b({row});
                for (std::int64_t f = 0; f < e; ++f) acc += x({i, t, f}) * w({row, f});
                ref.push_back(acc);
              }
      };
      project(x_q, 0, l, q_ref);
      project(x_k, 1, s, k_ref);
      project(x_v, 2, s, v_ref);
      CHECK(max_rel_diff(q.v, q_ref) <= kTol);
      CHECK(max_rel_diff(k.v, k_ref) <= kTol);
      CHECK(max_rel_diff(v.v, v_ref) <= kTol);

      // scores, pattern, z, contribution.
      std::vector<double> scores_ref, pattern_ref, z_ref, contribution_ref, output_ref;
      std::vector<double> summed(static_cast<std::size_t>(n * l * e), 0.0);
      for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t hd = 0; hd < h; ++hd)
          for (std::int64_t t = 0; t < l; ++t) {
            std::vector<double> row(static_cast<std::size_t>(s));
            double top = -kInf;
            for (std::int64_t j = 0; j < s; ++j) {
              double dot = 0;
              for (std::int64_t c = 0; c < d; ++c) dot += q({i, hd, t, c}) * k({i, hd, j, c});
              row[j] = kpm_v({i, j}) != 0 ? -kInf : dot / std::sqrt(static_cast<double>(d));
              top = std::max(top, row[j]);
              scores_ref.push_back(row[j]);
            }
            double total = 0;
            for (double r : row) total += std::exp(r - top);
            for (double r : row) pattern_ref.push_back(std::exp(r - top) / total);
            for (std::int64_t c = 0; c < d; ++c) {
              double acc = 0;
              for (std::int64_t j = 0; j < s; ++j) acc += pattern({i, hd, t, j}) * v({i, hd, j, c});
              z_ref.push_back(acc);
            }
            for (std::int64_t f = 0; f < e; ++f) {
              double acc = 0;
              for (std::int64_t c = 0; c < d; ++c) acc += z({i, hd, t, c}) * wo({f, hd * d + c});
              contribution_ref.push_back(acc);
              summed[static_cast<std::size_t>((i * l + t) * e + f)] +=
                  contribution({i, hd, t, f}) + (hd == 0 ? bo({f}) : 0.0);
            }
          }
      CHECK(max_rel_diff(scores.v, scores_ref) <= kTol);
      CHECK(max_rel_diff(pattern.v, pattern_ref) <= kTol);
      CHECK(max_rel_diff(z.v, z_ref) <= kTol);
      CHECK(max_rel_diff(contribution.v, contribution_ref) <= kTol);
      // The uncaptured output (one GEMM) is the sum of the contributions plus the bias.
      CHECK(max_rel_diff(summed, plain.to_vector<double>()) <= kTol);
    }
  }
}

TEST_CASE("the pattern tap is taken before dropout in training mode") {
  auto fused = random_fused(nn::MultiheadAttentionOptions(4, 2).with_dropout(0.5), 30);
  const Tensor x = hg::testing::param({3, 2, 4}, 31);
  inspect::Capture capture(*fused, {"scores", "pattern"});
  nn::AttentionOutput out;
  {
    auto scope = capture.activate();
    out = (*fused)(x, x, x, nn::MultiheadAttentionArgs().with_average_attn_weights(false));
  }
  const auto p = capture.get("pattern").to_vector<double>();
  const auto dropped = out.weights.to_vector<double>();
  int zeroed = 0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (dropped[i] == 0.0) {
      ++zeroed;
    } else {
      CHECK(dropped[i] == doctest::Approx(2.0 * p[i]).epsilon(1e-12));
    }
  }
  CHECK(zeroed > 0);
  // Rows of the pattern still sum to 1.
  const auto rows = hg::sum(capture.get("pattern"), {-1}).to_vector<double>();
  for (double r : rows) CHECK(r == doctest::Approx(1.0).epsilon(1e-12));
}

TEST_CASE("tap gradients equal hand derivations for L = sum of output times R") {
  // dz_h = R W_o[:, h-block];  dcontribution_h = R;  dpattern = dz v^T;
  // dscores = p * (dpattern - rowsum(dpattern * p));  dv = p^T dz;
  // dq = dscores k / sqrt(d);  dk = dscores^T q / sqrt(d).
  const std::int64_t n = 2, l = 3, e = 6, h = 3, d = 2, s = l;
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  auto fused = random_fused(nn::MultiheadAttentionOptions(e, h), 40);
  const Values wo(fused->out_proj->weight);
  const Tensor x = to_layout(hg::testing::param({n, l, e}, 41).detach(), false, false);
  const Tensor r_canonical = hg::testing::param({n, l, e}, 42).detach();
  const Values r(r_canonical);
  const auto args = nn::MultiheadAttentionArgs().with_key_padding_mask(padding_mask(n, s));
  for (bool per_head : {false, true}) {
    CAPTURE(per_head);
    auto layer = layout_of(fused, per_head);
    inspect::Capture capture(*layer);
    {
      auto scope = capture.activate();
      Tensor out = (*layer)(x, x, x, args).output;
      hg::sum(hg::mul(out, to_layout(r_canonical, false, false))).backward();
    }
    const Values q(capture.get("q")), k(capture.get("k")), v(capture.get("v"));
    const Values p(capture.get("pattern"));
    std::vector<double> dz(static_cast<std::size_t>(n * h * l * d)), dcontribution, dpattern,
        dscores, dq, dk, dv;
    auto at = [&](std::int64_t i, std::int64_t hd, std::int64_t t, std::int64_t c) {
      return static_cast<std::size_t>(((i * h + hd) * l + t) * d + c);
    };
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t hd = 0; hd < h; ++hd)
        for (std::int64_t t = 0; t < l; ++t) {
          for (std::int64_t c = 0; c < d; ++c) {
            double acc = 0;
            for (std::int64_t f = 0; f < e; ++f) acc += r({i, t, f}) * wo({f, hd * d + c});
            dz[at(i, hd, t, c)] = acc;
          }
          for (std::int64_t f = 0; f < e; ++f) dcontribution.push_back(r({i, t, f}));
        }
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t hd = 0; hd < h; ++hd)
        for (std::int64_t t = 0; t < l; ++t) {
          std::vector<double> dp(static_cast<std::size_t>(s));
          double dot = 0;
          for (std::int64_t j = 0; j < s; ++j) {
            for (std::int64_t c = 0; c < d; ++c) dp[j] += dz[at(i, hd, t, c)] * v({i, hd, j, c});
            dpattern.push_back(dp[j]);
            dot += dp[j] * p({i, hd, t, j});
          }
          for (std::int64_t j = 0; j < s; ++j) {
            dscores.push_back(p({i, hd, t, j}) * (dp[j] - dot));
          }
        }
    auto dsc = [&](std::int64_t i, std::int64_t hd, std::int64_t t, std::int64_t j) {
      return dscores[static_cast<std::size_t>(((i * h + hd) * l + t) * s + j)];
    };
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t hd = 0; hd < h; ++hd)
        for (std::int64_t t = 0; t < l; ++t)
          for (std::int64_t c = 0; c < d; ++c) {
            double gq = 0, gk = 0, gv = 0;
            for (std::int64_t j = 0; j < s; ++j) {
              gq += dsc(i, hd, t, j) * k({i, hd, j, c}) * scale;
              gk += dsc(i, hd, j, t) * q({i, hd, j, c}) * scale;  // t indexes keys here
              gv += p({i, hd, j, t}) * dz[at(i, hd, j, c)];
            }
            dq.push_back(gq);
            dk.push_back(gk);
            dv.push_back(gv);
          }
    CHECK(max_rel_diff(capture.grad("z").to_vector<double>(), dz) <= kTol);
    CHECK(max_rel_diff(capture.grad("result").to_vector<double>(), dcontribution) <= kTol);
    CHECK(max_rel_diff(capture.grad("pattern").to_vector<double>(), dpattern) <= kTol);
    CHECK(max_rel_diff(capture.grad("scores").to_vector<double>(), dscores) <= kTol);
    CHECK(max_rel_diff(capture.grad("q").to_vector<double>(), dq) <= kTol);
    CHECK(max_rel_diff(capture.grad("k").to_vector<double>(), dk) <= kTol);
    CHECK(max_rel_diff(capture.grad("v").to_vector<double>(), dv) <= kTol);
  }
}

TEST_CASE("tapping changes neither the output nor any gradient beyond rounding") {
  const std::int64_t n = 2, l = 3, e = 6, h = 3;
  auto fused = random_fused(
      nn::MultiheadAttentionOptions(e, h).with_add_bias_kv(true).with_batch_first(true), 50);
  const Tensor r = hg::testing::param({n, l, e}, 51).detach();
  for (bool per_head : {false, true}) {
    CAPTURE(per_head);
    auto layer = layout_of(fused, per_head);
    auto run = [&](bool tapped) {
      layer->zero_grad();
      const Tensor x = hg::testing::param({n, l, e}, 52);
      inspect::Capture capture(*layer);
      std::optional<inspect::Capture::Scope> scope;
      if (tapped) scope.emplace(&capture);
      const Tensor out = (*layer)(x, x, x).output;
      hg::sum(hg::mul(out, r)).backward();
      std::vector<Tensor> results{out.detach(), x.grad()};
      for (const Tensor& p : layer->parameters()) results.push_back(p.grad());
      return results;
    };
    const auto plain = run(false), tapped = run(true);
    REQUIRE(plain.size() == tapped.size());
    for (std::size_t i = 0; i < plain.size(); ++i) {
      CAPTURE(i);  // 0 output, 1 input gradient, then the parameters' gradients
      REQUIRE(tapped[i].defined());
      CHECK(max_abs_diff(tapped[i], plain[i]) <= kTol);
    }
  }
}

TEST_CASE("fused and per-head layers give the same tap values and tap gradients") {
  const std::int64_t n = 2, l = 3, s = 4, e = 6, h = 3;
  const auto options = nn::MultiheadAttentionOptions(e, h)
                           .with_kdim(5)
                           .with_vdim(7)
                           .with_add_bias_kv(true)
                           .with_add_zero_attn(true);
  auto fused = random_fused(options, 60);
  auto heads = nn::HeadwiseMultiheadAttention::from_fused(*fused);
  const Tensor q = hg::testing::param({l, n, e}, 61).detach();
  const Tensor k = hg::testing::param({s, n, 5}, 62).detach();
  const Tensor v = hg::testing::param({s, n, 7}, 63).detach();
  const Tensor r = hg::testing::param({l, n, e}, 64).detach();
  const auto args = nn::MultiheadAttentionArgs().with_key_padding_mask(padding_mask(n, s));
  auto run = [&](nn::AttentionLayer& layer, inspect::Capture& capture) {
    auto scope = capture.activate();
    hg::sum(hg::mul(layer(q, k, v, args).output, r)).backward();
  };
  inspect::Capture a(*fused), b(*heads);
  run(*fused, a);
  run(*heads, b);
  REQUIRE(a.names() == b.names());
  for (const std::string& name : a.names()) {
    CAPTURE(name);
    CHECK(max_abs_diff(a.get(name), b.get(name)) <= kTol);
    CHECK(max_abs_diff(a.grad(name), b.grad(name)) <= kTol);
  }
}

TEST_CASE("taps are named by the layer's path in a model and by the tap alone on a bare layer") {
  for (bool per_head : {false, true}) {
    CAPTURE(per_head);
    hg::Generator gen(70);
    nn::GPT gpt(nn::GPTOptions{.vocab_size = 6,
                               .max_len = 4,
                               .d_model = 8,
                               .nhead = 2,
                               .num_layers = 2,
                               .per_head = per_head},
                &gen);
    const Tensor tokens = hg::from_vector<std::int64_t>({2, 3, 4, 5, 1, 2, 3, 0}, {2, 4});
    inspect::Capture capture(gpt);
    CHECK(capture.layer_names() ==
          std::vector<std::string>{"layers.0.self_attn", "layers.1.self_attn"});
    {
      auto scope = capture.activate();
      hg::sum(gpt(tokens)).backward();
    }
    CHECK(capture.names().size() == 14);
    CHECK(capture.get("layers.0.self_attn.pattern").shape() == Shape{2, 2, 4, 4});
    CHECK(capture.grad("layers.1.self_attn.z").shape() == Shape{2, 2, 4, 4});
    // Causal: position t attends to no key after t.
    CHECK(capture.get("layers.1.self_attn.pattern").at({1, 0, 0, 1}) == 0.0);
    CHECK(capture.get("layers.1.self_attn.scores").at({1, 0, 0, 1}) == -kInf);

    const std::string message = HG_ERROR_MESSAGE(capture.get("layers.0.pattern"));
    CHECK(message.find("layers.0.pattern") != std::string::npos);
    CHECK(message.find("layers.0.self_attn.pattern") != std::string::npos);
    CHECK_THROWS_AS(capture.get("pattern"), hg::IndexError);
    CHECK_THROWS_AS(capture.grad("layers.2.self_attn.z"), hg::IndexError);
  }
  auto fused = random_fused(nn::MultiheadAttentionOptions(4, 2), 71);
  inspect::Capture bare(*fused);
  CHECK(bare.layer_names() == std::vector<std::string>{""});
  CHECK_THROWS_AS(bare.get("pattern"), hg::IndexError);
  const Tensor x = hg::testing::param({3, 2, 4}, 72);
  {
    auto scope = bare.activate();
    (*fused)(x, x, x);
  }
  CHECK(bare.names() == kTapNames);
  // Recorded, but backward has not run.
  CHECK_THROWS_AS(bare.grad("pattern"), hg::Error);
  CHECK(bare.get("pattern").shape() == Shape{2, 2, 3, 3});
}

TEST_CASE("a gradient is refused when grad mode was off or retain_grads is off") {
  auto fused = random_fused(nn::MultiheadAttentionOptions(4, 2), 80);
  const Tensor x = hg::testing::param({3, 2, 4}, 81);
  inspect::Capture no_grad_capture(*fused), no_retain(*fused, inspect::head_points(), false);
  {
    auto scope = no_grad_capture.activate();
    hg::NoGradGuard guard;
    (*fused)(x, x, x);
  }
  CHECK(no_grad_capture.contains("z"));
  CHECK_THROWS_AS(no_grad_capture.grad("z"), hg::Error);
  {
    auto scope = no_retain.activate();
    hg::sum((*fused)(x, x, x).output).backward();
  }
  CHECK_THROWS_AS(no_retain.grad("z"), hg::Error);
  CHECK(no_retain.get("z").shape() == Shape{2, 2, 3, 2});
}

TEST_CASE("a capture of some taps records only those, from the latest call, output unchanged") {
  const std::int64_t e = 6, h = 3;
  auto fused = random_fused(nn::MultiheadAttentionOptions(e, h), 90);
  const Tensor x = hg::testing::param({3, 2, e}, 91);
  for (bool per_head : {false, true}) {
    CAPTURE(per_head);
    auto layer = layout_of(fused, per_head);
    const Tensor plain = (*layer)(x, x, x).output;
    inspect::Capture capture(*layer, {"pattern", "z"});
    Tensor tapped;
    {
      auto scope = capture.activate();
      tapped = (*layer)(x, x, x).output;
    }
    CHECK(capture.names() == std::vector<std::string>{"pattern", "z"});
    // Only rounding differs: untapped, the fused layer runs its fused core.
    CHECK(max_abs_diff(tapped, plain) <= 1e-14);
    // Called again, the layer's taps are those of the second call.
    const Tensor x2 = hg::testing::param({3, 2, e}, 92);
    const Tensor z1 = capture.get("z");
    {
      auto scope = capture.activate();
      (*layer)(x2, x2, x2);
      (*layer)(x, x, x);
    }
    CHECK(max_abs_diff(capture.get("z"), z1) == 0.0);
  }
}

TEST_CASE("points are chosen by own or full name, and an unknown name lists the model's") {
  const std::int64_t e = 4, h = 2;
  auto fused = random_fused(nn::MultiheadAttentionOptions(e, h), 95);
  CHECK(inspect::head_points() ==
        std::vector<std::string>{"q", "k", "v", "scores", "pattern", "z", "result"});
  nn::GPT gpt(nn::GPTOptions{.vocab_size = 5,
                             .max_len = 4,
                             .d_model = e,
                             .nhead = h,
                             .num_layers = 2,
                             .dim_feedforward = 8});
  const Tensor tokens = hg::from_vector<std::int64_t>({0, 1, 2, 3}, {1, 4});
  inspect::Capture chosen(gpt, {"layers.1.self_attn.pattern", "resid_post", "logits"});
  {
    auto scope = chosen.activate();
    gpt.forward(tokens);
  }
  CHECK(chosen.names() == std::vector<std::string>{"layers.0.resid_post", "layers.1.resid_post",
                                                   "layers.1.self_attn.pattern", "logits"});
  CHECK(chosen.layer_names() ==
        std::vector<std::string>{"", "layers.0", "layers.1", "layers.1.self_attn"});
  inspect::Capture every(gpt, {});
  {
    auto scope = every.activate();
    gpt.forward(tokens);
  }
  CHECK(every.names().size() == 3 + 2 * (7 + 7));
  CHECK_THROWS_AS(inspect::Capture(gpt, {"attention"}), hg::IndexError);
  const std::string message = HG_ERROR_MESSAGE(inspect::Capture(gpt, {"attention"}));
  CHECK(message.find("'attention'") != std::string::npos);
  CHECK(message.find("resid_mid, mlp_pre") != std::string::npos);
}
