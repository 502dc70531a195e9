// nn::KerasMultiHeadAttention: conversion to and from nn::MultiheadAttention (outputs,
// per-head weights and input gradients agree for self and cross attention, kdim/vdim,
// bias on and off, masks in both conventions, causal, batch_first both ways), shapes and
// gradcheck with key_dim != E/H, value_dim != key_dim and output_shape != query_features,
// the forward against plain loops over doubles, Keras' glorot init, dropout, fully masked
// rows, state_dict names and error messages.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "headgrad/nn/keras_attention.hpp"
#include "headgrad/nn/multihead_attention.hpp"
#include "helpers.hpp"

namespace hg = headgrad;
namespace nn = headgrad::nn;
using hg::Shape;
using hg::Tensor;
using hg::testing::check_gradcheck;
using hg::testing::max_abs_diff;
using hg::testing::param;

namespace {

// Overwrites every parameter of `m` with N(0, 0.5^2) values (biases included, which are
// zero after the default init), keeping each parameter's dtype.
void randomize(nn::Module& m, std::uint64_t seed) {
  hg::Generator gen(seed);
  hg::NoGradGuard no_grad;
  for (auto& [name, p] : m.named_parameters()) {
    Tensor t = p;
    t.copy_(hg::randn(p.shape(), p.dtype(), &gen) * 0.5);
  }
}

// A float64 tensor of `shape` with entries 0 and 1 following a fixed pattern in which
// every query row keeps its first key.
Tensor attend_pattern(const Shape& shape, std::uint64_t seed) {
  hg::Generator gen(seed);
  Tensor m = hg::rand(shape, hg::kFloat64, &gen);
  std::vector<double> v = m.to_vector<double>();
  const std::int64_t s = shape.back();
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = (i % s == 0 || v[i] < 0.6) ? 1.0 : 0.0;
  return hg::from_vector<double>(v, shape);
}

Tensor as_bool(const Tensor& numeric) { return hg::ne(numeric, hg::zeros({}, numeric.dtype())); }

enum class MaskKind { none, keras_3d, keras_2d_numeric, key_padding };

struct Case {
  const char* name;
  bool self_attention;
  MaskKind mask;
  bool causal;
  bool batch_first;
};

const std::vector<Case> kCases = {
    {"self, no mask", true, MaskKind::none, false, true},
    {"self, causal, seq first", true, MaskKind::none, true, false},
    {"self, (B,T,S) bool mask and causal", true, MaskKind::keras_3d, true, true},
    {"cross, (B,T,S) bool mask, seq first", false, MaskKind::keras_3d, false, false},
    {"cross, (T,S) numeric mask", false, MaskKind::keras_2d_numeric, false, true},
    {"cross, key padding mask and causal, seq first", false, MaskKind::key_padding, true, false},
};

// Runs `keras` and `mha` (which must compute the same function) on the same inputs, mask
// and upstream gradient, and CHECKs outputs, per-head weights and input gradients.
void check_same_function(const nn::KerasMultiHeadAttention& keras,
                         const nn::MultiheadAttention& mha, const Case& c) {
  CAPTURE(c.name);
  REQUIRE(mha.options().batch_first == c.batch_first);
  const std::int64_t b = 2, t = 3, s = c.self_attention ? 3 : 4, h = keras.num_heads();
  const auto& o = keras.options();
  const Tensor xq = param({b, t, o.query_features}, 11);
  const Tensor xk = c.self_attention ? xq : param({b, s, o.resolved_key_features()}, 12);
  const Tensor xv = c.self_attention ? xq : param({b, s, o.resolved_value_features()}, 13);
  auto leaf = [](const Tensor& x) { return x.detach().clone().requires_grad_(true); };

  // The mask in Keras' convention (true / nonzero = attend) and PyTorch's (true = blocked).
  Tensor keras_mask;
  nn::MultiheadAttentionArgs targs;
  targs.with_need_weights(true).with_average_attn_weights(false).with_is_causal(c.causal);
  switch (c.mask) {
    case MaskKind::none:
      break;
    case MaskKind::keras_3d: {
      keras_mask = as_bool(attend_pattern({b, t, s}, 21));
      // (B, T, S) -> PyTorch's (B*H, T, S), batch-major.
      Tensor blocked = nn::torch_mask_from_keras(keras_mask);
      targs.with_attn_mask(blocked.unsqueeze(1).expand({b, h, t, s}).reshape({b * h, t, s}));
      break;
    }
    case MaskKind::keras_2d_numeric:
      keras_mask = attend_pattern({t, s}, 22);
      targs.with_attn_mask(nn::torch_mask_from_keras(keras_mask));
      break;
    case MaskKind::key_padding: {
      Tensor pad = as_bool(attend_pattern({b, 1, s}, 23));
      keras_mask = pad;  // (B, 1, S) broadcasts over the queries
      targs.with_key_padding_mask(nn::torch_mask_from_keras(pad).reshape({b, s}));
      break;
    }
  }

  // Keras side.
  const Tensor kq = leaf(xq), kk = c.self_attention ? kq : leaf(xk),
               kv = c.self_attention ? kq : leaf(xv);
  nn::KerasAttentionArgs kargs;
  kargs.with_attention_mask(keras_mask)
      .with_use_causal_mask(c.causal)
      .with_return_attention_scores(true);
  nn::AttentionOutput kr =
      c.self_attention ? keras.forward(kq, kq, Tensor(), kargs) : keras.forward(kq, kv, kk, kargs);

  // PyTorch side, (L, N, E) unless batch_first.
  const Tensor tq = leaf(xq), tk = c.self_attention ? tq : leaf(xk),
               tv = c.self_attention ? tq : leaf(xv);
  auto layout = [&](const Tensor& x) { return c.batch_first ? x : x.transpose(0, 1); };
  nn::AttentionOutput tr;
  if (c.self_attention) {
    const Tensor x = layout(tq);  // one tensor for all three: PyTorch's self-attention path
    tr = mha.forward(x, x, x, targs);
  } else {
    tr = mha.forward(layout(tq), layout(tk), layout(tv), targs);
  }
  const Tensor t_out = layout(tr.output);

  REQUIRE(kr.output.shape() == Shape{b, t, keras.output_shape()});
  REQUIRE(kr.weights.shape() == Shape{b, h, t, s});
  CHECK(max_abs_diff(kr.output, t_out) < 1e-12);
  CHECK(max_abs_diff(kr.weights, tr.weights) < 1e-12);

  const Tensor upstream = param(kr.output.shape(), 31).detach();
  (kr.output * upstream).sum().backward();
  (t_out * upstream).sum().backward();
  CHECK(max_abs_diff(kq.grad(), tq.grad()) < 1e-12);
  if (!c.self_attention) {
    CHECK(max_abs_diff(kk.grad(), tk.grad()) < 1e-12);
    CHECK(max_abs_diff(kv.grad(), tv.grad()) < 1e-12);
  }
}

}  // namespace

