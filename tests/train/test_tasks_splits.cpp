// Tests of the held-out splits of the synthetic tasks (include/headgrad/train/tasks.hpp):
// the test split is disjoint from validation and training, deterministic, leaves the
// validation split unchanged, and is an error when test_fraction is 0.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "headgrad/headgrad.hpp"

using namespace headgrad;
using namespace headgrad::train;

namespace {

using Ids = std::vector<std::int64_t>;

// The token rows of batches first..first+count-1 of a split.
std::set<Ids> token_rows(const Task& task, Split split, std::int64_t count,
                         std::int64_t batch_size = 64) {
  std::set<Ids> rows;
  for (std::int64_t index = 0; index < count; ++index) {
    const Batch batch = task.batch(split, index, batch_size);
    const auto flat = batch.tokens.to_vector<std::int64_t>();
    const std::int64_t width = batch.tokens.shape()[1];
    for (std::int64_t b = 0; b < batch_size; ++b)
      rows.emplace(flat.begin() + b * width, flat.begin() + (b + 1) * width);
  }
  return rows;
}

std::int64_t common(const std::set<Ids>& a, const std::set<Ids>& b) {
  std::int64_t n = 0;
  for (const Ids& row : a) n += static_cast<std::int64_t>(b.count(row));
  return n;
}

bool same_tensor(const Tensor& a, const Tensor& b) {
  if (a.defined() != b.defined()) return false;
  if (!a.defined()) return true;
  return a.shape() == b.shape() && a.to_vector<double>() == b.to_vector<double>();
}

bool same_batch(const Batch& a, const Batch& b) {
  return same_tensor(a.tokens, b.tokens) && same_tensor(a.targets, b.targets) &&
         same_tensor(a.key_padding_mask, b.key_padding_mask) && same_tensor(a.features, b.features);
}

}  // namespace

TEST_CASE("split names include test") {
  CHECK(to_string(Split::train) == "train");
  CHECK(to_string(Split::validation) == "validation");
  CHECK(to_string(Split::test) == "test");
}

TEST_CASE("hash-split tasks keep train and validation and test disjoint and covering") {
  // Small example spaces, so that every example shows up on its side within the draws and
  // an overlap would be seen: reverse has 4^3 = 64 prompts, sort with lengths 1..3 over 3
  // symbols has 3 + 9 + 27 = 39, associative_recall with 2 pairs of 3 keys and values
  // 3*2 * 9 * 2 = 108, char_classification with length 3 over 3 letters at most 27.
  struct Case {
    std::string name;
    TaskOptions options;
    std::int64_t space;  // examples in the space (0 = too large to count here)
  };
  const std::vector<Case> cases = {
      {"reverse", TaskOptions{}.with_length(3).with_alphabet(4), 64},
      {"sort", TaskOptions{}.with_length(3).with_min_length(1).with_alphabet(3), 39},
      {"associative_recall", TaskOptions{}.with_length(2).with_alphabet(3), 108},
      {"char_classification", TaskOptions{}.with_length(3).with_alphabet(3), 0},
      {"copy", TaskOptions{}, 0},
      {"fusion", TaskOptions{}.with_length(4).with_alphabet(4), 0},
  };
  for (const auto& c : cases) {
    CAPTURE(c.name);
    auto task = make_task(
        c.name,
        TaskOptions(c.options).with_seed(11).with_validation_fraction(0.3).with_test_fraction(0.3));
    const auto train = token_rows(*task, Split::train, 40);
    const auto validation = token_rows(*task, Split::validation, 20);
    const auto test = token_rows(*task, Split::test, 20);
    CHECK(!test.empty());
    CHECK(common(train, validation) == 0);
    CHECK(common(train, test) == 0);
    CHECK(common(validation, test) == 0);
    if (c.space > 0) {
      // Every example of the space lies on exactly one side, and each side holds roughly
      // its share (0.3, 0.3, 0.4 of the space; binomial spread at most sqrt(n/4)).
      CHECK(static_cast<std::int64_t>(train.size() + validation.size() + test.size()) == c.space);
      const double n = static_cast<double>(c.space), spread = 4 * std::sqrt(n / 4);
      CHECK(std::abs(static_cast<double>(test.size()) - 0.3 * n) <= spread);
      CHECK(std::abs(static_cast<double>(validation.size()) - 0.3 * n) <= spread);
    }
  }
}

