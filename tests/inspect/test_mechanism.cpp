// inspect::mechanism_scores against patterns built by hand whose previous-token and
// induction scores are worked out exactly; padding excluded as queries and as earlier
// occurrences; batching invariance; the model overload against scoring the captured
// patterns of the concatenated batches.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "headgrad/inspect/capture.hpp"
#include "headgrad/inspect/heads.hpp"
#include "headgrad/inspect/mechanism.hpp"
#include "headgrad/nn/gpt.hpp"
#include "headgrad/ops/shape_ops.hpp"
#include "headgrad/train/tasks.hpp"
#include "headgrad/train/trainer.hpp"
#include "helpers.hpp"

namespace hg = headgrad;
namespace nn = headgrad::nn;
namespace inspect = headgrad::inspect;
namespace train = headgrad::train;
using hg::Tensor;

namespace {

// A (N, H, L, S) pattern filled by `weight(n, h, i, k)`.
template <typename F>
Tensor pattern(std::int64_t n, std::int64_t h, std::int64_t l, std::int64_t s, F weight) {
  std::vector<double> v;
  for (std::int64_t a = 0; a < n; ++a)
    for (std::int64_t b = 0; b < h; ++b)
      for (std::int64_t i = 0; i < l; ++i)
        for (std::int64_t k = 0; k < s; ++k) v.push_back(weight(a, b, i, k));
  return hg::from_vector(v, {n, h, l, s}, hg::kFloat64);
}

Tensor tokens(const std::vector<std::int64_t>& ids, std::int64_t n) {
  return hg::from_vector(ids, {n, static_cast<std::int64_t>(ids.size()) / n}, hg::kInt64);
}

// Uniform causal attention: row i spreads 1 / (i + 1) over keys 0 .. i.
double causal_uniform(std::int64_t, std::int64_t, std::int64_t i, std::int64_t k) {
  return k <= i ? 1.0 / static_cast<double>(i + 1) : 0.0;
}

}  // namespace

TEST_CASE("a previous-token head and an induction head score 1 on a repeated sequence") {
  // tokens 5 6 7 5 6 7: head 0 attends to i - 1 (row 0 to itself); head 1 attends to the
  // position after the earlier copy (rows 3, 4, 5 -> keys 1, 2, 3), rows 0..2 to themselves.
  const Tensor ids = tokens({5, 6, 7, 5, 6, 7}, 1);
  const Tensor a = pattern(1, 2, 6, 6, [](auto, auto h, auto i, auto k) {
    const std::int64_t target = h == 0 ? (i == 0 ? 0 : i - 1) : (i >= 3 ? i - 2 : i);
    return k == target ? 1.0 : 0.0;
  });
  // A second layer in float32 with one key more (add_bias_kv's column, never read).
  const Tensor b = pattern(1, 1, 6, 7, causal_uniform).to(hg::kFloat32);
  const auto s = inspect::mechanism_scores({a, b}, ids);
  CHECK(s.layers == std::vector<std::string>{"0", "1"});
  CHECK(s.positions_previous == 5);   // i = 1 .. 5
  CHECK(s.positions_induction == 3);  // i = 3, 4, 5
  REQUIRE(s.previous_token.size() == 2);
  CHECK(s.previous_token[0] == std::vector<double>{1.0, 0.0});
  CHECK(s.induction[0] == std::vector<double>{0.0, 1.0});
  // Uniform causal: previous = mean of 1/(i+1), i = 1..5 = (1/2 + 1/3 + 1/4 + 1/5 + 1/6) / 5
  // = (29/20) / 5 = 29/100; induction = mean over i = 3, 4, 5 of 1/(i+1) = (1/4 + 1/5 +
  // 1/6) / 3 = (37/60) / 3 = 37/180.
  CHECK(s.previous_token[1][0] == doctest::Approx(29.0 / 100).epsilon(1e-6));
  CHECK(s.induction[1][0] == doctest::Approx(37.0 / 180).epsilon(1e-6));
}

