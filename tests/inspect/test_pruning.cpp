// inspect pruning orders and references against independent computations: importance
// orders of one-head and multi-head layers against the raw and normalized scores; the
// greedy ablation order against single-head and pair ablations evaluated here; the
// random-order band against the pruning curves of each order and percentiles worked out
// by hand; per-head parameter counts against hand counts of every tensor.
//
// Model: a float64 GPT (2 layers of 2 heads, or 3 layers of 1 head, d_model 8) on the copy
// task with lengths 1..3.
#include <algorithm>
#include <cmath>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "headgrad/inspect/heads.hpp"
#include "headgrad/nn/attention_head.hpp"
#include "headgrad/nn/gpt.hpp"
#include "headgrad/train/tasks.hpp"
#include "headgrad/train/trainer.hpp"
#include "helpers.hpp"

namespace hg = headgrad;
namespace nn = headgrad::nn;
namespace inspect = headgrad::inspect;
namespace train = headgrad::train;
using inspect::HeadId;

namespace {

struct Tiny {
  std::unique_ptr<train::Task> task;
  std::shared_ptr<nn::GPT> model;
  train::ForwardFn forward;

  explicit Tiny(bool per_head = false, std::int64_t nhead = 2, std::int64_t num_layers = 2) {
    task = train::make_task("copy",
                            train::TaskOptions().with_seed(5).with_length(3).with_min_length(1));
    hg::Generator gen(23);
    model = std::make_shared<nn::GPT>(nn::GPTOptions{.vocab_size = task->vocab_size(),
                                                     .max_len = task->max_len(),
                                                     .d_model = 8,
                                                     .nhead = nhead,
                                                     .num_layers = num_layers,
                                                     .dim_feedforward = 16,
                                                     .per_head = per_head},
                                      &gen);
    model->to(hg::kFloat64);
    auto m = model;
    forward = [m](const train::Batch& b) { return m->forward(b.tokens, b.key_padding_mask); };
  }
  nn::AttentionLayer& layer(std::size_t i) const { return *(*model->layers)[i]->self_attn; }
  train::Metrics ablated(const std::vector<HeadId>& heads) const {
    inspect::HeadAblation ablation(*model, heads);
    return train::evaluate(*model, forward, *task, train::Split::validation, 2, 4);
  }
};

const std::vector<HeadId> kAllHeads = {{0, 0}, {0, 1}, {1, 0}, {1, 1}};

std::vector<HeadId> sorted(std::vector<HeadId> v) {
  std::sort(v.begin(), v.end(), [](const HeadId& a, const HeadId& b) {
    return a.layer != b.layer ? a.layer < b.layer : a.head < b.head;
  });
  return v;
}

}  // namespace

TEST_CASE("importance_order ranks one-head layers by raw importance") {
  // Normalized scores of one-head layers are all 1: only the raw scores can rank them.
  inspect::HeadImportance imp;
  imp.raw = {{0.371}, {0.131}, {0.2}};
  imp.normalized = {{1.0}, {1.0}, {1.0}};
  const std::vector<HeadId> by_raw = {{1, 0}, {2, 0}, {0, 0}};
  CHECK(inspect::importance_order(imp) == by_raw);
  CHECK(inspect::importance_order(imp, inspect::ImportanceRanking::raw) == by_raw);
  const std::vector<HeadId> by_layer = {{0, 0}, {1, 0}, {2, 0}};
  CHECK(inspect::importance_order(imp, inspect::ImportanceRanking::normalized) == by_layer);

  // A GPT with one head per layer. Scaling layer 1's output projection by 1e-3 scales
  // dL/dgate of its head by about 1e-3 (the gate multiplies z before W_o), so its raw
  // importance falls far below layer 0's: the layer order is then the wrong order.
  Tiny s(false, 1, 3);
  {
    hg::NoGradGuard no_grad;
    dynamic_cast<nn::MultiheadAttention&>(s.layer(1)).out_proj->weight.mul_(1e-3);
  }
  const auto computed =
      inspect::head_importance(*s.model, s.forward, *s.task, train::Split::train, 2, 4);
  REQUIRE(computed.raw.size() == 3);
  for (const auto& row : computed.normalized) CHECK(row[0] == doctest::Approx(1.0));
  REQUIRE(computed.raw[1][0] < computed.raw[0][0]);
  const auto order = inspect::importance_order(computed);
  REQUIRE(order.size() == 3);
  std::int64_t least_layer = 0;
  for (std::int64_t l = 1; l < 3; ++l)
    if (computed.raw[l][0] < computed.raw[least_layer][0]) least_layer = l;
  CHECK(order.front() == HeadId{least_layer, 0});
  CHECK(order.front() != HeadId{0, 0});  // what ranking by normalized scores would give
  auto sorted = order;
  std::sort(sorted.begin(), sorted.end(),
            [](const HeadId& a, const HeadId& b) { return a.layer < b.layer; });
  CHECK(sorted == by_layer);
  for (std::size_t i = 1; i < order.size(); ++i)
    CHECK(computed.raw[order[i - 1].layer][0] <= computed.raw[order[i].layer][0]);
  // The curve of this order removes the least important head first.
  const auto curve =
      inspect::pruning_curve(*s.model, s.forward, *s.task, train::Split::validation, 1, 4, order);
  inspect::HeadAblation least(*s.model, {order.front()});
  const auto expected =
      train::evaluate(*s.model, s.forward, *s.task, train::Split::validation, 1, 4);
  CHECK(curve[1].loss == doctest::Approx(expected.loss).epsilon(1e-12));
}

