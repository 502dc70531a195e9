// inspect::corrupt_recall against the prompt format of train/tasks.hpp, read off each
// prompt independently: the query corruption changes the query's key (and
// associative_recall's shown answer) only; the context corruption keeps the query, swaps
// exactly two keys of the context, and the query then matches the wrong answer's pair.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "headgrad/core/error.hpp"
#include "headgrad/inspect/recall_patching.hpp"
#include "headgrad/train/tasks.hpp"
#include "helpers.hpp"

namespace hg = headgrad;
namespace inspect = headgrad::inspect;
namespace train = headgrad::train;

namespace {

std::unique_ptr<train::Task> recall_task(const std::string& name) {
  train::TaskOptions o;
  o.seed = 3;
  o.length = name == "mqar" ? 4 : 6;
  return train::make_task(name, o);
}

// The value after `key` among the first `pairs` pairs of `row` (-1 when absent).
std::int64_t value_of(const std::vector<std::int64_t>& row, std::int64_t pairs, std::int64_t key) {
  for (std::int64_t j = 0; j < pairs; ++j)
    if (row[static_cast<std::size_t>(2 * j)] == key)
      return row[static_cast<std::size_t>(2 * j + 1)];
  return -1;
}

std::vector<std::int64_t> row_of(const hg::Tensor& t, std::int64_t i) {
  const std::vector<std::int64_t> all = t.to_vector<std::int64_t>();
  const std::int64_t n = t.size(1);
  return {all.begin() + i * n, all.begin() + (i + 1) * n};
}

// The positions where two rows differ.
std::vector<std::int64_t> differences(const std::vector<std::int64_t>& a,
                                      const std::vector<std::int64_t>& b) {
  std::vector<std::int64_t> at;
  for (std::size_t p = 0; p < a.size(); ++p)
    if (a[p] != b[p]) at.push_back(static_cast<std::int64_t>(p));
  return at;
}

struct Prompts {
  std::unique_ptr<train::Task> task;
  inspect::CorruptedPrompts p;
  std::int64_t pairs = 0;
};

Prompts prompts_of(const std::string& name, inspect::RecallCorruption kind) {
  Prompts out;
  out.task = recall_task(name);
  out.p =
      inspect::corrupt_recall(*out.task, out.task->batch(train::Split::validation, 0, 64), kind);
  out.pairs = name == "mqar" ? 4 : -1;
  return out;
}

}  // namespace

TEST_CASE("the query corruption changes the query's key and nothing before it") {
  for (const std::string name : {"associative_recall", "mqar"}) {
    CAPTURE(name);
    const Prompts s = prompts_of(name, inspect::RecallCorruption::query);
    const auto positions = s.p.position.to_vector<std::int64_t>();
    const auto answer = s.p.answer.to_vector<std::int64_t>();
    const auto wrong = s.p.wrong.to_vector<std::int64_t>();
    REQUIRE(s.p.clean.size(0) + s.p.dropped == 64);
    for (std::int64_t i = 0; i < s.p.clean.size(0); ++i) {
      const auto clean = row_of(s.p.clean, i), bad = row_of(s.p.corrupted, i);
      const std::int64_t pos = positions[static_cast<std::size_t>(i)];
      const std::int64_t pairs = s.pairs > 0 ? s.pairs : (pos - 1) / 2;
      const auto diff = differences(clean, bad);
      REQUIRE(!diff.empty());
      CHECK(diff.front() == pos);  // nothing before the scored position changes
      CHECK(value_of(clean, pairs, clean[static_cast<std::size_t>(pos)]) == answer[i]);
      CHECK(value_of(bad, pairs, bad[static_cast<std::size_t>(pos)]) == wrong[i]);
      CHECK(answer[i] != wrong[i]);
    }
  }
}

