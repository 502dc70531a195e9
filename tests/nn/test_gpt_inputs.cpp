// Transformer layers and GPT with a head size apart from d_model / nhead (head_dim), and
// GPT on continuous inputs (input_dim), bidirectional (causal false) and without
// positions: shapes, parameter counts (by hand), permutation equivariance, dependence,
// gradcheck in float64 and errors.
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "headgrad/headgrad.hpp"
#include "headgrad/nn/attention_head.hpp"
#include "headgrad/nn/gpt.hpp"
#include "helpers.hpp"

namespace hg = headgrad;
namespace nn = headgrad::nn;
using hg::Shape;
using hg::Tensor;
using hg::testing::check_gradcheck;
using hg::testing::max_abs_diff;
using hg::testing::param;

namespace {

// d_model 10 is not divisible by nhead 4; heads of 3 give I = 12.
nn::GPTOptions sized_heads(bool per_head = false) {
  nn::GPTOptions o;
  o.vocab_size = 7;
  o.max_len = 6;
  o.d_model = 10;
  o.nhead = 4;
  o.head_dim = 3;
  o.num_layers = 2;
  o.dim_feedforward = 12;
  o.per_head = per_head;
  return o;
}

Tensor tokens_of(const std::vector<std::int64_t>& ids, std::int64_t batch) {
  return hg::from_vector<std::int64_t>(ids, {batch, static_cast<std::int64_t>(ids.size()) / batch});
}

const nn::MultiheadAttentionOptions& attention_options(const nn::AttentionLayer& layer) {
  return layer.options();
}

}  // namespace

TEST_CASE("transformer layers pass head_dim to their attention as head_size") {
  const auto options =
      nn::TransformerLayerOptions(10, 4).with_head_dim(3).with_dim_feedforward(16).with_dropout(0);
  CHECK(options.attention_options().head_size == 3);
  CHECK(options.attention_options().inner_dim() == 12);
  CHECK(nn::TransformerLayerOptions(8, 2).attention_options().head_size == 0);

  hg::Generator gen(1);
  nn::TransformerEncoderLayer encoder(options, &gen);
  CHECK(encoder.parameter("self_attn.in_proj_weight").shape() == Shape{36, 10});
  CHECK(encoder.parameter("self_attn.out_proj.weight").shape() == Shape{10, 12});
  CHECK(encoder.to_string().find("head_dim=3") != std::string::npos);
  CHECK(encoder(hg::randn({5, 2, 10})).shape() == Shape{5, 2, 10});

  nn::TransformerDecoderLayer decoder(options, &gen);
  CHECK(attention_options(*decoder.self_attn).head_size == 3);
  CHECK(attention_options(*decoder.multihead_attn).head_size == 3);
  CHECK(decoder.parameter("multihead_attn.out_proj.weight").shape() == Shape{10, 12});
  CHECK(decoder(hg::randn({3, 2, 10}), hg::randn({5, 2, 10})).shape() == Shape{3, 2, 10});

  // The per-head layer from the same generator computes the same function.
  hg::Generator g1(2), g2(2);
  nn::TransformerEncoderLayer fused(options, &g1);
  nn::TransformerEncoderLayer heads(nn::TransformerLayerOptions(options).with_per_head(true), &g2);
  CHECK(heads.parameter("self_attn.heads.3.q_proj.weight").shape() == Shape{3, 10});
  const Tensor x = hg::randn({4, 2, 10});
  CHECK(max_abs_diff(fused(x), heads(x)) <= 1e-5);
}

TEST_CASE("transformer layers validate head_dim with the layer's name and the values") {
  const std::string negative = HG_ERROR_MESSAGE(
      nn::TransformerEncoderLayer(nn::TransformerLayerOptions(10, 4).with_head_dim(-3)));
  CHECK(negative.find("TransformerEncoderLayer: head_dim must be positive") != std::string::npos);
  CHECK(negative.find("-3") != std::string::npos);
  const std::string indivisible =
      HG_ERROR_MESSAGE(nn::TransformerDecoderLayer(nn::TransformerLayerOptions(10, 4)));
  CHECK(indivisible.find("d_model 10 is not divisible by nhead 4") != std::string::npos);
  CHECK(indivisible.find("head_dim") != std::string::npos);
}