TEST_CASE("from_torch gives the same outputs, weights and input gradients as the source") {
  struct Config {
    std::int64_t kdim, vdim;
    bool bias;
  };
  for (const Config& cfg : {Config{0, 0, true}, Config{0, 0, false}, Config{5, 7, true}}) {
    for (const Case& c : kCases) {
      if (c.self_attention && (cfg.kdim != 0 || cfg.vdim != 0)) continue;
      CAPTURE(cfg.kdim);
      CAPTURE(cfg.bias);
      auto opts = nn::MultiheadAttentionOptions(6, 2)
                      .with_kdim(cfg.kdim)
                      .with_vdim(cfg.vdim)
                      .with_bias(cfg.bias)
                      .with_batch_first(c.batch_first);
      nn::MultiheadAttention mha(opts);
      mha.to(hg::kFloat64);
      randomize(mha, 5);
      auto keras = nn::KerasMultiHeadAttention::from_torch(mha);
      CHECK(keras->query_dense->kernel.dtype() == hg::kFloat64);
      CHECK(keras->key_dim() == 3);
      CHECK(keras->options().resolved_key_features() == (cfg.kdim ? cfg.kdim : 6));
      CHECK(keras->options().resolved_value_features() == (cfg.vdim ? cfg.vdim : 6));
      check_same_function(*keras, mha, c);
    }
  }
}

