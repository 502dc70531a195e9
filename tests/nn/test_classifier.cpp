// nn::EncoderClassifier: shapes, names, key padding (a padded example gives the logits of
// the same example without padding, and its padded tokens change nothing), gradients.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "headgrad/nn/classifier.hpp"
#include "helpers.hpp"

namespace hg = headgrad;
namespace nn = headgrad::nn;
using hg::Shape;
using hg::Tensor;
using hg::testing::max_abs_diff;

namespace {

nn::EncoderClassifierOptions tiny(bool per_head = false) {
  nn::EncoderClassifierOptions o;
  o.vocab_size = 9;
  o.max_len = 6;
  o.num_classes = 3;
  o.d_model = 8;
  o.nhead = 2;
  o.dim_feedforward = 16;
  o.per_head = per_head;
  return o;
}

}  // namespace

TEST_CASE("EncoderClassifier maps tokens (B, T) to class logits (B, C)") {
  hg::Generator gen(1);
  nn::EncoderClassifier model(tiny(), &gen);
  Tensor tokens = hg::from_vector<std::int64_t>({1, 2, 3, 4, 5, 6, 7, 8}, {2, 4});
  CHECK(model(tokens).shape() == Shape{2, 3});
  CHECK(model.encode(tokens).shape() == Shape{2, 4, 8});
  const auto keys = model.state_dict().keys();
  CHECK(keys.front() == "token_embedding.weight");
  CHECK(std::count(keys.begin(), keys.end(), "layers.1.norm2.weight") == 1);
  CHECK(std::count(keys.begin(), keys.end(), "norm.weight") == 1);
  CHECK(keys[keys.size() - 2] == "classifier.weight");
  CHECK(model.parameter("classifier.weight").shape() == Shape{3, 8});
}

TEST_CASE("EncoderClassifier ignores padded positions") {
  for (bool per_head : {false, true}) {
    CAPTURE(per_head);
    hg::Generator gen(2);
    nn::EncoderClassifier model(tiny(per_head), &gen);
    // Example 1 has 3 real tokens and 2 of padding.
    Tensor pad = hg::from_vector<bool>({false, false, false, false, false,  //
                                        false, false, false, true, true},
                                       {2, 5});
    Tensor a = hg::from_vector<std::int64_t>({1, 2, 3, 4, 5, 6, 7, 8, 0, 0}, {2, 5});
    Tensor b = hg::from_vector<std::int64_t>({1, 2, 3, 4, 5, 6, 7, 8, 3, 1}, {2, 5});
    Tensor la = model(a, pad);
    CHECK(max_abs_diff(la, model(b, pad)) <= 1e-6);
    // The same example alone, without padding, gives the same logits.
    Tensor alone = model(hg::from_vector<std::int64_t>({6, 7, 8}, {1, 3}));
    CHECK(max_abs_diff(hg::narrow(la, 0, 1, 1), alone) <= 1e-5);
    // Without the mask the padding tokens do count.
    CHECK(max_abs_diff(model(a), model(b)) > 1e-4);
  }
}

TEST_CASE("EncoderClassifier trains every parameter through cross_entropy") {
  hg::Generator gen(3);
  nn::EncoderClassifier model(tiny(), &gen);
  Tensor tokens = hg::from_vector<std::int64_t>({1, 2, 3, 4, 5, 6, 7, 8}, {2, 4});
  Tensor pad =
      hg::from_vector<bool>({false, false, false, false, false, false, true, true}, {2, 4});
  Tensor targets = hg::from_vector<std::int64_t>({0, 2}, {2});
  hg::cross_entropy(model(tokens, pad), targets).backward();
  for (const auto& [name, p] : model.named_parameters()) {
    CAPTURE(name);
    REQUIRE(p.grad().defined());
    if (name == "token_embedding.weight" || name == "position_embedding.weight") continue;
    CHECK(max_abs_diff(p.grad(), hg::zeros_like(p.grad())) > 0.0);
  }
  // Padded positions and tokens never used get no embedding gradient.
  CHECK(model.token_embedding->weight.grad().at({7, 0}) == 0.0);  // only at a padded position
  CHECK(model.token_embedding->weight.grad().at({0, 0}) == 0.0);  // never used
  CHECK(model.token_embedding->weight.grad().at({1, 0}) != 0.0);
}