TEST_CASE("GPT with head_dim has attention of nhead * head_dim features") {
  hg::Generator gen(3);
  nn::GPT gpt(sized_heads(), &gen);
  CHECK(gpt(tokens_of({1, 2, 3, 4, 5, 6, 0, 1}, 2)).shape() == Shape{2, 4, 7});
  CHECK(gpt.parameter("layers.0.self_attn.in_proj_weight").shape() == Shape{36, 10});
  CHECK(gpt.parameter("layers.1.self_attn.out_proj.weight").shape() == Shape{10, 12});
  // V D + T D + layers * (attention 3 I D + 3 I + D I + D, ff 2 D F + F + D, norms 4 D)
  // + final norm 2 D + lm_head V D.
  const std::int64_t v = 7, t = 6, d = 10, i = 12, f = 12;
  const std::int64_t layer = 3 * i * d + 3 * i + d * i + d + 2 * d * f + f + d + 4 * d;
  CHECK(gpt.num_parameters() == v * d + t * d + 2 * layer + 2 * d + v * d);
  CHECK(gpt.to_string().find("head_dim=3") != std::string::npos);
  nn::GPTOptions plain = sized_heads();
  plain.d_model = 8;
  plain.head_dim = 0;
  CHECK(nn::GPT(plain).to_string().find("head_dim") == std::string::npos);

  // The per-head variant from the same generator gives the same logits.
  hg::Generator g1(4), g2(4);
  nn::GPT fused(sized_heads(false), &g1);
  nn::GPT heads(sized_heads(true), &g2);
  const Tensor tokens = tokens_of({1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5}, 2);
  CHECK(max_abs_diff(fused(tokens), heads(tokens)) <= 1e-5);

  // Still causal: changing the last tokens leaves the earlier logits alone.
  const Tensor changed = tokens_of({1, 2, 3, 4, 0, 0, 0, 1, 2, 3, 6, 6}, 2);
  CHECK(max_abs_diff(hg::narrow(fused(tokens), 1, 0, 4), hg::narrow(fused(changed), 1, 0, 4)) <=
        1e-6);
}

namespace {

// A small GPT on continuous inputs of 3 features with 2 outputs (a regression head).
nn::GPTOptions continuous(bool causal, bool positions) {
  nn::GPTOptions o;
  o.vocab_size = 2;
  o.max_len = 6;
  o.d_model = 8;
  o.nhead = 2;
  o.num_layers = 2;
  o.dim_feedforward = 12;
  o.input_dim = 3;
  o.causal = causal;
  o.positions = positions;
  return o;
}

// x (B, T, ...) with its positions reordered: result[:, t] = x[:, order[t]].
Tensor reorder(const Tensor& x, const std::vector<std::int64_t>& order) {
  return hg::index_select(x, 1, hg::from_vector<std::int64_t>(order, {std::int64_t(order.size())}));
}

// GPT's documented composition, written out from its submodules.
Tensor composed(const nn::GPT& gpt, const Tensor& embedded, bool causal) {
  Tensor x = embedded;
  for (const auto& layer : *gpt.layers) x = layer->forward(x, Tensor(), Tensor(), causal);
  if (gpt.norm) x = gpt.norm->forward(x);
  return gpt.lm_head->forward(x);
}

}  // namespace