TEST_CASE("to_torch gives the same outputs, weights and input gradients as the source") {
  struct Config {
    std::int64_t key_features, value_features;
    bool use_bias;
  };
  for (const Config& cfg : {Config{0, 0, true}, Config{0, 0, false}, Config{4, 5, true}}) {
    for (const Case& c : kCases) {
      if (c.self_attention && cfg.key_features != 0) continue;
      auto opts = nn::KerasMultiHeadAttentionOptions(3, 2, 6)
                      .with_key_features(cfg.key_features)
                      .with_value_features(cfg.value_features)
                      .with_use_bias(cfg.use_bias);
      nn::KerasMultiHeadAttention keras(opts);
      keras.to(hg::kFloat64);
      randomize(keras, 6);
      auto mha = keras.to_torch(c.batch_first);
      CHECK(mha->out_proj->weight.dtype() == hg::kFloat64);
      CHECK(mha->options().packed_in_proj() == (cfg.key_features == 0));
      check_same_function(keras, *mha, c);
    }
  }
}

TEST_CASE("converting to PyTorch and back restores every Keras weight exactly") {
  auto opts =
      nn::KerasMultiHeadAttentionOptions(2, 4, 8).with_key_features(3).with_value_features(5);
  nn::KerasMultiHeadAttention keras(opts);
  keras.to(hg::kFloat64);
  randomize(keras, 7);
  auto back = nn::KerasMultiHeadAttention::from_torch(*keras.to_torch());
  const nn::StateDict a = keras.state_dict(), b = back->state_dict();
  REQUIRE(a.keys() == b.keys());
  for (const auto& [name, tensor] : a) {
    CAPTURE(name);
    CHECK(max_abs_diff(tensor, b.at(name)) == 0.0);
  }
}

TEST_CASE("from_torch maps W_q rows and W_o columns to the Keras kernels head by head") {
  nn::MultiheadAttention mha(nn::MultiheadAttentionOptions(4, 2).with_kdim(3));
  mha.to(hg::kFloat64);
  randomize(mha, 8);
  auto keras = nn::KerasMultiHeadAttention::from_torch(mha);
  const std::int64_t d = 2;
  for (std::int64_t h = 0; h < 2; ++h)
    for (std::int64_t j = 0; j < d; ++j) {
      for (std::int64_t f = 0; f < 4; ++f)
        CHECK(keras->query_dense->kernel.at({f, h, j}) == mha.q_proj_weight.at({h * d + j, f}));
      for (std::int64_t f = 0; f < 3; ++f)
        CHECK(keras->key_dense->kernel.at({f, h, j}) == mha.k_proj_weight.at({h * d + j, f}));
      CHECK(keras->value_dense->bias.at({h, j}) == mha.in_proj_bias.at({8 + h * d + j}));
      for (std::int64_t e = 0; e < 4; ++e)
        CHECK(keras->attention_output_dense->kernel.at({h, j, e}) ==
              mha.out_proj->weight.at({e, h * d + j}));
    }
}

TEST_CASE("key_dim, value_dim and output_shape independent of the features give the right shapes") {
  auto opts = nn::KerasMultiHeadAttentionOptions(3, 2, 4)
                  .with_value_dim(5)
                  .with_value_features(6)
                  .with_key_features(7)
                  .with_output_shape(3);
  nn::KerasMultiHeadAttention m(opts);
  CHECK(m.query_dense->kernel.shape() == Shape{4, 3, 2});
  CHECK(m.key_dense->kernel.shape() == Shape{7, 3, 2});
  CHECK(m.value_dense->kernel.shape() == Shape{6, 3, 5});
  CHECK(m.value_dense->bias.shape() == Shape{3, 5});
  CHECK(m.attention_output_dense->kernel.shape() == Shape{3, 5, 3});
  CHECK(m.attention_output_dense->bias.shape() == Shape{3});
  nn::AttentionOutput r =
      m.forward(hg::randn({2, 5, 4}), hg::randn({2, 4, 6}), hg::randn({2, 4, 7}),
                nn::KerasAttentionArgs().with_return_attention_scores(true));
  CHECK(r.output.shape() == Shape{2, 5, 3});
  CHECK(r.weights.shape() == Shape{2, 3, 5, 4});
  CHECK(r.output.dtype() == hg::kFloat32);
}

