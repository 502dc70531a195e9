// Tests of the mqar task (multi-query associative recall, include/headgrad/train/tasks.hpp):
// the layout decoded from the tokens, targets, the power-law gap distribution against its
// exact probabilities, determinism and option errors.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "headgrad/headgrad.hpp"

using namespace headgrad;
using namespace headgrad::train;

namespace {

using Ids = std::vector<std::int64_t>;

// One decoded mqar example: the pairs and the gap of each key's query.
struct Decoded {
  Ids keys, values, gaps;
};

// Decodes a row of K pairs and a query region, checking every documented invariant on the
// way (A = alphabet): keys 2..A+1 and values A+2..2A+1 distinct, each key exactly once in
// the query region at an even offset, filler 0 elsewhere, targets the value at each query.
Decoded decode(const Ids& row, const Ids& targets, std::int64_t k, std::int64_t a) {
  const auto t_max = static_cast<std::int64_t>(row.size());
  Decoded d;
  std::map<std::int64_t, std::int64_t> value_of;
  for (std::int64_t i = 0; i < k; ++i) {
    const std::int64_t key = row[2 * i], value = row[2 * i + 1];
    CHECK((key >= 2 && key < a + 2));
    CHECK((value >= a + 2 && value < 2 * a + 2));
    CHECK(value_of.count(key) == 0);
    value_of[key] = value;
    d.keys.push_back(key);
    d.values.push_back(value);
    CHECK(targets[2 * i] == -100);
    CHECK(targets[2 * i + 1] == -100);
  }
  CHECK(std::set<std::int64_t>(d.values.begin(), d.values.end()).size() == std::size_t(k));
  std::map<std::int64_t, std::int64_t> gap_of;
  for (std::int64_t t = 2 * k; t < t_max; ++t) {
    CAPTURE(t);
    const std::int64_t id = row[t];
    if (id == 0) {
      CHECK(targets[t] == -100);
      continue;
    }
    REQUIRE(value_of.count(id) == 1);  // only keys in the query region, never values
    CHECK((t - 2 * k) % 2 == 0);
    CHECK(gap_of.count(id) == 0);
    gap_of[id] = (t - 2 * k) / 2;
    CHECK(targets[t] == value_of[id]);
  }
  REQUIRE(static_cast<std::int64_t>(gap_of.size()) == k);  // every key queried once
  for (std::int64_t key : d.keys) d.gaps.push_back(gap_of[key]);
  return d;
}

std::vector<std::pair<Ids, Ids>> rows_of(const Batch& batch) {
  const std::int64_t b_size = batch.tokens.shape()[0], t_max = batch.tokens.shape()[1];
  const auto tokens = batch.tokens.to_vector<std::int64_t>();
  const auto targets = batch.targets.to_vector<std::int64_t>();
  std::vector<std::pair<Ids, Ids>> rows;
  for (std::int64_t b = 0; b < b_size; ++b)
    rows.emplace_back(Ids(tokens.begin() + b * t_max, tokens.begin() + (b + 1) * t_max),
                      Ids(targets.begin() + b * t_max, targets.begin() + (b + 1) * t_max));
  return rows;
}

}  // namespace

TEST_CASE("mqar rows hold K distinct pairs and query every key once with its value as target") {
  struct Config {
    std::int64_t k, context, alphabet;  // context/alphabet 0 = default
    std::int64_t t_expected, a_expected;
  };
  for (const Config& c : {Config{8, 0, 0, 32, 32}, Config{4, 64, 0, 64, 16},
                          Config{3, 12, 3, 12, 3}, Config{16, 256, 100, 256, 100}}) {
    CAPTURE(c.k);
    CAPTURE(c.context);
    auto task = make_task(
        "mqar", TaskOptions{}.with_length(c.k).with_context(c.context).with_alphabet(c.alphabet));
    REQUIRE(task->kind() == TaskKind::sequence);
    REQUIRE(task->max_len() == c.t_expected);
    REQUIRE(task->vocab_size() == 2 * c.a_expected + 2);
    std::set<std::int64_t> first_keys;
    for (Split split : {Split::train, Split::validation}) {
      for (std::int64_t index = 0; index < 10; ++index) {
        const Batch batch = task->batch(split, index, 32);
        CHECK_FALSE(batch.key_padding_mask.defined());
        CHECK(batch.tokens.shape() == Shape{32, c.t_expected});
        CHECK(batch.targets.shape() == Shape{32, c.t_expected});
        for (const auto& [row, targets] : rows_of(batch)) {
          const Decoded d = decode(row, targets, c.k, c.a_expected);
          first_keys.insert(d.keys[0]);
          for (std::int64_t g : d.gaps) CHECK((g >= 0 && g < (c.t_expected - 2 * c.k) / 2));
        }
      }
    }
    // Keys are drawn from the whole alphabet: 640 draws reach at least 90% of it.
    CHECK(10 * static_cast<std::int64_t>(first_keys.size()) >= 9 * c.a_expected);
  }
}

