// FeatureEmbedding, CrossAttentionFusion and FusionClassifier: the feature tokens against
// their formula, the fusion block against an independent composition of its attention
// layers, gradcheck, and the classifier in its three modes (shapes, which parts exist,
// which inputs matter, text padding).
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "headgrad/nn/attention_head.hpp"
#include "headgrad/nn/fusion.hpp"
#include "helpers.hpp"

namespace hg = headgrad;
namespace nn = headgrad::nn;
using hg::Shape;
using hg::Tensor;
using hg::testing::check_gradcheck;
using hg::testing::max_abs_diff;
using Mode = nn::FusionClassifierOptions::Mode;

namespace {

nn::FusionClassifierOptions tiny(Mode mode, bool per_head = false) {
  nn::FusionClassifierOptions o;
  o.vocab_size = 9;
  o.max_len = 6;
  o.num_features = 3;
  o.num_classes = 4;
  o.mode = mode;
  o.d_model = 8;
  o.nhead = 2;
  o.dim_feedforward = 16;
  o.per_head = per_head;
  return o;
}

bool has_prefix(const nn::Module& m, const std::string& prefix) {
  for (const auto& k : m.state_dict().keys())
    if (k.rfind(prefix, 0) == 0) return true;
  return false;
}

}  // namespace

TEST_CASE("FeatureEmbedding turns each feature value into a token value * weight + bias") {
  hg::Generator gen(1);
  nn::FeatureEmbedding emb(3, 4, &gen);
  CHECK(emb.state_dict().keys() == std::vector<std::string>{"weight", "bias"});
  Tensor features = hg::from_vector<float>({0.5f, -2.0f, 0.0f, 1.0f, 3.0f, -1.0f}, {2, 3});
  Tensor tokens = emb(features);
  REQUIRE(tokens.shape() == Shape{2, 3, 4});
  for (std::int64_t b = 0; b < 2; ++b)
    for (std::int64_t f = 0; f < 3; ++f)
      for (std::int64_t j = 0; j < 4; ++j)
        CHECK(tokens.at({b, f, j}) ==
              doctest::Approx(features.at({b, f}) * emb.weight.at({f, j}) + emb.bias.at({f, j})));
  CHECK(HG_ERROR_MESSAGE(emb(hg::zeros({2, 4}))).find("FeatureEmbedding: features") !=
        std::string::npos);
}

TEST_CASE("CrossAttentionFusion lets text attend to the features and the features to the text") {
  hg::Generator gen(2);
  nn::CrossAttentionFusionOptions o;
  o.d_model = 8;
  o.nhead = 2;
  nn::CrossAttentionFusion fusion(o, &gen);
  Tensor text = hg::randn({2, 5, 8}, {}, &gen);
  Tensor tabular = hg::randn({2, 3, 8}, {}, &gen);
  Tensor pad = hg::from_vector<bool>({false, false, false, false, false,  //
                                      false, false, false, true, true},
                                     {2, 5});
  nn::FusionOutput out = fusion(text, pad, tabular);
  CHECK(out.fused.shape() == Shape{2, 8});
  CHECK(out.text.shape() == Shape{2, 5, 8});
  CHECK(out.tabular.shape() == Shape{2, 3, 8});

  // By hand: each direction through its attention layer (a mask over the text keys only in
  // the tabular -> text direction), residual and norm; then both pooled, concatenated, fused.
  nn::MultiheadAttentionArgs no_weights;
  no_weights.need_weights = false;
  Tensor t = (*fusion.text_norm)(
      text + (*fusion.text_to_tabular)(text, tabular, tabular, no_weights).output);
  nn::MultiheadAttentionArgs masked = no_weights;
  masked.key_padding_mask = pad;
  Tensor f = (*fusion.tabular_norm)(tabular +
                                    (*fusion.tabular_to_text)(tabular, text, text, masked).output);
  // Masked mean of t: example 0 over 5 positions, example 1 over its first 3.
  Tensor t0 = hg::mean(hg::narrow(hg::narrow(t, 0, 0, 1), 1, 0, 5), {1});
  Tensor t1 = hg::mean(hg::narrow(hg::narrow(t, 0, 1, 1), 1, 0, 3), {1});
  Tensor pooled = hg::concat({hg::concat({t0, t1}, 0), hg::mean(f, {1})}, 1);
  Tensor want = hg::gelu(hg::linear(pooled, fusion.fuse->weight, fusion.fuse->bias));
  CHECK(max_abs_diff(out.fused, want) <= 1e-5);
  CHECK(max_abs_diff(out.text, t) <= 1e-6);
  CHECK(max_abs_diff(out.tabular, f) <= 1e-6);

  CHECK(fusion.state_dict().keys().front() == "text_to_tabular.in_proj_weight");
  CHECK(fusion.parameter("fuse.weight").shape() == Shape{8, 16});
}