TEST_CASE("gradcheck passes for query, key, value and a kernel with unequal head sizes") {
  auto opts = nn::KerasMultiHeadAttentionOptions(3, 2, 4)
                  .with_value_dim(5)
                  .with_value_features(6)
                  .with_key_features(7)
                  .with_output_shape(3);
  nn::KerasMultiHeadAttention m(opts);
  m.to(hg::kFloat64);
  randomize(m, 9);
  const Tensor mask = as_bool(attend_pattern({2, 3, 4}, 24));
  const Tensor original_kernel = m.value_dense->kernel;
  // The value kernel is swapped for gradcheck's copy of input 3, so it is differentiated too.
  auto fn = [&](const std::vector<Tensor>& in) {
    m.value_dense->kernel = in[3];
    nn::KerasAttentionArgs args;
    args.with_attention_mask(mask).with_use_causal_mask(true).with_return_attention_scores(true);
    nn::AttentionOutput r = m.forward(in[0], in[1], in[2], args);
    return r.output.sum() + (r.weights * r.weights).sum();
  };
  check_gradcheck(fn, {param({2, 3, 4}, 41), param({2, 4, 6}, 42), param({2, 4, 7}, 43),
                       original_kernel.detach().clone().requires_grad_(true)});
  m.value_dense->kernel = original_kernel;
}

TEST_CASE("the forward matches plain loops over doubles on a tiny case") {
  // B=2, T=2, S=3, Fq=2, Fv=3, Fk=3, H=2, kd=2, vd=1, O=2, with a (B, T, S) mask and causal.
  const std::int64_t B = 2, T = 2, S = 3, Fq = 2, Fv = 3, H = 2, KD = 2, VD = 1, O = 2;
  nn::KerasMultiHeadAttention m(nn::KerasMultiHeadAttentionOptions(H, KD, Fq)
                                    .with_value_dim(VD)
                                    .with_value_features(Fv)
                                    .with_output_shape(O));
  m.to(hg::kFloat64);
  randomize(m, 10);
  const Tensor q = param({B, T, Fq}, 51), v = param({B, S, Fv}, 52), k = param({B, S, Fv}, 53);
  // attend[b][t][s]: batch 0 blocks key 1 for query 1; batch 1 blocks key 0 for query 0,
  // which together with causal leaves query 0 of batch 1 with no key.
  const std::vector<double> attend = {1, 1, 1, 1, 0, 1, 0, 1, 1, 1, 1, 1};
  const Tensor mask = hg::from_vector<double>(attend, {B, T, S});
  nn::AttentionOutput r = m.forward(q, v, k,
                                    nn::KerasAttentionArgs()
                                        .with_attention_mask(mask)
                                        .with_use_causal_mask(true)
                                        .with_return_attention_scores(true));

  const auto X = q.to_vector<double>(), V = v.to_vector<double>(), K = k.to_vector<double>();
  const auto kq = m.query_dense->kernel.to_vector<double>(),
             bq = m.query_dense->bias.to_vector<double>();
  const auto kk = m.key_dense->kernel.to_vector<double>(),
             bk = m.key_dense->bias.to_vector<double>();
  const auto kv = m.value_dense->kernel.to_vector<double>(),
             bv = m.value_dense->bias.to_vector<double>();
  const auto ko = m.attention_output_dense->kernel.to_vector<double>();
  const auto bo = m.attention_output_dense->bias.to_vector<double>();
  std::vector<double> out(B * T * O), weights(B * H * T * S);
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t t = 0; t < T; ++t) {
      std::vector<double> merged(H * VD, 0.0);  // attended values, head-major
      for (std::int64_t h = 0; h < H; ++h) {
        double qh[KD];
        for (std::int64_t j = 0; j < KD; ++j) {
          qh[j] = bq[h * KD + j];
          for (std::int64_t f = 0; f < Fq; ++f)
            qh[j] += X[(b * T + t) * Fq + f] * kq[(f * H + h) * KD + j];
        }
        double score[S], total = 0, top = -INFINITY;
        bool allowed[S];
        for (std::int64_t s = 0; s < S; ++s) {
          allowed[s] = attend[(b * T + t) * S + s] != 0 && s <= t;
          score[s] = 0;
          for (std::int64_t j = 0; j < KD; ++j) {
            double kh = bk[h * KD + j];
            for (std::int64_t f = 0; f < Fv; ++f)
              kh += K[(b * S + s) * Fv + f] * kk[(f * H + h) * KD + j];
            score[s] += qh[j] * kh / std::sqrt(double(KD));
          }
          if (allowed[s]) top = std::max(top, score[s]);
        }
        for (std::int64_t s = 0; s < S; ++s) total += allowed[s] ? std::exp(score[s] - top) : 0.0;
        for (std::int64_t s = 0; s < S; ++s) {
          const double w = allowed[s] ? std::exp(score[s] - top) / total : 0.0;
          weights[((b * H + h) * T + t) * S + s] = w;
          for (std::int64_t j = 0; j < VD; ++j) {
            double vh = bv[h * VD + j];
            for (std::int64_t f = 0; f < Fv; ++f)
              vh += V[(b * S + s) * Fv + f] * kv[(f * H + h) * VD + j];
            merged[h * VD + j] += w * vh;
          }
        }
      }
      for (std::int64_t e = 0; e < O; ++e) {
        double y = bo[e];
        for (std::int64_t hj = 0; hj < H * VD; ++hj) y += merged[hj] * ko[hj * O + e];
        out[(b * T + t) * O + e] = y;
      }
    }
  hg::testing::check_values(r.output, {B, T, O}, out, 1e-12);
  hg::testing::check_values(r.weights, {B, H, T, S}, weights, 1e-12);
  // The fully blocked query (batch 1, query 0) attends to nothing: its output is the bias.
  CHECK(r.output.at({1, 0, 0}) == bo[0]);
}