TEST_CASE("induction sums every earlier occurrence and skips the token just before") {
  // tokens 1 2 1 3 1 4 4: i = 2 reads key 1; i = 4 reads keys 1 and 3; i = 6 (token 4 at
  // j = 5, j + 1 = 6 is not < 6) has no earlier occurrence that counts.
  const Tensor ids = tokens({1, 2, 1, 3, 1, 4, 4}, 1);
  const auto s = inspect::mechanism_scores({pattern(1, 1, 7, 7, causal_uniform)}, ids);
  CHECK(s.positions_induction == 2);
  CHECK(s.positions_previous == 6);
  // (1/3 + (1/5 + 1/5)) / 2 = 11/30; previous = (1/2 + ... + 1/7) / 6 = (223/140) / 6.
  CHECK(s.induction[0][0] == doctest::Approx(11.0 / 30).epsilon(1e-12));
  CHECK(s.previous_token[0][0] == doctest::Approx(223.0 / 140 / 6).epsilon(1e-12));
  // Nothing repeated: no induction query, NaN score.
  const auto none =
      inspect::mechanism_scores({pattern(1, 1, 3, 3, causal_uniform)}, tokens({1, 2, 3}, 1));
  CHECK(none.positions_induction == 0);
  CHECK(std::isnan(none.induction[0][0]));
  CHECK(none.previous_token[0][0] == doctest::Approx((1.0 / 2 + 1.0 / 3) / 2).epsilon(1e-12));
}

namespace {

// Example 0: tokens 3 4 3 4 3, no padding, uniform causal attention. Example 1: left
// padding, tokens 9 9 9 6 9 with positions 0..2 padding; row 3 attends to 3, row 4 to 3
// and 4 by halves; padding rows hold 100 everywhere (they must never be read).
struct Padded {
  Tensor ids = tokens({3, 4, 3, 4, 3, 9, 9, 9, 6, 9}, 2);
  Tensor mask = hg::from_vector(
      std::vector<bool>{false, false, false, false, false, true, true, true, false, false}, {2, 5},
      hg::kBool);
  Tensor a = pattern(2, 1, 5, 5, [](auto n, auto, auto i, auto k) {
    if (n == 0) return causal_uniform(0, 0, i, k);
    if (i < 3) return 100.0;
    if (i == 3) return k == 3 ? 1.0 : 0.0;
    return k >= 3 ? 0.5 : 0.0;
  });
};

}  // namespace

TEST_CASE("induction_scored counts only the repeated tokens whose prediction is scored") {
  // A recall prompt k1 v k2 v q=k1: the value v repeats by chance at i = 3 (earlier at
  // j = 1, reads key 2) and the query repeats k1 at i = 4 (earlier at j = 0, reads key 1).
  // Only the query is scored. The head looks up perfectly at the query (row 4 -> key 1)
  // and attends to itself elsewhere.
  const Tensor ids = tokens({10, 1, 11, 1, 10}, 1);
  const Tensor a = pattern(
      1, 1, 5, 5, [](auto, auto, auto i, auto k) { return k == (i == 4 ? 1 : i) ? 1.0 : 0.0; });
  const Tensor scored =
      hg::from_vector(std::vector<bool>{false, false, false, false, true}, {1, 5});
  const auto s = inspect::mechanism_scores({a}, ids, Tensor(), scored);
  CHECK(s.positions_induction == 2);
  CHECK(s.positions_induction_scored == 1);
  CHECK(s.induction[0][0] == doctest::Approx(0.5));  // (0 at i = 3 + 1 at i = 4) / 2
  CHECK(s.induction_scored[0][0] == doctest::Approx(1.0));
  // Without a mask every position is scored: the two scores agree.
  const auto all = inspect::mechanism_scores({a}, ids);
  CHECK(all.positions_induction_scored == 2);
  CHECK(all.induction_scored[0][0] == doctest::Approx(0.5));
  // A mask that scores nothing repeated leaves the scored score undefined.
  const auto none = inspect::mechanism_scores({a}, ids, Tensor(), hg::zeros({1, 5}, hg::kBool));
  CHECK(none.positions_induction_scored == 0);
  CHECK(std::isnan(none.induction_scored[0][0]));
  CHECK_THROWS_AS(inspect::mechanism_scores({a}, ids, Tensor(), hg::zeros({1, 4}, hg::kBool)),
                  hg::ShapeError);
  CHECK_THROWS_AS(inspect::mechanism_scores({a}, ids, Tensor(), hg::zeros({1, 5}, hg::kInt64)),
                  hg::DTypeError);
}