TEST_CASE("the context corruption keeps the query and swaps two keys of the context") {
  for (const std::string name : {"associative_recall", "mqar"}) {
    CAPTURE(name);
    const Prompts s = prompts_of(name, inspect::RecallCorruption::context);
    const auto positions = s.p.position.to_vector<std::int64_t>();
    const auto answer = s.p.answer.to_vector<std::int64_t>();
    const auto wrong = s.p.wrong.to_vector<std::int64_t>();
    REQUIRE(s.p.clean.size(0) > 32);
    for (std::int64_t i = 0; i < s.p.clean.size(0); ++i) {
      const auto clean = row_of(s.p.clean, i), bad = row_of(s.p.corrupted, i);
      const std::int64_t pos = positions[static_cast<std::size_t>(i)];
      const std::int64_t pairs = s.pairs > 0 ? s.pairs : (pos - 1) / 2;
      std::vector<std::int64_t> diff = differences(clean, bad);
      // associative_recall shows the answer after the query: it changes too, after `pos`.
      diff.erase(std::remove_if(diff.begin(), diff.end(), [&](std::int64_t p) { return p > pos; }),
                 diff.end());
      REQUIRE(diff.size() == 2);
      CHECK(diff[0] % 2 == 0);  // two keys (even positions of the context)
      CHECK(diff[1] % 2 == 0);
      CHECK(diff[1] < 2 * pairs);
      const auto at = [](std::int64_t p) { return static_cast<std::size_t>(p); };
      CHECK(clean[at(diff[0])] == bad[at(diff[1])]);  // swapped
      CHECK(clean[at(diff[1])] == bad[at(diff[0])]);
      CHECK(clean[at(pos)] == bad[at(pos)]);  // the query itself is the same
      CHECK(value_of(clean, pairs, clean[at(pos)]) == answer[i]);
      CHECK(value_of(bad, pairs, bad[at(pos)]) == wrong[i]);
    }
  }
}

TEST_CASE("corrupt_recall names the corruption and the task it refuses") {
  train::TaskOptions o;
  o.length = 4;
  const auto copy = train::make_task("copy", o);
  CHECK_THROWS_WITH_AS(inspect::corrupt_recall(*copy, copy->batch(train::Split::validation, 0, 4),
                                               inspect::RecallCorruption::context),
                       doctest::Contains("corrupt_recall (context)"), hg::ValueError);
  CHECK_THROWS_WITH_AS(inspect::corrupt_recall(*copy, copy->batch(train::Split::validation, 0, 4),
                                               inspect::RecallCorruption::query),
                       doctest::Contains("not 'copy'"), hg::ValueError);
  CHECK(inspect::parse_recall_corruption("context") == inspect::RecallCorruption::context);
  CHECK_THROWS_AS(inspect::parse_recall_corruption("keys"), hg::ValueError);
}

TEST_CASE("kept names each prompt's row in the batch, and only prompts without a choice drop") {
  for (const std::string name : {"associative_recall", "mqar"}) {
    CAPTURE(name);
    // associative_recall with 3 pairs over 3 symbols: a prompt whose keys all carry the
    // query's value occurs (32 of 512), and is left out.
    train::TaskOptions o;
    o.seed = 3;
    o.length = name == "mqar" ? 4 : 3;
    o.alphabet = name == "mqar" ? 0 : 3;
    const std::unique_ptr<train::Task> task = train::make_task(name, o);
    const train::Batch batch = task->batch(train::Split::validation, 0, 512);
    const inspect::CorruptedPrompts p =
        inspect::corrupt_recall(*task, batch, inspect::RecallCorruption::query);
    const auto kept = p.kept.to_vector<std::int64_t>();
    REQUIRE(p.kept.shape() == hg::Shape{p.clean.size(0)});
    REQUIRE(static_cast<std::int64_t>(kept.size()) + p.dropped == 512);
    if (name == "associative_recall") REQUIRE(p.dropped > 0);
    for (std::size_t i = 0; i < kept.size(); ++i) {
      CHECK(row_of(batch.tokens, kept[i]) == row_of(p.clean, static_cast<std::int64_t>(i)));
      if (i > 0) CHECK(kept[i] > kept[i - 1]);
    }
    // A row left out: every pair before the query carries one value (nothing to swap to).
    const auto targets = batch.targets.to_vector<std::int64_t>();
    const std::int64_t t = batch.tokens.size(1);
    for (std::int64_t r = 0, k = 0; r < 512; ++r) {
      if (k < static_cast<std::int64_t>(kept.size()) && kept[static_cast<std::size_t>(k)] == r) {
        ++k;
        continue;
      }
      const auto row = row_of(batch.tokens, r);
      std::int64_t first = 0;
      while (targets[static_cast<std::size_t>(r * t + first)] == train::kIgnoreIndex) ++first;
      const std::int64_t pairs = name == "mqar" ? 4 : (first - 1) / 2;
      for (std::int64_t j = 1; j < pairs; ++j)
        CHECK(row[static_cast<std::size_t>(2 * j + 1)] == row[1]);
    }
  }
}
