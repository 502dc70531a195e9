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