TEST_CASE("padding never counts as a query or as an earlier occurrence") {
  Padded p;
  const auto s = inspect::mechanism_scores({p.a}, p.ids, p.mask);
  // Previous: example 0 i = 1..4 (1/2, 1/3, 1/4, 1/5), example 1 only i = 4 (i = 3 follows
  // padding): 0.5. Mean (77/60 + 1/2) / 5 = 107/300.
  CHECK(s.positions_previous == 5);
  CHECK(s.previous_token[0][0] == doctest::Approx(107.0 / 300).epsilon(1e-12));
  // Induction: example 0 i = 2 (key 1: 1/3), i = 3 (key 2: 1/4), i = 4 (keys 1, 3: 2/5);
  // example 1: token 9 at i = 4 occurs earlier only at padding positions: not counted.
  CHECK(s.positions_induction == 3);
  CHECK(s.induction[0][0] == doctest::Approx((1.0 / 3 + 1.0 / 4 + 2.0 / 5) / 3).epsilon(1e-12));
  // Without the mask, padding rows (100s) would count.
  const auto unmasked = inspect::mechanism_scores({p.a}, p.ids);
  CHECK(unmasked.positions_induction > 3);
  CHECK(unmasked.previous_token[0][0] > 1.0);
}

TEST_CASE("mechanism scores of two batches equal one call on their concatenation") {
  Padded p;
  const auto whole = inspect::mechanism_scores({p.a}, p.ids, p.mask);
  const auto first = inspect::mechanism_scores(
      {hg::narrow(p.a, 0, 0, 1)}, hg::narrow(p.ids, 0, 0, 1), hg::narrow(p.mask, 0, 0, 1));
  const auto second = inspect::mechanism_scores(
      {hg::narrow(p.a, 0, 1, 1)}, hg::narrow(p.ids, 0, 1, 1), hg::narrow(p.mask, 0, 1, 1));
  CHECK(first.positions_previous + second.positions_previous == whole.positions_previous);
  CHECK(first.positions_induction == whole.positions_induction);
  CHECK(second.positions_induction == 0);
  const double previous = (first.previous_token[0][0] * first.positions_previous +
                           second.previous_token[0][0] * second.positions_previous) /
                          whole.positions_previous;
  CHECK(whole.previous_token[0][0] == doctest::Approx(previous).epsilon(1e-12));
  CHECK(whole.induction[0][0] == doctest::Approx(first.induction[0][0]).epsilon(1e-12));
}

TEST_CASE("mechanism_scores refuses tensors that do not fit") {
  Padded p;
  CHECK_THROWS_AS(inspect::mechanism_scores({hg::narrow(p.a, 3, 0, 4)}, p.ids), hg::ShapeError);
  CHECK_THROWS_AS(inspect::mechanism_scores({hg::narrow(p.a, 0, 0, 1)}, p.ids), hg::ShapeError);
  CHECK_THROWS_AS(inspect::mechanism_scores({p.a.reshape({2, 5, 5})}, p.ids), hg::ShapeError);
  CHECK_THROWS_AS(inspect::mechanism_scores({p.a}, p.ids.to(hg::kFloat64)), hg::DTypeError);
  CHECK_THROWS_AS(inspect::mechanism_scores({p.a}, p.ids, p.mask.to(hg::kFloat64)), hg::DTypeError);
  CHECK_THROWS_AS(inspect::mechanism_scores({p.a}, p.ids, hg::narrow(p.mask, 1, 0, 4)),
                  hg::ShapeError);
  CHECK_THROWS_AS(inspect::mechanism_scores({Tensor()}, p.ids), hg::ValueError);
}