TEST_CASE("kernels follow Keras glorot_uniform with Keras fans and biases start at zero") {
  // query.kernel (Fq, H, kd): fan_in = Fq*H, fan_out = Fq*kd (Keras' compute_fans: the
  // leading dims multiply both); attention_output.kernel (H, vd, O): fan_in = H*vd,
  // fan_out = H*O.
  const std::int64_t fq = 48, h = 4, kd = 16, vd = 8, o = 24;
  hg::Generator gen(3);
  nn::KerasMultiHeadAttention m(
      nn::KerasMultiHeadAttentionOptions(h, kd, fq).with_value_dim(vd).with_output_shape(o), &gen);
  struct Expect {
    Tensor kernel;
    double bound;
  };
  const std::vector<Expect> expect = {
      {m.query_dense->kernel, std::sqrt(6.0 / double(fq * h + fq * kd))},
      {m.key_dense->kernel, std::sqrt(6.0 / double(fq * h + fq * kd))},
      {m.value_dense->kernel, std::sqrt(6.0 / double(fq * h + fq * vd))},
      {m.attention_output_dense->kernel, std::sqrt(6.0 / double(h * vd + h * o))},
  };
  for (const Expect& e : expect) {
    const auto v = e.kernel.to_vector<double>();
    double sum = 0, sq = 0, largest = 0;
    for (double x : v) {
      sum += x;
      sq += x * x;
      largest = std::max(largest, std::abs(x));
    }
    const double mean = sum / v.size(), std = std::sqrt(sq / v.size() - mean * mean);
    CAPTURE(e.bound);
    CHECK(largest <= e.bound);
    CHECK(largest > 0.95 * e.bound);
    CHECK(std == doctest::Approx(e.bound / std::sqrt(3.0)).epsilon(0.05));
  }
  for (const Tensor& b : {m.query_dense->bias, m.key_dense->bias, m.value_dense->bias,
                          m.attention_output_dense->bias})
    CHECK(hg::abs(b).sum().item() == 0.0);
  // The same generator seed gives the same weights; reset_parameters redraws them.
  hg::Generator gen2(3);
  nn::KerasMultiHeadAttention again(
      nn::KerasMultiHeadAttentionOptions(h, kd, fq).with_value_dim(vd).with_output_shape(o), &gen2);
  CHECK(max_abs_diff(again.value_dense->kernel, m.value_dense->kernel) == 0.0);
  again.reset_parameters(&gen2);
  CHECK(max_abs_diff(again.value_dense->kernel, m.value_dense->kernel) > 0.0);
}