TEST_CASE("GPT on continuous inputs projects (B, T, F) instead of embedding tokens") {
  hg::Generator gen(5);
  nn::GPT gpt(continuous(true, true), &gen);
  CHECK(gpt.token_embedding == nullptr);
  REQUIRE(gpt.input_projection != nullptr);
  const auto keys = gpt.state_dict().keys();
  CHECK(keys[0] == "input_projection.weight");
  CHECK(keys[1] == "input_projection.bias");
  CHECK(keys[2] == "position_embedding.weight");
  CHECK(keys[3] == "layers.0.self_attn.in_proj_weight");
  CHECK(keys.back() == "lm_head.weight");
  CHECK(gpt.parameter("input_projection.weight").shape() == Shape{8, 3});
  CHECK(gpt.parameter("input_projection.bias").shape() == Shape{8});
  CHECK(gpt.parameter("lm_head.weight").shape() == Shape{2, 8});
  // F D + D + T D + layers * (attention 4 D^2 + 4 D, ff 2 D F' + F' + D, norms 4 D)
  // + final norm 2 D + lm_head V D.
  const std::int64_t f = 3, d = 8, t = 6, ff = 12, v = 2;
  const std::int64_t layer = 4 * d * d + 4 * d + 2 * d * ff + ff + d + 4 * d;
  CHECK(gpt.num_parameters() == f * d + d + t * d + 2 * layer + 2 * d + v * d);
  CHECK(gpt.to_string().find("input_dim=3") != std::string::npos);

  const Tensor x = hg::randn({2, 5, 3});
  CHECK(gpt(x).shape() == Shape{2, 5, 2});
  // The forward is the documented composition.
  const Tensor positions = hg::arange(5.0, hg::TensorOptions(hg::kInt64));
  const Tensor embedded =
      hg::add(gpt.input_projection->forward(x), gpt.position_embedding->forward(positions));
  CHECK(max_abs_diff(gpt(x), composed(gpt, embedded, true)) == 0.0);

  // Without positions there is no position table, and max_len may be 0.
  nn::GPTOptions free = continuous(false, false);
  free.max_len = 0;
  nn::GPT unordered(free, &gen);
  CHECK(unordered.position_embedding == nullptr);
  CHECK(unordered.state_dict().keys().size() == keys.size() - 1);
  CHECK(unordered.to_string().find("causal=False, positions=False") != std::string::npos);
  CHECK(max_abs_diff(unordered(x),
                     composed(unordered, unordered.input_projection->forward(x), false)) == 0.0);
}

TEST_CASE("GPT with default options keeps token ids, positions and the causal mask") {
  nn::GPTOptions o;
  o.vocab_size = 7;
  o.max_len = 6;
  o.d_model = 8;
  o.nhead = 2;
  o.dim_feedforward = 12;
  CHECK(o.input_dim == 0);
  CHECK(o.causal);
  CHECK(o.positions);
  CHECK(o.head_dim == 0);
  hg::Generator gen(6);
  nn::GPT gpt(o, &gen);
  CHECK(gpt.input_projection == nullptr);
  CHECK(gpt.state_dict().keys().front() == "token_embedding.weight");
  const Tensor tokens = tokens_of({1, 2, 3, 4, 5, 6, 0, 1}, 2);
  const Tensor positions = hg::arange(4.0, hg::TensorOptions(hg::kInt64));
  const Tensor embedded =
      hg::add(gpt.token_embedding->forward(tokens), gpt.position_embedding->forward(positions));
  CHECK(max_abs_diff(gpt(tokens), composed(gpt, embedded, true)) == 0.0);
  CHECK(gpt.to_string().find("vocab_size=7, max_len=6, d_model=8, nhead=2, num_layers=2") !=
        std::string::npos);
}

TEST_CASE("GPT without positions and mask is permutation-equivariant over positions") {
  const std::vector<std::int64_t> order{3, 0, 4, 1, 2};
  hg::Generator gen(7);
  nn::GPT gpt(continuous(false, false), &gen);
  gpt.to(hg::kFloat64);
  const Tensor x = param({2, 5, 3}, 8);
  Tensor padding = hg::zeros({2, 5}, hg::kBool);
  padding.set_at({1, 2}, 1);
  const Tensor out = gpt(x, padding);
  CHECK(max_abs_diff(gpt(reorder(x, order), reorder(padding, order)), reorder(out, order)) < 1e-12);
  CHECK(max_abs_diff(hg::narrow(out, 0, 0, 1), hg::narrow(out, 0, 1, 1)) > 1e-6);

  // On token ids too.
  nn::GPTOptions ids = continuous(false, false);
  ids.input_dim = 0;
  ids.vocab_size = 7;
  nn::GPT token_gpt(ids, &gen);
  token_gpt.to(hg::kFloat64);
  const Tensor tokens = tokens_of({1, 2, 3, 4, 5, 6, 0, 1, 2, 3}, 2);
  CHECK(max_abs_diff(token_gpt(reorder(tokens, order)), reorder(token_gpt(tokens), order)) < 1e-12);

  // Either positions or the causal mask breaks the symmetry.
  for (const auto& [causal, positions] : {std::pair{false, true}, std::pair{true, false}}) {
    CAPTURE(causal);
    nn::GPT ordered(continuous(causal, positions), &gen);
    ordered.to(hg::kFloat64);
    CHECK(max_abs_diff(ordered(reorder(x, order)), reorder(ordered(x), order)) > 1e-6);
  }
}