TEST_CASE("CrossAttentionFusion's gradient with respect to both inputs passes gradcheck") {
  for (bool per_head : {false, true}) {
    CAPTURE(per_head);
    hg::Generator gen(3);
    nn::CrossAttentionFusionOptions o;
    o.d_model = 4;
    o.nhead = 2;
    o.per_head = per_head;
    nn::CrossAttentionFusion fusion(o, &gen);
    fusion.to(hg::kFloat64);
    Tensor pad = hg::from_vector<bool>({false, false, false, false, false, true}, {2, 3});
    check_gradcheck([&](const std::vector<Tensor>& in) { return fusion(in[0], pad, in[1]).fused; },
                    {hg::testing::param({2, 3, 4}, 1), hg::testing::param({2, 2, 4}, 2)});
  }
}

TEST_CASE("FusionClassifier runs in all three modes with only the parts each mode uses") {
  Tensor tokens = hg::from_vector<std::int64_t>({1, 2, 3, 4, 5, 6, 7, 8}, {2, 4});
  Tensor pad =
      hg::from_vector<bool>({false, false, false, false, false, false, true, true}, {2, 4});
  Tensor features = hg::from_vector<float>({0.5f, -1.0f, 2.0f, 0.0f, 1.0f, -0.5f}, {2, 3});
  for (Mode mode : {Mode::fusion, Mode::text_only, Mode::tabular_only}) {
    CAPTURE(nn::fusion_mode_name(mode));
    CHECK(nn::fusion_mode_from_string(nn::fusion_mode_name(mode)) == mode);
    hg::Generator gen(4);
    nn::FusionClassifier model(tiny(mode), &gen);
    CHECK(model(tokens, pad, features).shape() == Shape{2, 4});
    const bool text = mode != Mode::tabular_only, tabular = mode != Mode::text_only;
    CHECK(has_prefix(model, "token_embedding.") == text);
    CHECK(has_prefix(model, "text_encoder.layers.1.") == text);
    CHECK(has_prefix(model, "feature_embedding.") == tabular);
    CHECK(has_prefix(model, "tabular_encoder.layers.0.") == tabular);
    CHECK(has_prefix(model, "fusion.") == (mode == Mode::fusion));
    CHECK(model.parameter("classifier.weight").shape() == Shape{4, 8});

    // Which inputs matter.
    Tensor other_features = hg::from_vector<float>({3.0f, 1.0f, -2.0f, 1.0f, 0.0f, 2.5f}, {2, 3});
    Tensor other_tokens = hg::from_vector<std::int64_t>({8, 7, 6, 5, 4, 3, 2, 1}, {2, 4});
    const Tensor base = model(tokens, pad, features);
    CHECK((max_abs_diff(base, model(tokens, pad, other_features)) > 1e-4) == tabular);
    CHECK((max_abs_diff(base, model(other_tokens, pad, features)) > 1e-4) == text);
    if (mode == Mode::text_only) CHECK(model(tokens, pad, Tensor()).shape() == Shape{2, 4});
    if (mode == Mode::tabular_only)
      CHECK(model(Tensor(), Tensor(), features).shape() == Shape{2, 4});
  }
  CHECK(HG_ERROR_MESSAGE(nn::fusion_mode_from_string("both")).find("unknown mode 'both'") !=
        std::string::npos);
}

TEST_CASE("FusionClassifier ignores padded text positions and builds per-head attention") {
  hg::Generator gen(5);
  nn::FusionClassifier model(tiny(Mode::fusion, true), &gen);
  CHECK(std::dynamic_pointer_cast<nn::HeadwiseMultiheadAttention>(model.fusion->tabular_to_text) !=
        nullptr);
  CHECK(has_prefix(model, "text_encoder.layers.0.self_attn.heads.1.q_proj."));
  Tensor pad =
      hg::from_vector<bool>({false, false, false, false, false, false, true, true}, {2, 4});
  Tensor features = hg::from_vector<float>({0.5f, -1.0f, 2.0f, 0.0f, 1.0f, -0.5f}, {2, 3});
  Tensor a = hg::from_vector<std::int64_t>({1, 2, 3, 4, 5, 6, 0, 0}, {2, 4});
  Tensor b = hg::from_vector<std::int64_t>({1, 2, 3, 4, 5, 6, 7, 8}, {2, 4});
  CHECK(max_abs_diff(model(a, pad, features), model(b, pad, features)) <= 1e-6);
  CHECK(max_abs_diff(model(a, Tensor(), features), model(b, Tensor(), features)) > 1e-4);
}