TEST_CASE("dropout acts in training only and the returned weights are taken before it") {
  nn::KerasMultiHeadAttention m(nn::KerasMultiHeadAttentionOptions(2, 3, 4).with_dropout(0.5));
  m.to(hg::kFloat64);
  randomize(m, 12);
  const Tensor q = param({2, 5, 4}, 61), v = param({2, 6, 4}, 62);
  auto run = [&](std::optional<bool> training, std::uint64_t seed) {
    hg::Generator gen(seed);
    nn::KerasAttentionArgs args;
    args.with_return_attention_scores(true).with_dropout_generator(&gen);
    args.training = training;
    return m.forward(q, v, Tensor(), args);
  };
  const nn::AttentionOutput eval = run(false, 1);
  const nn::AttentionOutput train = run(true, 1);
  CHECK(max_abs_diff(train.output, eval.output) > 1e-3);
  // Weights before dropout: the evaluation weights, rows summing to 1.
  CHECK(max_abs_diff(train.weights, eval.weights) < 1e-15);
  CHECK(max_abs_diff(train.weights.sum({-1}), hg::ones({2, 2, 5}, hg::kFloat64)) < 1e-12);
  // Without the weights, the same draws give the same output.
  {
    hg::Generator gen(1);
    nn::AttentionOutput r = m.forward(
        q, v, Tensor(), nn::KerasAttentionArgs().with_training(true).with_dropout_generator(&gen));
    CHECK(!r.weights.defined());
    CHECK(max_abs_diff(r.output, train.output) < 1e-15);
  }
  // Unset `training` follows the module: training by default, eval() turns dropout off.
  CHECK(max_abs_diff(run(std::nullopt, 1).output, train.output) < 1e-15);
  m.eval();
  CHECK(max_abs_diff(run(std::nullopt, 1).output, eval.output) == 0.0);
  CHECK(max_abs_diff(run(std::nullopt, 2).output, eval.output) == 0.0);
}

TEST_CASE("a fully masked query row gets zero weights and no NaN in outputs or gradients") {
  nn::KerasMultiHeadAttention m(nn::KerasMultiHeadAttentionOptions(2, 3, 4));
  m.to(hg::kFloat64);
  randomize(m, 13);
  const Tensor q = param({1, 3, 4}, 71), v = param({1, 4, 4}, 72);
  // Query 1 may attend to no key.
  const Tensor mask =
      as_bool(hg::from_vector<double>({1, 1, 0, 1, 0, 0, 0, 0, 1, 0, 1, 1}, {1, 3, 4}));
  nn::AttentionOutput r = m.forward(
      q, v, Tensor(),
      nn::KerasAttentionArgs().with_attention_mask(mask).with_return_attention_scores(true));
  for (std::int64_t h = 0; h < 2; ++h)
    for (std::int64_t s = 0; s < 4; ++s) CHECK(r.weights.at({0, h, 1, s}) == 0.0);
  for (std::int64_t e = 0; e < 4; ++e)
    CHECK(r.output.at({0, 1, e}) == m.attention_output_dense->bias.at({e}));
  (r.output * r.output).sum().backward();
  for (const Tensor& t : {r.output, q.grad(), v.grad(), m.query_dense->kernel.grad()})
    for (double x : t.to_vector<double>()) REQUIRE(std::isfinite(x));
  // The output of query 1 does not depend on it.
  for (std::int64_t f = 0; f < 4; ++f) CHECK(q.grad().at({0, 1, f}) == 0.0);
}

TEST_CASE("state_dict uses Keras sublayer names and layouts") {
  nn::KerasMultiHeadAttention m(nn::KerasMultiHeadAttentionOptions(2, 3, 4).with_value_dim(5));
  const nn::StateDict sd = m.state_dict();
  const std::vector<std::string> names = {"query.kernel",
                                          "query.bias",
                                          "key.kernel",
                                          "key.bias",
                                          "value.kernel",
                                          "value.bias",
                                          "attention_output.kernel",
                                          "attention_output.bias"};
  CHECK(sd.keys() == names);
  CHECK(sd.at("value.kernel").shape() == Shape{4, 2, 5});
  CHECK(sd.at("attention_output.kernel").shape() == Shape{2, 5, 4});
  nn::KerasMultiHeadAttention no_bias(
      nn::KerasMultiHeadAttentionOptions(2, 3, 4).with_use_bias(false));
  CHECK(no_bias.state_dict().keys() == std::vector<std::string>{"query.kernel", "key.kernel",
                                                                "value.kernel",
                                                                "attention_output.kernel"});
  CHECK(no_bias.num_parameters() == 3 * 4 * 2 * 3 + 2 * 3 * 4);
  CHECK(m.to_string().find("KerasMultiHeadAttention") != std::string::npos);
}