TEST_CASE("importance_order ranks by normalized scores only when every layer has two heads") {
  // Every layer has two or more heads: normalized (Michel et al.), which here differs from
  // the raw order.
  inspect::HeadImportance multi;
  multi.raw = {{4.0, 3.0}, {0.1, 0.2, 0.3}};
  multi.normalized = {{0.8, 0.6},
                      {0.1 / std::sqrt(0.14), 0.2 / std::sqrt(0.14),
                       0.3 / std::sqrt(0.14)}};  // 0.267, 0.535, 0.802
  const std::vector<HeadId> normalized = {{1, 0}, {1, 1}, {0, 1}, {0, 0}, {1, 2}};
  const std::vector<HeadId> raw = {{1, 0}, {1, 1}, {1, 2}, {0, 1}, {0, 0}};
  CHECK(inspect::importance_order(multi) == normalized);
  CHECK(inspect::importance_order(multi, inspect::ImportanceRanking::normalized) == normalized);
  CHECK(inspect::importance_order(multi, inspect::ImportanceRanking::raw) == raw);

  // One layer with a single head makes the automatic ranking raw.
  inspect::HeadImportance mixed;
  mixed.raw = {{4.0, 3.0}, {0.5}};
  mixed.normalized = {{0.8, 0.6}, {1.0}};
  CHECK(inspect::importance_order(mixed) == std::vector<HeadId>{{1, 0}, {0, 1}, {0, 0}});
  CHECK(inspect::importance_order(mixed, inspect::ImportanceRanking::normalized) ==
        std::vector<HeadId>{{0, 1}, {0, 0}, {1, 0}});

  // Only raw filled: raw and automatic work, normalized is refused.
  inspect::HeadImportance raw_only;
  raw_only.raw = {{2.0}, {1.0}};
  CHECK(inspect::importance_order(raw_only) == std::vector<HeadId>{{1, 0}, {0, 0}});
  CHECK_THROWS_AS(inspect::importance_order(raw_only, inspect::ImportanceRanking::normalized),
                  hg::ValueError);
  inspect::HeadImportance ragged;
  ragged.raw = {{2.0, 1.0}};
  ragged.normalized = {{1.0}};
  CHECK_THROWS_AS(inspect::importance_order(ragged, inspect::ImportanceRanking::raw),
                  hg::ValueError);
}

TEST_CASE("greedy_order removes the head whose ablation leaves the lowest loss first") {
  Tiny s;
  const auto order =
      inspect::greedy_order(*s.model, s.forward, *s.task, train::Split::validation, 2, 4);
  REQUIRE(order.size() == 4);
  CHECK(sorted(order) == kAllHeads);
  CHECK_FALSE(s.layer(0).head_gates().defined());
  CHECK_FALSE(s.layer(1).head_gates().defined());

  // Single-head ablations, evaluated here; argmin with ties in model order.
  std::size_t first = 0;
  std::vector<double> single;
  for (std::size_t i = 0; i < kAllHeads.size(); ++i) {
    single.push_back(s.ablated({kAllHeads[i]}).loss);
    if (single[i] < single[first]) first = i;
  }
  CAPTURE(single[0]);
  CAPTURE(single[1]);
  CAPTURE(single[2]);
  CAPTURE(single[3]);
  CHECK(order[0] == kAllHeads[first]);
  // The second head: the lowest loss among pairs with the first.
  std::size_t second = first == 0 ? 1 : 0;
  double best = s.ablated({kAllHeads[first], kAllHeads[second]}).loss;
  for (std::size_t i = 0; i < kAllHeads.size(); ++i) {
    if (i == first) continue;
    const double loss = s.ablated({kAllHeads[first], kAllHeads[i]}).loss;
    if (loss < best) {
      best = loss;
      second = i;
    }
  }
  CHECK(order[1] == kAllHeads[second]);
  // Its curve never has a higher loss after one removal than any other first choice.
  const auto curve =
      inspect::pruning_curve(*s.model, s.forward, *s.task, train::Split::validation, 2, 4, order);
  for (double loss : single) CHECK(curve[1].loss <= loss);
  CHECK_THROWS_AS(inspect::greedy_order(*s.model, s.forward, *s.task, train::Split::train, 0, 4),
                  hg::ValueError);
}

