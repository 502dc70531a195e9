// MultiheadAttentionOptions::head_size (a head width apart from the head count, Keras's
// key_dim): parameter shapes and count, init bounds, a head-by-head reference built from
// primitive ops, gradcheck, fused / composed / per-head agreement, the Keras conversion and
// errors.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "headgrad/headgrad.hpp"
#include "headgrad/nn/attention_head.hpp"
#include "headgrad/nn/keras_attention.hpp"
#include "helpers.hpp"

namespace hg = headgrad;
namespace nn = headgrad::nn;
using hg::Shape;
using hg::Tensor;
using hg::testing::check_gradcheck;
using hg::testing::max_abs_diff;
using hg::testing::param;

namespace {

// E = embed_dim, H = num_heads, d = head_size; I = H * d differs from E in each.
struct Dims {
  std::int64_t e, h, d;
};
const std::vector<Dims> kDims{{12, 3, 8}, {10, 4, 2}};

nn::MultiheadAttentionOptions options_of(const Dims& dims) {
  return nn::MultiheadAttentionOptions(dims.e, dims.h)
      .with_head_size(dims.d)
      .with_batch_first(true);
}

// Every parameter to float64 with N(0, 0.25) values (nonzero biases).
void randomize(nn::Module& m, std::uint64_t seed) {
  m.to(hg::kFloat64);
  hg::Generator gen(seed);
  hg::NoGradGuard no_grad;
  for (auto& [name, p] : m.named_parameters())
    p.copy_(hg::mul(hg::randn(p.shape(), hg::kFloat64, &gen), 0.5));
}

struct Reference {
  Tensor output;   // (N, L, E)
  Tensor weights;  // (N, H, L, S)
};

// Multi-head attention head by head from primitive ops (matmul, softmax, masked_fill),
// batch first: head h projects with rows [h*d, (h+1)*d) of W_q, W_k, W_v and their biases
// and is read back by columns [h*d, (h+1)*d) of W_o; scores scale by 1/sqrt(d).
Reference reference(const nn::MultiheadAttention& mha, const Tensor& xq, const Tensor& xk,
                    const Tensor& xv, bool causal) {
  const std::int64_t heads = mha.num_heads(), d = mha.options().head_size;
  const std::int64_t l = xq.size(1), s = xk.size(1);
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  auto project = [&](const Tensor& x, const Tensor& w, const Tensor& b, std::int64_t h) {
    Tensor y = hg::matmul(x, hg::transpose(hg::narrow(w, 0, h * d, d), 0, 1));  // (N, len, d)
    return b.defined() ? hg::add(y, hg::narrow(b, 0, h * d, d)) : y;
  };
  Reference r;
  std::vector<Tensor> weights;
  for (std::int64_t h = 0; h < heads; ++h) {
    const Tensor q = project(xq, mha.w_q(), mha.b_q(), h);
    const Tensor k = project(xk, mha.w_k(), mha.b_k(), h);
    const Tensor v = project(xv, mha.w_v(), mha.b_v(), h);
    Tensor scores = hg::mul(hg::matmul(q, hg::transpose(k, 1, 2)), scale);  // (N, L, S)
    if (causal)
      scores =
          hg::masked_fill(scores, hg::causal_mask(l, s), -std::numeric_limits<double>::infinity());
    const Tensor p = hg::softmax(scores, -1);
    const Tensor z = hg::matmul(p, v);                                 // (N, L, d)
    const Tensor w_o = hg::narrow(mha.out_proj->weight, 1, h * d, d);  // (E, d)
    const Tensor contribution = hg::matmul(z, hg::transpose(w_o, 0, 1));
    r.output = h == 0 ? contribution : hg::add(r.output, contribution);
    weights.push_back(p);
  }
  if (mha.out_proj->bias.defined()) r.output = hg::add(r.output, mha.out_proj->bias);
  r.weights = hg::stack(weights, 1);
  return r;
}

// The gradients of every parameter, in named_parameters() order, then cleared.
std::vector<Tensor> take_grads(nn::Module& m) {
  std::vector<Tensor> grads;
  for (auto& p : m.parameters()) {
    grads.push_back(p.grad().detach().clone());
    p.zero_grad();
  }
  return grads;
}

Tensor leaf(const Tensor& t) { return t.detach().clone().requires_grad_(true); }

// The same loss for every path: outputs and the per-head weights both get gradient.
Tensor loss_of(const Tensor& output, const Tensor& weights) {
  hg::Generator gen(3);
  const Tensor up = hg::randn(output.shape(), hg::kFloat64, &gen);
  return hg::add(hg::mul(output, up).sum(), hg::pow(weights, 2.0).sum());
}

}  // namespace