TEST_CASE("mqar gaps follow the power law with short gaps most likely") {
  // K = 1: the one gap has P(g) = (g + 1)^(-0.99) / sum_j (j + 1)^(-0.99) exactly.
  const std::int64_t space = 16;  // T = 2 + 2 * 16
  auto single = make_task("mqar", TaskOptions{}.with_length(1).with_context(2 + 2 * space));
  std::vector<std::int64_t> counts(space, 0);
  std::int64_t n = 0;
  for (std::int64_t index = 0; index < 100; ++index)
    for (const auto& [row, targets] : rows_of(single->batch(Split::train, index, 64))) {
      ++counts[decode(row, targets, 1, 16).gaps[0]];
      ++n;
    }
  double norm = 0;
  for (std::int64_t g = 0; g < space; ++g) norm += std::pow(g + 1.0, -0.99);
  for (std::int64_t g : {0, 1, 2, 7, 15}) {
    CAPTURE(g);
    const double p = std::pow(g + 1.0, -0.99) / norm;
    const double observed = static_cast<double>(counts[g]) / n;
    // Five binomial standard errors.
    CHECK(std::abs(observed - p) < 5 * std::sqrt(p * (1 - p) / n));
  }
  // With K = 4 of 28 gaps, the lower half of the gaps holds most queries.
  auto task = make_task("mqar", TaskOptions{}.with_length(4).with_context(64));
  std::int64_t low = 0, high = 0;
  for (std::int64_t index = 0; index < 50; ++index)
    for (const auto& [row, targets] : rows_of(task->batch(Split::train, index, 64)))
      for (std::int64_t g : decode(row, targets, 4, 16).gaps) (g < 14 ? low : high) += 1;
  MESSAGE("mqar K=4 T=64: queries at gaps below 14: " << low << ", at 14 or more: " << high);
  CHECK(low > 2 * high);
}

TEST_CASE("mqar batches are deterministic and its held-out splits are disjoint") {
  const auto options =
      TaskOptions{}.with_length(2).with_context(8).with_alphabet(3).with_test_fraction(0.2);
  auto a = make_task("mqar", options);
  auto b = make_task("mqar", options);
  for (Split split : {Split::train, Split::validation, Split::test}) {
    CHECK(a->batch(split, 4, 16).tokens.to_vector<std::int64_t>() ==
          b->batch(split, 4, 16).tokens.to_vector<std::int64_t>());
    CHECK(a->batch(split, 4, 16).targets.to_vector<std::int64_t>() ==
          b->batch(split, 4, 16).targets.to_vector<std::int64_t>());
  }
  CHECK(a->batch(Split::train, 4, 16).tokens.to_vector<std::int64_t>() !=
        a->batch(Split::train, 5, 16).tokens.to_vector<std::int64_t>());
  // 3*2 key choices, 3*2 value choices, 2 gap orders: 72 examples, all seen.
  std::set<Ids> seen[3];
  for (int s = 0; s < 3; ++s)
    for (std::int64_t index = 0; index < 30; ++index)
      for (const auto& [row, targets] : rows_of(a->batch(static_cast<Split>(s), index, 64)))
        seen[s].insert(row);
  for (int s = 0; s < 3; ++s)
    for (int o = s + 1; o < 3; ++o)
      for (const Ids& row : seen[s]) CHECK(seen[o].count(row) == 0);
  CHECK(seen[0].size() + seen[1].size() + seen[2].size() == 72);
}

TEST_CASE("mqar rejects an odd or short context and a small alphabet") {
  CHECK_THROWS_WITH_AS(make_task("mqar", TaskOptions{}.with_length(4).with_context(15)),
                       doctest::Contains("context"), ValueError);
  CHECK_THROWS_WITH_AS(make_task("mqar", TaskOptions{}.with_length(4).with_context(14)),
                       doctest::Contains("context"), ValueError);
  CHECK_THROWS_WITH_AS(make_task("mqar", TaskOptions{}.with_length(4).with_alphabet(3)),
                       doctest::Contains("alphabet"), ValueError);
  CHECK_THROWS_WITH_AS(make_task("mqar", TaskOptions{}.with_length(0)), doctest::Contains("length"),
                       ValueError);
}