TEST_CASE("random_pruning_band with one order is that order's pruning curve") {
  Tiny s;
  const std::uint64_t seed = 11;
  const auto band = inspect::random_pruning_band(*s.model, s.forward, *s.task,
                                                 train::Split::validation, 2, 4, 1, seed);
  const auto curve = inspect::pruning_curve(*s.model, s.forward, *s.task, train::Split::validation,
                                            2, 4, inspect::random_order(*s.model, seed));
  CHECK(band.orders == 1);
  CHECK(band.evaluations == 5);
  REQUIRE(band.removed.size() == curve.size());
  for (std::size_t k = 0; k < curve.size(); ++k) {
    CAPTURE(k);
    CHECK(band.removed[k] == curve[k].removed);
    CHECK(band.mean_loss[k] == curve[k].loss);
    CHECK(band.low_loss[k] == curve[k].loss);
    CHECK(band.high_loss[k] == curve[k].loss);
    CHECK(band.mean_accuracy[k] == curve[k].accuracy);
    CHECK(band.low_accuracy[k] == curve[k].accuracy);
    CHECK(band.high_accuracy[k] == curve[k].accuracy);
  }
  CHECK_FALSE(s.layer(0).head_gates().defined());
  CHECK_FALSE(s.layer(1).head_gates().defined());
}

TEST_CASE("random_pruning_band evaluates each head set once and gives the unmemoized numbers") {
  Tiny s;
  const std::uint64_t seed = 40;
  const std::int64_t orders = 6;
  const auto band = inspect::random_pruning_band(*s.model, s.forward, *s.task,
                                                 train::Split::validation, 2, 4, orders, seed);
  // Each order's curve evaluated on its own, and the distinct removed sets.
  std::vector<std::vector<inspect::PruningPoint>> curves;
  std::set<std::vector<std::pair<std::int64_t, std::int64_t>>> sets;
  for (std::int64_t i = 0; i < orders; ++i) {
    const auto order = inspect::random_order(*s.model, seed + static_cast<std::uint64_t>(i));
    curves.push_back(inspect::pruning_curve(*s.model, s.forward, *s.task, train::Split::validation,
                                            2, 4, order));
    for (std::size_t k = 0; k <= order.size(); ++k) {
      std::vector<std::pair<std::int64_t, std::int64_t>> set;
      for (std::size_t j = 0; j < k; ++j) set.emplace_back(order[j].layer, order[j].head);
      std::sort(set.begin(), set.end());
      sets.insert(set);
    }
  }
  CHECK(band.orders == orders);
  CHECK(band.evaluations == static_cast<std::int64_t>(sets.size()));
  CHECK(band.evaluations < orders * 5);
  REQUIRE(band.removed.size() == 5);
  for (std::size_t k = 0; k <= 4; ++k) {
    CAPTURE(k);
    std::vector<double> loss, accuracy;
    for (const auto& c : curves) {
      loss.push_back(c[k].loss);
      accuracy.push_back(c[k].accuracy);
    }
    double loss_sum = 0, accuracy_sum = 0;
    for (std::size_t i = 0; i < loss.size(); ++i) {
      loss_sum += loss[i];
      accuracy_sum += accuracy[i];
    }
    CHECK(band.mean_loss[k] == doctest::Approx(loss_sum / 6).epsilon(1e-14));
    CHECK(band.mean_accuracy[k] == doctest::Approx(accuracy_sum / 6).epsilon(1e-14));
    // Six values, coverage 0.95: low at position 0.025 * 5 = 0.125 and high at
    // 0.975 * 5 = 4.875 of the sorted values.
    std::sort(loss.begin(), loss.end());
    std::sort(accuracy.begin(), accuracy.end());
    CHECK(band.low_loss[k] == doctest::Approx(loss[0] + 0.125 * (loss[1] - loss[0])));
    CHECK(band.high_loss[k] == doctest::Approx(loss[4] + 0.875 * (loss[5] - loss[4])));
    CHECK(band.low_accuracy[k] ==
          doctest::Approx(accuracy[0] + 0.125 * (accuracy[1] - accuracy[0])));
    CHECK(band.high_accuracy[k] ==
          doctest::Approx(accuracy[4] + 0.875 * (accuracy[5] - accuracy[4])));
    // The band holds the mean here.
    CHECK(band.low_loss[k] <= band.mean_loss[k]);
    CHECK(band.mean_loss[k] <= band.high_loss[k]);
    CHECK(band.low_accuracy[k] <= band.mean_accuracy[k]);
    CHECK(band.mean_accuracy[k] <= band.high_accuracy[k]);
  }
  // Nothing removed and everything removed are single sets: no spread.
  CHECK(band.low_loss[0] == band.high_loss[0]);
  CHECK(band.low_loss[4] == band.high_loss[4]);
  // Coverage 1: the band is the range.
  const auto full = inspect::random_pruning_band(*s.model, s.forward, *s.task,
                                                 train::Split::validation, 2, 4, orders, seed, 1.0);
  for (std::size_t k = 0; k <= 4; ++k) {
    double lo = curves[0][k].loss, hi = lo;
    for (const auto& c : curves) {
      lo = std::min(lo, c[k].loss);
      hi = std::max(hi, c[k].loss);
    }
    CHECK(full.low_loss[k] == lo);
    CHECK(full.high_loss[k] == hi);
  }
  for (double coverage : {0.0, -0.5, 1.5})
    CHECK_THROWS_AS(inspect::random_pruning_band(*s.model, s.forward, *s.task,
                                                 train::Split::validation, 2, 4, 3, seed, coverage),
                    hg::ValueError);
  CHECK_THROWS_AS(inspect::random_pruning_band(*s.model, s.forward, *s.task,
                                               train::Split::validation, 2, 4, 0, seed),
                  hg::ValueError);
}