TEST_CASE("head_size sets the head width apart from the head count: shapes and count") {
  for (const Dims& dims : kDims) {
    CAPTURE(dims.e);
    const std::int64_t e = dims.e, h = dims.h, d = dims.d, i = h * d;
    nn::MultiheadAttention mha(options_of(dims));
    CHECK(mha.head_dim() == d);
    CHECK(mha.inner_dim() == i);
    CHECK(mha.options().inner_dim() == i);
    CHECK(mha.parameter("in_proj_weight").shape() == Shape{3 * i, e});
    CHECK(mha.parameter("in_proj_bias").shape() == Shape{3 * i});
    CHECK(mha.parameter("out_proj.weight").shape() == Shape{e, i});
    CHECK(mha.parameter("out_proj.bias").shape() == Shape{e});
    CHECK(mha.w_q().shape() == Shape{i, e});
    CHECK(mha.b_v().shape() == Shape{i});
    CHECK(mha.num_parameters() == 3 * i * e + 3 * i + e * i + e);
    CHECK(mha.to_string().find("head_size=" + std::to_string(d)) != std::string::npos);

    nn::MultiheadAttention cross(options_of(dims).with_kdim(5).with_vdim(7).with_add_bias_kv(true));
    CHECK(cross.parameter("q_proj_weight").shape() == Shape{i, e});
    CHECK(cross.parameter("k_proj_weight").shape() == Shape{i, 5});
    CHECK(cross.parameter("v_proj_weight").shape() == Shape{i, 7});
    CHECK(cross.parameter("bias_k").shape() == Shape{1, 1, i});
    CHECK(cross.parameter("bias_v").shape() == Shape{1, 1, i});
    CHECK(cross.parameter("out_proj.weight").shape() == Shape{e, i});

    const Tensor out = mha(hg::randn({2, 3, e}), hg::randn({2, 3, e}), hg::randn({2, 3, e})).output;
    CHECK(out.shape() == Shape{2, 3, e});
  }
  // Without head_size the head is E / H, as in PyTorch.
  const nn::MultiheadAttentionOptions plain(12, 3);
  CHECK(plain.head_dim() == 4);
  CHECK(plain.inner_dim() == 12);
}

TEST_CASE("head_size equal to E over H draws the same values as the default") {
  hg::Generator a(11), b(11);
  nn::MultiheadAttention plain(nn::MultiheadAttentionOptions(12, 3), &a);
  nn::MultiheadAttention sized(nn::MultiheadAttentionOptions(12, 3).with_head_size(4), &b);
  const nn::StateDict sa = plain.state_dict(), sb = sized.state_dict();
  REQUIRE(sa.keys() == sb.keys());
  for (const auto& [name, t] : sa) {
    CAPTURE(name);
    CHECK(t.to_vector<double>() == sb.at(name).to_vector<double>());
  }
}

TEST_CASE("with head_size the init keeps PyTorch's scheme on the (3I, E) matrix") {
  const std::int64_t e = 10, h = 4, d = 8, i = h * d;
  hg::Generator gen(5);
  nn::MultiheadAttention mha(nn::MultiheadAttentionOptions(e, h).with_head_size(d), &gen);
  auto max_abs = [](const Tensor& t) {
    double m = 0;
    for (double x : t.to_vector<double>()) m = std::max(m, std::abs(x));
    return m;
  };
  // xavier_uniform_: bound sqrt(6 / (fan_in + fan_out)) = sqrt(6 / (E + 3I)).
  const double packed = std::sqrt(6.0 / static_cast<double>(e + 3 * i));
  CHECK(max_abs(mha.in_proj_weight) <= packed);
  CHECK(max_abs(mha.in_proj_weight) > 0.98 * packed);
  // nn.Linear(I, E): kaiming_uniform_(a = sqrt(5)) -> bound 1 / sqrt(I).
  const double linear = 1.0 / std::sqrt(static_cast<double>(i));
  CHECK(max_abs(mha.out_proj->weight) <= linear);
  CHECK(max_abs(mha.out_proj->weight) > 0.9 * linear);
  CHECK(max_abs(mha.in_proj_bias) == 0.0);
  CHECK(max_abs(mha.out_proj->bias) == 0.0);
}