TEST_CASE("test batches are deterministic and validation batches ignore test_fraction") {
  for (const auto& name : {"copy", "reverse", "sort", "associative_recall", "modular_addition",
                           "char_classification", "fusion"}) {
    CAPTURE(name);
    const TaskOptions base = TaskOptions{}.with_seed(5).with_min_length(3);
    auto with_test = make_task(name, TaskOptions(base).with_test_fraction(0.2));
    auto again = make_task(name, TaskOptions(base).with_test_fraction(0.2));
    auto without = make_task(name, base);
    CHECK(same_batch(with_test->batch(Split::test, 3, 16), again->batch(Split::test, 3, 16)));
    CHECK_FALSE(
        same_batch(with_test->batch(Split::test, 3, 16), with_test->batch(Split::test, 4, 16)));
    CHECK_FALSE(same_batch(with_test->batch(Split::test, 3, 16),
                           with_test->batch(Split::validation, 3, 16)));
    for (std::int64_t index : {0, 1, 7})
      CHECK(same_batch(with_test->batch(Split::validation, index, 16),
                       without->batch(Split::validation, index, 16)));
  }
}

TEST_CASE("modular addition takes the test pairs after the validation block") {
  const std::int64_t p = 7;
  const auto options = TaskOptions{}.with_modulus(p).with_validation_fraction(0.3);
  auto with_test = make_task("modular_addition", TaskOptions(options).with_test_fraction(0.2));
  auto without = make_task("modular_addition", options);
  const auto pairs = [&](const Task& task, Split split, std::int64_t batches, std::int64_t size) {
    std::set<std::int64_t> out;
    for (std::int64_t index = 0; index < batches; ++index) {
      const auto tokens = task.batch(split, index, size).tokens.to_vector<std::int64_t>();
      for (std::int64_t b = 0; b < size; ++b)
        out.insert((tokens[b * 5] - 2) * p + tokens[b * 5 + 2] - 2);
    }
    return out;
  };
  // round(0.3 * 49) = 15 validation pairs, round(0.2 * 49) = 10 test pairs, 24 training.
  const auto validation = pairs(*with_test, Split::validation, 1, 15);
  const auto test = pairs(*with_test, Split::test, 1, 10);
  const auto train = pairs(*with_test, Split::train, 50, 64);
  CHECK(validation.size() == 15);
  CHECK(test.size() == 10);
  CHECK(train.size() == 24);  // 3200 uniform draws from 24 pairs reach them all
  std::set<std::int64_t> all = train;
  all.insert(validation.begin(), validation.end());
  all.insert(test.begin(), test.end());
  CHECK(all.size() == p * p);
  CHECK(validation == pairs(*without, Split::validation, 1, 15));
  // A second pass over the test pairs repeats them in the same order.
  CHECK(same_batch(with_test->batch(Split::test, 0, 10), with_test->batch(Split::test, 1, 10)));
}

TEST_CASE("the test split without test_fraction and bad fractions throw ValueError") {
  for (const auto& name : {"copy", "associative_recall", "modular_addition", "fusion"}) {
    CAPTURE(name);
    auto task = make_task(name, TaskOptions{});
    try {
      task->batch(Split::test, 0, 4);
      FAIL("no error for the test split without test_fraction");
    } catch (const ValueError& e) {
      const std::string message = e.what();
      CHECK(message.find(name) != std::string::npos);
      CHECK(message.find("test_fraction") != std::string::npos);
    }
    CHECK_THROWS_WITH_AS(make_task(name, TaskOptions{}.with_test_fraction(-0.1)),
                         doctest::Contains("test_fraction"), ValueError);
    CHECK_THROWS_WITH_AS(make_task(name, TaskOptions{}.with_test_fraction(0.7)),
                         doctest::Contains("test_fraction"), ValueError);
  }
}