TEST_CASE("head_parameter_counts count each head's rows and columns of the projections") {
  // GPT, d_model 8, 2 heads of d = 4: W_q, W_k, W_v rows 3 * 4 * 8 = 96, their biases
  // 3 * 4 = 12, out_proj.weight columns 8 * 4 = 32: 140 per head. A layer adds
  // out_proj.bias (8): 2 * 140 + 8 = 288 = 3*8*8 + 3*8 + 8*8 + 8.
  for (bool per_head : {false, true}) {
    CAPTURE(per_head);
    Tiny s(per_head);
    CHECK(inspect::head_parameter_counts(*s.model) == std::vector<std::int64_t>(4, 140));
    CHECK(inspect::attention_parameter_count(*s.model) == 2 * 288);
  }
  // kdim 5, vdim 7, add_bias_kv, E = 6, 3 heads of d = 2: rows 2 * (6 + 5 + 7) = 36,
  // biases 3 * 2 = 6, bias_k and bias_v slices 2 * 2 = 4, out_proj columns 6 * 2 = 12:
  // 58 per head. The layer: 36 + 30 + 42 (projections) + 18 (in_proj_bias) + 6 + 6
  // (bias_k, bias_v) + 36 + 6 (out_proj) = 180 = 3 * 58 + 6.
  nn::MultiheadAttention fused(
      nn::MultiheadAttentionOptions(6, 3).with_kdim(5).with_vdim(7).with_add_bias_kv(true));
  CHECK(inspect::head_parameter_counts(fused) == std::vector<std::int64_t>(3, 58));
  CHECK(inspect::attention_parameter_count(fused) == 180);
  auto headwise = nn::HeadwiseMultiheadAttention::from_fused(fused);
  CHECK(inspect::head_parameter_counts(*headwise) == std::vector<std::int64_t>(3, 58));
  CHECK(inspect::attention_parameter_count(*headwise) == 180);
  // Without biases, E = 4, 2 heads of d = 2: rows 3 * 2 * 4 = 24, out_proj columns
  // 4 * 2 = 8: 32 per head, and no out_proj.bias: 64 in all.
  nn::MultiheadAttention plain(nn::MultiheadAttentionOptions(4, 2).with_bias(false));
  CHECK(inspect::head_parameter_counts(plain) == std::vector<std::int64_t>(2, 32));
  CHECK(inspect::attention_parameter_count(plain) == 64);
  // head_size 5 apart from E = 6, 2 heads (I = 10): rows 5 * (6 + 6 + 6) = 90, biases 15,
  // out_proj columns 6 * 5 = 30: 135 per head. The layer: in_proj (30, 6) 180 + 30, out_proj
  // (6, 10) 60 + 6 = 276 = 2 * 135 + 6.
  nn::MultiheadAttention wide(nn::MultiheadAttentionOptions(6, 2).with_head_size(5));
  CHECK(inspect::head_parameter_counts(wide) == std::vector<std::int64_t>(2, 135));
  CHECK(inspect::attention_parameter_count(wide) == 276);
  auto wide_heads = nn::HeadwiseMultiheadAttention::from_fused(wide);
  CHECK(inspect::head_parameter_counts(*wide_heads) == std::vector<std::int64_t>(2, 135));
  CHECK(inspect::attention_parameter_count(*wide_heads) == 276);
  nn::Linear linear(3, 2);
  CHECK(inspect::head_parameter_counts(linear).empty());
  CHECK(inspect::attention_parameter_count(linear) == 0);
}