TEST_CASE("with head_size the fused and composed attention equal a head-by-head reference") {
  std::uint64_t seed = 20;
  for (const Dims& dims : kDims) {
    for (bool causal : {false, true}) {
      for (bool gated : {false, true}) {  // gates of 1 route through the composed path
        CAPTURE(dims.e);
        CAPTURE(causal);
        CAPTURE(gated);
        ++seed;
        nn::MultiheadAttention mha(options_of(dims).with_kdim(5).with_vdim(3));
        randomize(mha, seed);
        if (gated) mha.set_head_gates(hg::ones({dims.h}, hg::kFloat64));
        const std::int64_t n = 2, l = 4, s = causal ? 4 : 5;
        const Tensor xq = param({n, l, dims.e}, seed + 1), xk = param({n, s, 5}, seed + 2),
                     xv = param({n, s, 3}, seed + 3);
        const auto args =
            nn::MultiheadAttentionArgs().with_is_causal(causal).with_average_attn_weights(false);
        const nn::AttentionOutput got = mha(xq, xk, xv, args);
        loss_of(got.output, got.weights).backward();
        const std::vector<Tensor> got_grads = take_grads(mha);
        const Tensor gq = xq.grad().detach().clone(), gk = xk.grad().detach().clone(),
                     gv = xv.grad().detach().clone();

        const Tensor rq = leaf(xq), rk = leaf(xk), rv = leaf(xv);
        const Reference want = reference(mha, rq, rk, rv, causal);
        loss_of(want.output, want.weights).backward();
        const std::vector<Tensor> want_grads = take_grads(mha);

        CHECK(max_abs_diff(got.output, want.output) < 1e-12);
        CHECK(max_abs_diff(got.weights, want.weights) < 1e-12);
        CHECK(max_abs_diff(gq, rq.grad()) < 1e-12);
        CHECK(max_abs_diff(gk, rk.grad()) < 1e-12);
        CHECK(max_abs_diff(gv, rv.grad()) < 1e-12);
        REQUIRE(got_grads.size() == want_grads.size());
        for (std::size_t i = 0; i < got_grads.size(); ++i) {
          CAPTURE(i);
          CHECK(max_abs_diff(got_grads[i], want_grads[i]) < 1e-11);
        }
      }
    }
  }
}

TEST_CASE("self-attention with head_size on the packed projection equals the reference") {
  for (const Dims& dims : kDims) {
    CAPTURE(dims.e);
    nn::MultiheadAttention mha(options_of(dims));
    randomize(mha, 40 + dims.e);
    const Tensor x = param({3, 4, dims.e}, 41);
    const nn::AttentionOutput got =
        mha(x, x, x, nn::MultiheadAttentionArgs().with_average_attn_weights(false));
    const Reference want = reference(mha, x, x, x, false);
    CHECK(max_abs_diff(got.output, want.output) < 1e-12);
    CHECK(max_abs_diff(got.weights, want.weights) < 1e-12);
  }
}