namespace {

struct Model {
  std::unique_ptr<train::Task> task;
  std::shared_ptr<nn::GPT> gpt;
  train::ForwardFn forward;

  explicit Model(bool per_head = false) {
    task = train::make_task("copy",
                            train::TaskOptions().with_seed(3).with_length(4).with_min_length(2));
    hg::Generator gen(29);
    gpt = std::make_shared<nn::GPT>(nn::GPTOptions{.vocab_size = task->vocab_size(),
                                                   .max_len = task->max_len(),
                                                   .d_model = 8,
                                                   .nhead = 2,
                                                   .num_layers = 2,
                                                   .dim_feedforward = 16,
                                                   .per_head = per_head},
                                    &gen);
    gpt->to(hg::kFloat64);
    auto m = gpt;
    forward = [m](const train::Batch& b) { return m->forward(b.tokens, b.key_padding_mask); };
  }
};

// A task whose batches carry no token ids (continuous inputs).
class NoTokens : public train::Task {
 public:
  std::string name() const override { return "no_tokens"; }
  train::TaskKind kind() const override { return train::TaskKind::sequence; }
  std::int64_t vocab_size() const override { return 4; }
  std::int64_t max_len() const override { return 3; }
  train::Batch batch(train::Split, std::int64_t, std::int64_t) const override { return {}; }
};

}  // namespace

TEST_CASE("mechanism_scores of a model score the captured patterns of all batches together") {
  Model m;
  const std::int64_t batches = 2, batch_size = 3;
  m.gpt->train();
  const auto s = inspect::mechanism_scores(*m.gpt, m.forward, *m.task, train::Split::validation,
                                           batches, batch_size);
  CHECK(m.gpt->is_training());
  CHECK(s.layers == std::vector<std::string>{"layers.0.self_attn", "layers.1.self_attn"});

  // The same patterns captured here, batch by batch, concatenated and scored at once.
  std::vector<std::vector<Tensor>> per_layer(2);
  std::vector<Tensor> ids, masks;
  m.gpt->eval();
  for (std::int64_t b = 0; b < batches; ++b) {
    const train::Batch batch = m.task->batch(train::Split::validation, b, batch_size);
    inspect::Capture capture(*m.gpt, {"pattern"});
    {
      auto scope = capture.activate();
      m.forward(batch);
    }
    for (std::size_t l = 0; l < 2; ++l)
      per_layer[l].push_back(
          capture.get("layers." + std::to_string(l) + ".self_attn.pattern").detach());
    ids.push_back(batch.tokens);
    masks.push_back(batch.key_padding_mask.defined() ? batch.key_padding_mask
                                                     : hg::zeros(batch.tokens.shape(), hg::kBool));
  }
  // Scored positions: those whose next-token target is not ignored.
  std::vector<Tensor> scored;
  for (std::int64_t b = 0; b < batches; ++b)
    scored.push_back(hg::ne(m.task->batch(train::Split::validation, b, batch_size).targets,
                            hg::full_like(ids[static_cast<std::size_t>(b)], -100)));
  const auto expected =
      inspect::mechanism_scores({hg::cat(per_layer[0], 0), hg::cat(per_layer[1], 0)},
                                hg::cat(ids, 0), hg::cat(masks, 0), hg::cat(scored, 0));
  CHECK(s.positions_previous == expected.positions_previous);
  CHECK(s.positions_induction == expected.positions_induction);
  CHECK(s.positions_induction_scored == expected.positions_induction_scored);
  // The copy task scores only the copied half, where every token repeats the prompt.
  CHECK(s.positions_induction_scored > 0);
  CHECK(s.positions_induction_scored < s.positions_induction);
  CHECK(s.positions_previous > 0);
  CHECK(s.positions_induction > 0);  // the copy repeats the prompt
  for (std::size_t l = 0; l < 2; ++l)
    for (std::size_t h = 0; h < 2; ++h) {
      CAPTURE(l);
      CAPTURE(h);
      CHECK(s.previous_token[l][h] ==
            doctest::Approx(expected.previous_token[l][h]).epsilon(1e-12));
      CHECK(s.induction[l][h] == doctest::Approx(expected.induction[l][h]).epsilon(1e-12));
      CHECK(s.induction_scored[l][h] ==
            doctest::Approx(expected.induction_scored[l][h]).epsilon(1e-12));
    }
  // The per-head layout of the same weights scores the same.
  Model headwise(true);
  const auto t = inspect::mechanism_scores(*headwise.gpt, headwise.forward, *headwise.task,
                                           train::Split::validation, batches, batch_size);
  for (std::size_t l = 0; l < 2; ++l)
    for (std::size_t h = 0; h < 2; ++h)
      CHECK(t.previous_token[l][h] == doctest::Approx(s.previous_token[l][h]).epsilon(1e-9));
  CHECK_THROWS_AS(inspect::mechanism_scores(*m.gpt, m.forward, *m.task, train::Split::train, 0, 3),
                  hg::ValueError);
}