TEST_CASE("GPT with causal false lets position 0 depend on the last input") {
  for (bool causal : {true, false}) {
    CAPTURE(causal);
    hg::Generator gen(9);
    nn::GPT gpt(continuous(causal, true), &gen);
    gpt.to(hg::kFloat64);
    const Tensor x = param({2, 4, 3}, 10);
    hg::narrow(gpt(x), 1, 0, 1).sum().backward();  // d(outputs at position 0) / dx
    const Tensor last = hg::narrow(x.grad(), 1, 3, 1);
    const double dependence = max_abs_diff(last, hg::zeros_like(last));
    if (causal)
      CHECK(dependence == 0.0);
    else
      CHECK(dependence > 1e-6);
    // Position 0 always depends on itself.
    const Tensor first = hg::narrow(x.grad(), 1, 0, 1);
    CHECK(max_abs_diff(first, hg::zeros_like(first)) > 1e-6);
  }
}

TEST_CASE("GPT on continuous inputs passes gradcheck through the input projection") {
  for (const auto& [causal, positions] : {std::pair{false, true}, std::pair{true, false}}) {
    CAPTURE(causal);
    nn::GPTOptions o = continuous(causal, positions);
    o.num_layers = 1;
    hg::Generator gen(11);
    nn::GPT gpt(o, &gen);
    gpt.to(hg::kFloat64);
    Tensor padding = hg::zeros({2, 4}, hg::kBool);
    padding.set_at({0, 3}, 1);
    std::vector<Tensor> inputs{param({2, 4, 3}, 12)};
    for (auto& p : gpt.parameters()) inputs.push_back(p);
    check_gradcheck([&](const std::vector<Tensor>& in) { return gpt(in[0], padding); }, inputs);
  }
}

TEST_CASE("GPT rejects inputs that do not match input_dim with GPT and the shapes") {
  nn::GPT gpt(continuous(true, true));
  const std::string ids = HG_ERROR_MESSAGE(gpt(hg::zeros({2, 4}, hg::kInt64)));
  CHECK_THROWS_AS(gpt(hg::zeros({2, 4}, hg::kInt64)), hg::ValueError);
  CHECK(ids.find("GPT: input") != std::string::npos);
  CHECK(ids.find("must be floating (batch, length, input_dim) = (B, T, 3)") != std::string::npos);
  CHECK(ids.find("int64") != std::string::npos);
  const std::string width = HG_ERROR_MESSAGE(gpt(hg::zeros({2, 4, 5})));
  CHECK_THROWS_AS(gpt(hg::zeros({2, 4, 5})), hg::ShapeError);
  CHECK(width.find("GPT: input") != std::string::npos);
  CHECK(width.find("4,5") != std::string::npos);
  CHECK(width.find("(B, T, 3)") != std::string::npos);
  CHECK_THROWS_AS(gpt(hg::zeros({4, 3})), hg::ShapeError);
  CHECK(HG_ERROR_MESSAGE(gpt(hg::zeros({1, 7, 3}))).find("longer than max_len 6") !=
        std::string::npos);
  CHECK_THROWS_AS(gpt(hg::zeros({1, 4, 3}, hg::kFloat64)), hg::DTypeError);
  CHECK(HG_ERROR_MESSAGE(gpt(Tensor())).find("GPT") != std::string::npos);

  nn::GPTOptions ids_options = continuous(true, true);
  ids_options.input_dim = 0;
  ids_options.vocab_size = 7;
  nn::GPT token_gpt(ids_options);
  const std::string floats = HG_ERROR_MESSAGE(token_gpt(hg::zeros({2, 4, 3})));
  CHECK(floats.find("GPT: tokens") != std::string::npos);
  CHECK(floats.find("must be int64") != std::string::npos);
  CHECK(floats.find("input_dim") != std::string::npos);

  nn::GPTOptions negative = continuous(true, true);
  negative.input_dim = -1;
  CHECK(HG_ERROR_MESSAGE(nn::GPT(negative)).find("GPT: input_dim must be >= 0") !=
        std::string::npos);
  nn::GPTOptions no_table = continuous(true, true);
  no_table.max_len = 0;
  CHECK(HG_ERROR_MESSAGE(nn::GPT(no_table)).find("GPT: vocab_size and max_len") !=
        std::string::npos);
}