TEST_CASE("MultiheadAttention with head_size passes gradcheck for inputs and parameters") {
  for (const Dims& dims : kDims) {
    for (bool composed : {false, true}) {  // add_bias_kv and add_zero_attn: the composed path
      CAPTURE(dims.e);
      CAPTURE(composed);
      nn::MultiheadAttention mha(
          options_of(dims).with_kdim(3).with_add_bias_kv(composed).with_add_zero_attn(composed));
      randomize(mha, 50 + dims.e);
      Tensor q = param({2, 2, dims.e}, 51), k = param({2, 3, 3}, 52), v = param({2, 3, dims.e}, 53);
      Tensor padding = hg::zeros({2, 3}, hg::kBool);
      padding.set_at({1, 2}, 1);
      std::vector<Tensor> inputs{q, k, v};
      for (auto& p : mha.parameters()) inputs.push_back(p);
      check_gradcheck(
          [&](const std::vector<Tensor>& in) {
            auto r = mha(in[0], in[1], in[2],
                         nn::MultiheadAttentionArgs()
                             .with_key_padding_mask(padding)
                             .with_average_attn_weights(false));
            return hg::add(r.output.sum(), hg::pow(r.weights, 2.0).sum());
          },
          inputs);
    }
  }
  // Self-attention through the packed projection.
  nn::MultiheadAttention self(options_of(kDims[1]));
  randomize(self, 60);
  std::vector<Tensor> inputs{param({1, 3, 10}, 61)};
  for (auto& p : self.parameters()) inputs.push_back(p);
  check_gradcheck(
      [&](const std::vector<Tensor>& in) {
        return self(in[0], in[0], in[0], nn::MultiheadAttentionArgs().with_is_causal(true))
            .output.sum();
      },
      inputs);
}

TEST_CASE("fused and per-head attention with head_size agree in outputs and gradients") {
  for (const Dims& dims : kDims) {
    CAPTURE(dims.e);
    const std::int64_t d = dims.d, i = dims.h * dims.d;
    hg::Generator ga(70), gb(70);
    nn::MultiheadAttention fused(options_of(dims).with_kdim(4).with_add_bias_kv(true), &ga);
    nn::HeadwiseMultiheadAttention built(options_of(dims).with_kdim(4).with_add_bias_kv(true), &gb);
    // The per-head constructor gives the fused constructor's values.
    const auto round_trip = built.to_fused();
    for (const auto& [name, t] : fused.state_dict()) {
      CAPTURE(name);
      CHECK(t.to_vector<double>() == round_trip->state_dict().at(name).to_vector<double>());
    }

    randomize(fused, 71 + dims.e);
    auto headwise = nn::HeadwiseMultiheadAttention::from_fused(fused);
    CHECK(headwise->out_proj->weight.shape() == Shape{dims.e, i});
    CHECK((*headwise->heads)[0]->q_proj->weight.shape() == Shape{d, dims.e});
    CHECK(headwise->num_parameters() == fused.num_parameters());

    const Tensor xq = param({2, 3, dims.e}, 72), xk = param({2, 4, 4}, 73),
                 xv = param({2, 4, dims.e}, 74);
    const Tensor fq = leaf(xq), fk = leaf(xk), fv = leaf(xv);
    const Tensor hq = leaf(xq), hk = leaf(xk), hv = leaf(xv);
    const auto args = nn::MultiheadAttentionArgs().with_average_attn_weights(false);
    const nn::AttentionOutput rf = fused(fq, fk, fv, args);
    const nn::AttentionOutput rh = (*headwise)(hq, hk, hv, args);
    CHECK(max_abs_diff(rf.output, rh.output) < 1e-12);
    CHECK(max_abs_diff(rf.weights, rh.weights) < 1e-12);
    loss_of(rf.output, rf.weights).backward();
    loss_of(rh.output, rh.weights).backward();
    CHECK(max_abs_diff(fq.grad(), hq.grad()) < 1e-12);
    CHECK(max_abs_diff(fk.grad(), hk.grad()) < 1e-12);
    CHECK(max_abs_diff(fv.grad(), hv.grad()) < 1e-12);
    CHECK(max_abs_diff(fused.out_proj->weight.grad(), headwise->out_proj->weight.grad()) < 1e-12);
    CHECK(max_abs_diff(fused.out_proj->bias.grad(), headwise->out_proj->bias.grad()) < 1e-12);
    for (std::int64_t h = 0; h < dims.h; ++h) {
      CAPTURE(h);
      const nn::AttentionHead& head = *(*headwise->heads)[static_cast<std::size_t>(h)];
      CHECK(max_abs_diff(head.q_proj->weight.grad(),
                         hg::narrow(fused.q_proj_weight.grad(), 0, h * d, d)) < 1e-12);
      CHECK(max_abs_diff(head.k_proj->weight.grad(),
                         hg::narrow(fused.k_proj_weight.grad(), 0, h * d, d)) < 1e-12);
      CHECK(max_abs_diff(head.v_proj->bias.grad(),
                         hg::narrow(fused.in_proj_bias.grad(), 0, 2 * i + h * d, d)) < 1e-12);
      CHECK(max_abs_diff(head.bias_k.grad(), hg::narrow(fused.bias_k.grad(), 2, h * d, d)) < 1e-12);
    }

    // to_fused reproduces every value exactly.
    const auto back = headwise->to_fused();
    CHECK(back->options().head_size == d);
    for (const auto& [name, t] : fused.state_dict()) {
      CAPTURE(name);
      CHECK(max_abs_diff(t, back->state_dict().at(name)) == 0.0);
    }
  }
}

