// nn::GPTEnsemble: each member's logits and gradients are bitwise its own GPT's (token and
// float inputs, padding, head_dim, bidirectional), members come out as ordinary GPTs,
// keep() drops and reorders members, and bad members or inputs are refused with errors
// that say what to do.
#include <doctest/doctest.h>

#include <memory>
#include <vector>

#include "headgrad/headgrad.hpp"

using namespace headgrad;

namespace {

std::vector<std::shared_ptr<nn::GPT>> gpts(const nn::GPTOptions& o, int count) {
  std::vector<std::shared_ptr<nn::GPT>> out;
  for (int k = 0; k < count; ++k) {
    Generator init(50 + static_cast<std::uint64_t>(k));
    out.push_back(std::make_shared<nn::GPT>(o, &init));
  }
  return out;
}

std::vector<const nn::GPT*> pointers(const std::vector<std::shared_ptr<nn::GPT>>& models) {
  std::vector<const nn::GPT*> out;
  for (const auto& m : models) out.push_back(m.get());
  return out;
}

std::vector<float> values(const Tensor& t) { return t.to(kFloat32).to_vector<float>(); }

// The ensemble's logits and gradients (under a fixed random weighting of the logits)
// against each member GPT's own, bitwise.
void check_members_alone(const nn::GPTOptions& o, const Tensor& input, const Tensor& padding) {
  const auto models = gpts(o, 3);
  nn::GPTEnsemble ensemble(pointers(models));
  const Tensor logits = ensemble(input, padding);
  Generator gen(9);
  const Tensor weights = randn(logits.shape(), kFloat32, &gen);
  sum(mul(logits, weights)).backward();
  for (std::int64_t k = 0; k < 3; ++k) {
    CAPTURE(k);
    nn::GPT& model = *models[static_cast<std::size_t>(k)];
    const Tensor alone =
        model(select(input, 0, k), padding.defined() ? select(padding, 0, k) : Tensor());
    sum(mul(alone, select(weights, 0, k))).backward();
    CHECK(values(select(logits, 0, k)) == values(alone));
    for (const auto& [name, p] : model.named_parameters()) {
      CAPTURE(name);
      CHECK(values(select(ensemble.parameter(name).grad(), 0, k)) == values(p.grad()));
    }
  }
}

nn::GPTOptions small() {
  nn::GPTOptions o;
  o.vocab_size = 11;
  o.max_len = 9;
  o.d_model = 16;
  o.nhead = 4;
  o.num_layers = 2;
  return o;
}

}  // namespace

TEST_CASE("an ensemble's members compute bitwise what their GPTs compute, with padding") {
  Generator gen(3);
  const Tensor tokens = randint(0, 11, {3, 4, 7}, TensorOptions(kInt64), &gen);
  std::vector<bool> pad(3 * 4 * 7, false);
  for (std::size_t i = 5; i < pad.size(); i += 7) pad[i] = pad[i + 1] = true;
  check_members_alone(small(), tokens, from_vector(pad, {3, 4, 7}));
}

TEST_CASE("an ensemble's members match their GPTs with head_dim, relu and float inputs") {
  nn::GPTOptions o = small();
  o.head_dim = 3;
  o.activation = nn::Activation::relu;
  o.input_dim = 5;
  o.causal = false;
  o.positions = false;
  Generator gen(4);
  check_members_alone(o, randn({3, 2, 6, 5}, kFloat32, &gen), Tensor());
}

TEST_CASE("an ensemble's parameters are its members' stacked under GPT's names") {
  const auto models = gpts(small(), 2);
  nn::GPTEnsemble ensemble(pointers(models));
  CHECK(ensemble.size() == 2);
  const auto names = ensemble.named_parameters();
  REQUIRE(names.size() == models[0]->named_parameters().size());
  for (const auto& [name, p] : models[1]->named_parameters()) {
    CAPTURE(name);
    const Tensor stacked = ensemble.parameter(name);
    CHECK(stacked.size(0) == 2);
    CHECK(values(select(stacked, 0, 1)) == values(p));
  }
}

TEST_CASE("members come out as GPTs, and keep() drops and reorders them") {
  const auto models = gpts(small(), 3);
  nn::GPTEnsemble ensemble(pointers(models));
  const Tensor before = ensemble.parameter("lm_head.weight");
  const auto second = ensemble.member(1);
  for (const auto& [name, p] : models[1]->named_parameters())
    CHECK(values(second->parameter(name)) == values(p));
  ensemble.keep({2, 0});
  CHECK(ensemble.size() == 2);
  // The same handle, now holding members 2 and 0.
  CHECK(ensemble.parameter("lm_head.weight").impl() == before.impl());
  CHECK(before.size(0) == 2);
  CHECK(values(select(before, 0, 0)) == values(models[2]->parameter("lm_head.weight")));
  CHECK(values(select(before, 0, 1)) == values(models[0]->parameter("lm_head.weight")));
  Generator gen(5);
  const Tensor tokens = randint(0, 11, {2, 3, 5}, TensorOptions(kInt64), &gen);
  CHECK(values(select(ensemble(tokens), 0, 0)) == values((*models[2])(select(tokens, 0, 0))));
  CHECK_THROWS_WITH_AS(ensemble.keep({0, 0}), doctest::Contains("listed twice"), ValueError);
  CHECK_THROWS_WITH_AS(ensemble.member(2), doctest::Contains("out of range for an ensemble of 2"),
                       IndexError);
}

TEST_CASE("an ensemble refuses mixed or unsupported members and bad inputs") {
  const auto models = gpts(small(), 2);
  nn::GPTOptions wider = small();
  wider.d_model = 32;
  const auto other = gpts(wider, 1);
  CHECK_THROWS_WITH_AS(nn::GPTEnsemble({models[0].get(), other[0].get()}),
                       doctest::Contains("differs in its options from member 0"), ValueError);
  CHECK_THROWS_AS(nn::GPTEnsemble(std::vector<const nn::GPT*>{}), ValueError);
  nn::GPTOptions dropout = small();
  dropout.dropout = 0.1;
  const auto with_dropout = gpts(dropout, 1);
  CHECK_THROWS_WITH_AS(nn::GPTEnsemble({with_dropout[0].get()}), doctest::Contains("no dropout"),
                       ValueError);
  nn::GPTEnsemble ensemble(pointers(models));
  CHECK_THROWS_WITH_AS(ensemble(zeros({3, 2, 4}, TensorOptions(kInt64))),
                       doctest::Contains("(members, batch, length) with members = 2"), ShapeError);
  CHECK_THROWS_WITH_AS(ensemble(full({2, 2, 4}, 11, TensorOptions(kInt64))),
                       doctest::Contains("token id 11 of member 0 is out of range [0, 11)"),
                       IndexError);
  CHECK_THROWS_WITH_AS(ensemble(zeros({2, 2, 10}, TensorOptions(kInt64))),
                       doctest::Contains("longer than max_len 9"), ShapeError);
}
