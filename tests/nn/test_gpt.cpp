// nn::GPT: shapes, parameter names and count (counted by hand), causality (a later token
// never changes an earlier logit), gradcheck in float64, the per-head variant, dropout and
// errors.
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "headgrad/nn/attention_head.hpp"
#include "headgrad/nn/gpt.hpp"
#include "helpers.hpp"

namespace hg = headgrad;
namespace nn = headgrad::nn;
using hg::Shape;
using hg::Tensor;
using hg::testing::check_gradcheck;
using hg::testing::max_abs_diff;

namespace {

nn::GPTOptions tiny(bool per_head = false) {
  nn::GPTOptions o;
  o.vocab_size = 7;
  o.max_len = 6;
  o.d_model = 8;
  o.nhead = 2;
  o.num_layers = 2;
  o.dim_feedforward = 12;
  o.per_head = per_head;
  return o;
}

Tensor tokens_of(const std::vector<std::int64_t>& ids, std::int64_t batch) {
  return hg::from_vector<std::int64_t>(ids, {batch, static_cast<std::int64_t>(ids.size()) / batch});
}

}  // namespace

TEST_CASE("GPT maps tokens (B, T) to logits (B, T, V) with the documented parameters") {
  hg::Generator gen(1);
  nn::GPT gpt(tiny(), &gen);
  Tensor logits = gpt(tokens_of({1, 2, 3, 4, 5, 6, 0, 1}, 2));
  CHECK(logits.shape() == Shape{2, 4, 7});

  const auto keys = gpt.state_dict().keys();
  CHECK(keys.front() == "token_embedding.weight");
  CHECK(keys[1] == "position_embedding.weight");
  CHECK(keys[2] == "layers.0.self_attn.in_proj_weight");
  CHECK(keys[keys.size() - 3] == "norm.weight");
  CHECK(keys[keys.size() - 2] == "norm.bias");
  CHECK(keys.back() == "lm_head.weight");
  CHECK(gpt.parameter("lm_head.weight").shape() == Shape{7, 8});
  CHECK(gpt.parameter("position_embedding.weight").shape() == Shape{6, 8});
  // V D + T D + layers * (attention 4 D^2 + 4 D, ff 2 D F + F + D, two norms 4 D)
  // + final norm 2 D + lm_head V D.
  const std::int64_t v = 7, t = 6, d = 8, f = 12;
  const std::int64_t layer = 4 * d * d + 4 * d + 2 * d * f + f + d + 4 * d;
  CHECK(gpt.num_parameters() == v * d + t * d + 2 * layer + 2 * d + v * d);
  const std::string description = gpt.to_string();
  CHECK(description.find("TransformerEncoderLayer") != std::string::npos);
  CHECK(description.find("vocab_size=7") != std::string::npos);
  // The lm_head is its own parameter, not the token embedding.
  CHECK(gpt.lm_head->weight.impl() != gpt.token_embedding->weight.impl());

  nn::GPTOptions post = tiny();
  post.norm_first = false;
  nn::GPT post_norm(post, &gen);
  CHECK(post_norm.norm == nullptr);
  CHECK(post_norm.state_dict().keys().size() == keys.size() - 2);
}

TEST_CASE("GPT logits at a position do not depend on later tokens") {
  hg::Generator gen(2);
  for (bool per_head : {false, true}) {
    CAPTURE(per_head);
    nn::GPT gpt(tiny(per_head), &gen);
    Tensor a = tokens_of({1, 2, 3, 4, 5, 6, 3, 2, 1, 0, 6, 5}, 2);
    Tensor b = tokens_of({1, 2, 3, 0, 0, 0, 3, 2, 1, 6, 6, 6}, 2);  // from position 3 on
    Tensor la = gpt(a), lb = gpt(b);
    CHECK(max_abs_diff(hg::narrow(la, 1, 0, 3), hg::narrow(lb, 1, 0, 3)) <= 1e-6);
    for (std::int64_t t = 3; t < 6; ++t)
      CHECK(max_abs_diff(hg::narrow(la, 1, t, 1), hg::narrow(lb, 1, t, 1)) > 1e-3);
    // The same holds with trailing key padding over the changed positions.
    Tensor pad = hg::from_vector<bool>({false, false, false, true, true, true,  //
                                        false, false, false, false, true, true},
                                       {2, 6});
    Tensor pa = gpt(a, pad), pb = gpt(b, pad);
    CHECK(max_abs_diff(hg::narrow(pa, 1, 0, 3), hg::narrow(pb, 1, 0, 3)) <= 1e-6);
    CHECK(max_abs_diff(hg::narrow(pa, 1, 0, 3), hg::narrow(la, 1, 0, 3)) <= 1e-6);
  }
}