TEST_CASE("Keras key_dim converts to head_size and back with the same function") {
  // Keras: 3 heads of key_dim 4 on 6 query features, so H * key_dim = 12 != 6.
  nn::KerasMultiHeadAttention keras(nn::KerasMultiHeadAttentionOptions(3, 4, 6));
  randomize(keras, 80);
  const auto mha = keras.to_torch();
  CHECK(mha->options().head_size == 4);
  CHECK(mha->in_proj_weight.shape() == Shape{36, 6});
  CHECK(mha->out_proj->weight.shape() == Shape{6, 12});
  const Tensor q = param({2, 3, 6}, 81), v = param({2, 5, 6}, 82);
  const nn::AttentionOutput a =
      keras(q, v, Tensor(), nn::KerasAttentionArgs().with_return_attention_scores(true));
  const nn::AttentionOutput b =
      (*mha)(q, v, v, nn::MultiheadAttentionArgs().with_average_attn_weights(false));
  CHECK(max_abs_diff(a.output, b.output) < 1e-12);
  CHECK(max_abs_diff(a.weights, b.weights) < 1e-12);

  const auto again = nn::KerasMultiHeadAttention::from_torch(*mha);
  CHECK(again->key_dim() == 4);
  for (const auto& [name, t] : keras.state_dict()) {
    CAPTURE(name);
    CHECK(max_abs_diff(t, again->state_dict().at(name)) == 0.0);
  }
  // Where H * key_dim is the query width, head_size stays PyTorch's default.
  nn::KerasMultiHeadAttention even(nn::KerasMultiHeadAttentionOptions(3, 2, 6));
  CHECK(even.to_torch()->options().head_size == 0);
}

TEST_CASE("bad head_size options throw ValueError naming the values") {
  using Opts = nn::MultiheadAttentionOptions;
  const std::string negative =
      HG_ERROR_MESSAGE(nn::MultiheadAttention(Opts(12, 3).with_head_size(-2)));
  CHECK(negative.find("MultiheadAttention") != std::string::npos);
  CHECK(negative.find("head_size must be positive") != std::string::npos);
  CHECK(negative.find("-2") != std::string::npos);
  CHECK_THROWS_AS(nn::HeadwiseMultiheadAttention(Opts(12, 3).with_head_size(-1)), hg::ValueError);
  const std::string indivisible = HG_ERROR_MESSAGE(nn::MultiheadAttention(Opts(10, 4)));
  CHECK(indivisible.find("embed_dim 10 must be divisible by num_heads 4") != std::string::npos);
  CHECK(indivisible.find("head_size") != std::string::npos);
  CHECK_NOTHROW(nn::MultiheadAttention(Opts(10, 4).with_head_size(3)));
  // The inputs keep the embed_dim width, not H * d.
  nn::MultiheadAttention mha(Opts(10, 4).with_head_size(3).with_batch_first(true));
  const Tensor wide = hg::randn({1, 2, 12});
  const std::string shape = HG_ERROR_MESSAGE(mha(wide, wide, wide));
  CHECK(shape.find("query features must equal embed_dim 10") != std::string::npos);
}