TEST_CASE("mechanism_scores of batches without token ids are NaN with zero counts") {
  Model m;
  NoTokens task;
  bool ran = false;
  const train::ForwardFn forward = [&](const train::Batch&) {
    ran = true;
    return Tensor();
  };
  const auto s = inspect::mechanism_scores(*m.gpt, forward, task, train::Split::train, 2, 3);
  CHECK_FALSE(ran);
  CHECK(s.positions_previous == 0);
  CHECK(s.positions_induction == 0);
  REQUIRE(s.previous_token.size() == 2);
  for (std::size_t l = 0; l < 2; ++l) {
    REQUIRE(s.previous_token[l].size() == 2);
    for (std::size_t h = 0; h < 2; ++h) {
      CHECK(std::isnan(s.previous_token[l][h]));
      CHECK(std::isnan(s.induction[l][h]));
    }
  }
}

TEST_CASE("mechanism_scores refuses a model whose attention layer does not run") {
  Model m;
  const train::ForwardFn skip = [](const train::Batch& b) { return b.tokens; };
  CHECK_THROWS_AS(inspect::mechanism_scores(*m.gpt, skip, *m.task, train::Split::validation, 1, 2),
                  hg::ValueError);
}

TEST_CASE("mechanism_scores of one given batch equal the task overload on that batch") {
  Model m;
  const auto from_task =
      inspect::mechanism_scores(*m.gpt, m.forward, *m.task, train::Split::validation, 1, 5);
  const auto from_batch =
      inspect::mechanism_scores(*m.gpt, m.forward, m.task->batch(train::Split::validation, 0, 5));
  CHECK(from_batch.positions_induction == from_task.positions_induction);
  CHECK(from_batch.previous_token == from_task.previous_token);
  CHECK(from_batch.induction == from_task.induction);
  CHECK(from_batch.induction_scored == from_task.induction_scored);
  // Olsson's probe: every second-half position has exactly one earlier occurrence.
  const train::Batch probe = train::induction_probe(*m.task, 4, 3);
  const auto scores = inspect::mechanism_scores(*m.gpt, m.forward, probe);
  CHECK(scores.positions_induction == 3 * 4);
  CHECK(scores.positions_induction_scored == 3 * 3);
}