TEST_CASE("inconvertible configurations throw ValueError naming the failing condition") {
  using Opts = nn::KerasMultiHeadAttentionOptions;
  auto message = [](const Opts& o) {
    nn::KerasMultiHeadAttention m(o);
    CHECK_THROWS_AS(m.to_torch(), hg::ValueError);
    return HG_ERROR_MESSAGE(m.to_torch());
  };
  CHECK(message(Opts(2, 3, 6).with_value_dim(4)).find("key_dim 3 != value_dim 4") !=
        std::string::npos);
  // num_heads * key_dim != query_features converts, with head_size = key_dim
  // (tests/nn/test_head_size.cpp).
  CHECK_NOTHROW(nn::KerasMultiHeadAttention(Opts(2, 4, 6)).to_torch());
  CHECK(message(Opts(2, 3, 6).with_output_shape(5)).find("output_shape 5 != query_features 6") !=
        std::string::npos);
  nn::MultiheadAttention with_bias_kv(nn::MultiheadAttentionOptions(4, 2).with_add_bias_kv(true));
  CHECK_THROWS_AS(nn::KerasMultiHeadAttention::from_torch(with_bias_kv), hg::ValueError);
  nn::MultiheadAttention zero_attn(nn::MultiheadAttentionOptions(4, 2).with_add_zero_attn(true));
  CHECK(
      HG_ERROR_MESSAGE(nn::KerasMultiHeadAttention::from_torch(zero_attn)).find("add_zero_attn") !=
      std::string::npos);
  CHECK_THROWS_AS(nn::KerasMultiHeadAttention(Opts(0, 3, 6)), hg::ValueError);
  CHECK_THROWS_AS(nn::KerasMultiHeadAttention(Opts(2, 3, 0)), hg::ValueError);
  CHECK_THROWS_AS(nn::KerasMultiHeadAttention(Opts(2, 3, 6).with_dropout(1.0)), hg::ValueError);
}

TEST_CASE("bad inputs and masks throw errors naming KerasMultiHeadAttention and the shapes") {
  nn::KerasMultiHeadAttention m(nn::KerasMultiHeadAttentionOptions(2, 3, 4).with_value_features(5));
  const Tensor q = hg::randn({2, 3, 4}), v = hg::randn({2, 6, 5});
  auto has = [](const std::string& msg, const std::string& part) {
    CAPTURE(msg);
    CHECK(msg.find("KerasMultiHeadAttention") != std::string::npos);
    CHECK(msg.find(part) != std::string::npos);
  };
  CHECK_THROWS_AS(m.forward(hg::randn({3, 4}), hg::randn({6, 5})), hg::ShapeError);
  has(HG_ERROR_MESSAGE(m.forward(hg::randn({3, 4}), hg::randn({6, 5}))), "unbatched");
  has(HG_ERROR_MESSAGE(m.forward(q, hg::randn({2, 6, 4}))), "value (2,6,4)");
  has(HG_ERROR_MESSAGE(m.forward(q, hg::randn({3, 6, 5}))), "batch size");
  has(HG_ERROR_MESSAGE(m.forward(q, v, hg::randn({2, 5, 5}))), "source length");
  CHECK_THROWS_AS(m.forward(q.to(hg::kFloat64), v), hg::DTypeError);
  const std::string mask_msg = HG_ERROR_MESSAGE(
      m.forward(q, v, Tensor(), nn::KerasAttentionArgs().with_attention_mask(hg::ones({2, 3, 5}))));
  has(mask_msg, "attention_mask (2,3,5)");
  has(mask_msg, "(2,3,6)");
  CHECK_THROWS_AS(m.forward(q, v, Tensor(),
                            nn::KerasAttentionArgs().with_attention_mask(hg::ones({2, 1, 3, 6}))),
                  hg::ShapeError);
}

TEST_CASE("mask conversion functions convert between the PyTorch and Keras conventions") {
  const Tensor blocked = as_bool(hg::from_vector<double>({1, 0, 0, 1, 1, 0}, {2, 3}));
  const Tensor attend = nn::keras_mask_from_torch(blocked);
  CHECK(attend.dtype() == hg::kBool);
  CHECK(attend.to_vector<double>() == std::vector<double>{0, 1, 1, 0, 0, 1});
  CHECK(nn::torch_mask_from_keras(attend).to_vector<double>() == blocked.to_vector<double>());
  const Tensor numeric = hg::from_vector<double>({0, 2, 1, 0, 0, 0.5}, {2, 3});
  CHECK(nn::torch_mask_from_keras(numeric).to_vector<double>() ==
        std::vector<double>{1, 0, 0, 1, 1, 0});
  CHECK_THROWS_AS(nn::keras_mask_from_torch(hg::zeros({2, 3})), hg::DTypeError);
}