TEST_CASE("GPT's gradient with respect to its parameters passes gradcheck in float64") {
  nn::GPTOptions o = tiny();
  o.num_layers = 1;
  o.max_len = 4;
  hg::Generator gen(3);
  nn::GPT gpt(o, &gen);
  gpt.to(hg::kFloat64);
  auto& attn = dynamic_cast<nn::MultiheadAttention&>(*(*gpt.layers)[0]->self_attn);
  Tensor* slots[] = {&gpt.token_embedding->weight, &attn.in_proj_weight,
                     &(*gpt.layers)[0]->linear1->weight, &gpt.norm->weight, &gpt.lm_head->weight};
  std::vector<Tensor> inputs;
  for (Tensor* s : slots) inputs.push_back(s->detach().clone().requires_grad_(true));
  Tensor tokens = tokens_of({1, 2, 3, 4, 6, 5, 1, 0}, 2);
  // The module reads its parameters through these handles: point them at gradcheck's leaves.
  check_gradcheck(
      [&](const std::vector<Tensor>& in) {
        std::vector<Tensor> saved;
        for (std::size_t i = 0; i < in.size(); ++i) saved.push_back(*slots[i]), *slots[i] = in[i];
        Tensor logits = gpt(tokens);
        for (std::size_t i = 0; i < in.size(); ++i) *slots[i] = saved[i];
        return logits;
      },
      inputs);
}

TEST_CASE("a per-head GPT from the same generator gives the fused GPT's logits") {
  hg::Generator g1(4), g2(4);
  nn::GPT fused(tiny(false), &g1);
  nn::GPT heads(tiny(true), &g2);
  CHECK(heads.parameter("layers.1.self_attn.heads.0.q_proj.weight").shape() == Shape{4, 8});
  Tensor tokens = tokens_of({1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5}, 2);
  CHECK(max_abs_diff(fused(tokens), heads(tokens)) <= 1e-5);
  // Every head is reachable for inspection.
  auto layer0 =
      std::dynamic_pointer_cast<nn::HeadwiseMultiheadAttention>((*heads.layers)[0]->self_attn);
  REQUIRE(layer0);
  CHECK(layer0->heads->size() == 2);
}

TEST_CASE("GPT dropout is active in training mode only") {
  nn::GPTOptions o = tiny();
  o.dropout = 0.2;
  nn::GPT gpt(o);
  Tensor tokens = tokens_of({1, 2, 3, 4, 5, 6}, 1);
  hg::Generator d1(9), d2(9);
  gpt.set_dropout_generator(&d1);
  Tensor a = gpt(tokens);
  gpt.set_dropout_generator(&d2);
  CHECK(max_abs_diff(a, gpt(tokens)) == 0.0);
  CHECK(max_abs_diff(a, gpt(tokens)) > 1e-4);
  gpt.eval();
  CHECK(max_abs_diff(gpt(tokens), gpt(tokens)) == 0.0);
}

TEST_CASE("GPT refuses sequences longer than max_len and non-integer tokens") {
  nn::GPT gpt(tiny());
  CHECK(HG_ERROR_MESSAGE(gpt(hg::zeros({1, 7}, hg::kInt64))).find("GPT: tokens") !=
        std::string::npos);
  CHECK(HG_ERROR_MESSAGE(gpt(hg::zeros({1, 3}))).find("must be int64") != std::string::npos);
  nn::GPTOptions bad = tiny();
  bad.vocab_size = 0;
  CHECK(HG_ERROR_MESSAGE(nn::GPT(bad)).find("GPT: vocab_size") != std::string::npos);
}
