// Tests of the synthetic tasks (include/headgrad/train/tasks.hpp): shapes and dtypes,
// determinism, targets re-derived in the test by decoding the tokens with the documented
// layouts, padding, the modular addition split, class balance, the fusion task's
// single-modality baselines, validation overlap, errors and generation speed.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <time.h>

#include "headgrad/headgrad.hpp"

using namespace headgrad;
using namespace headgrad::train;

namespace {

using Ids = std::vector<std::int64_t>;

// One batch as plain vectors, rows of the (B, T) tensors split out.
struct Rows {
  std::int64_t batch_size = 0, max_len = 0;
  std::vector<Ids> tokens, targets;        // targets: (B, T) rows, or one label per example
  std::vector<std::vector<bool>> padding;  // empty when the mask is undefined
  std::vector<std::vector<float>> features;
  Ids labels;
};

Rows rows_of(const Batch& batch) {
  Rows r;
  r.batch_size = batch.tokens.shape()[0];
  r.max_len = batch.tokens.shape()[1];
  const auto split = [&](const auto& flat, auto& out, std::int64_t width) {
    for (std::int64_t b = 0; b < r.batch_size; ++b)
      out.emplace_back(flat.begin() + b * width, flat.begin() + (b + 1) * width);
  };
  split(batch.tokens.to_vector<std::int64_t>(), r.tokens, r.max_len);
  if (batch.targets.dim() == 2)
    split(batch.targets.to_vector<std::int64_t>(), r.targets, r.max_len);
  else
    r.labels = batch.targets.to_vector<std::int64_t>();
  if (batch.key_padding_mask.defined())
    split(batch.key_padding_mask.to_vector<bool>(), r.padding, r.max_len);
  if (batch.features.defined())
    split(batch.features.to_vector<float>(), r.features, batch.features.shape()[1]);
  return r;
}

bool same_tensor(const Tensor& a, const Tensor& b) {
  if (a.defined() != b.defined()) return false;
  if (!a.defined()) return true;
  return a.shape() == b.shape() && a.dtype() == b.dtype() &&
         a.to_vector<double>() == b.to_vector<double>();
}

bool same_batch(const Batch& a, const Batch& b) {
  return same_tensor(a.tokens, b.tokens) && same_tensor(a.targets, b.targets) &&
         same_tensor(a.key_padding_mask, b.key_padding_mask) &&
         same_tensor(a.features, b.features) && same_tensor(a.inputs, b.inputs) &&
         same_tensor(a.target_mask, b.target_mask);
}

// The position of the first SEP (id 1) in a row, or -1.
std::int64_t find_sep(const Ids& row) {
  for (std::size_t t = 0; t < row.size(); ++t)
    if (row[t] == 1) return static_cast<std::int64_t>(t);
  return -1;
}

// Checks the padding of a row whose real tokens are [0, used): PAD (0) and mask true after,
// no PAD and mask false before. `mask` may be empty (then the row must be full).
void check_padding(const Ids& row, const std::vector<bool>& mask, std::int64_t used) {
  const auto t_max = static_cast<std::int64_t>(row.size());
  if (mask.empty()) REQUIRE(used == t_max);
  for (std::int64_t t = 0; t < t_max; ++t) {
    CAPTURE(t);
    CHECK((row[t] == 0) == (t >= used));
    if (!mask.empty()) CHECK(mask[t] == (t >= used));
  }
}

// char_classification's documented rule, on letters (token id - 2), and fusion's text signal.
bool has_bigram(const Ids& letters) {
  for (std::size_t i = 0; i + 1 < letters.size(); ++i)
    if (letters[i] == 0 && letters[i + 1] == 1) return true;
  return false;
}

// The letters of a classification row: the ids before the first PAD, minus 2.
Ids letters_of(const Ids& row) {
  Ids letters;
  for (std::int64_t id : row) {
    if (id == 0) break;
    letters.push_back(id - 2);
  }
  return letters;
}

}  // namespace

TEST_CASE("every task builds by name with the documented kind, sizes, shapes and dtypes") {
  const std::int64_t B = 5;
  struct Expected {
    std::string name;
    TaskKind kind;
    std::int64_t vocab, max_len, classes, features;
    bool mask;
  };
  // Defaults: length 8, alphabet 10 (sequence) / 26 (strings), modulus 31, 4 features.
  const std::vector<Expected> expected = {
      {"copy", TaskKind::sequence, 12, 17, 0, 0, false},
      {"reverse", TaskKind::sequence, 12, 17, 0, 0, false},
      {"sort", TaskKind::sequence, 12, 17, 0, 0, false},
      {"associative_recall", TaskKind::sequence, 22, 19, 0, 0, false},
      {"modular_addition", TaskKind::sequence, 34, 5, 0, 0, false},
      {"mqar", TaskKind::sequence, 66, 32, 0, 0, false},  // K = 8, T = 4K, A = 4K
      {"char_classification", TaskKind::classification, 28, 8, 2, 0, true},
      {"fusion", TaskKind::classification, 28, 8, 2, 4, true},
  };
  // Regression tasks: vocab is F_out, `features` here F_in (d = 16 points of
  // nearest_neighbour, D + 1 = 5 input coordinates of d_retrieval, one target number).
  const std::vector<Expected> regression = {
      {"nearest_neighbour", TaskKind::regression, 16, 8, 0, 16, false},
      {"d_retrieval", TaskKind::regression, 1, 9, 0, 5, true},
  };
  // char_lm (text): every document holds the 10 letters a..j and the space, so the
  // vocabulary is those 11 code points + PAD, SEP and UNK; T = length.
  REQUIRE(task_names().size() == expected.size() + regression.size() + 1);
  {
    const auto path = std::filesystem::temp_directory_path() / "headgrad_test_tasks_corpus";
    {
      std::ofstream out(path);
      for (int d = 0; d < 300; ++d) out << "abc defg hij " << std::string(d % 5, 'a') << "\n%\n";
    }
    auto task = make_task("char_lm", TaskOptions{}.with_corpus(path.string()));
    std::filesystem::remove(path);
    CHECK(task->kind() == TaskKind::sequence);
    CHECK(task->vocab_size() == 14);
    CHECK(task->max_len() == 8);
    const Batch batch = task->batch(Split::validation, 3, B);
    CHECK(batch.tokens.shape() == Shape{B, 8});
    CHECK(batch.targets.shape() == Shape{B, 8});
    CHECK_FALSE(batch.key_padding_mask.defined());
  }
  for (const auto& e : regression) {
    CAPTURE(e.name);
    auto task = make_task(e.name, TaskOptions{});
    CHECK(task->name() == e.name);
    CHECK(task->kind() == e.kind);
    CHECK(task->vocab_size() == e.vocab);
    CHECK(task->max_len() == e.max_len);
    CHECK(task->input_dim() == e.features);
    CHECK(task->num_classes() == 0);
    CHECK(task->num_features() == 0);
    for (Split split : {Split::train, Split::validation}) {
      const Batch batch = task->batch(split, 3, B);
      CHECK(batch.size() == B);
      CHECK_FALSE(batch.tokens.defined());
      CHECK_FALSE(batch.key_padding_mask.defined());
      CHECK(batch.inputs.shape() == Shape{B, e.max_len, e.features});
      CHECK(batch.inputs.dtype() == kFloat32);
      CHECK(batch.targets.shape() == Shape{B, e.max_len, e.vocab});
      CHECK(batch.targets.dtype() == kFloat32);
      REQUIRE(batch.target_mask.defined() == e.mask);
      if (e.mask) CHECK(batch.target_mask.shape() == Shape{B, e.max_len});
    }
  }
  for (const auto& e : expected) {
    CAPTURE(e.name);
    auto task = make_task(e.name, TaskOptions{});
    CHECK(task->name() == e.name);
    CHECK(task->kind() == e.kind);
    CHECK(task->vocab_size() == e.vocab);
    CHECK(task->max_len() == e.max_len);
    CHECK(task->num_classes() == e.classes);
    CHECK(task->num_features() == e.features);
    CHECK(task->input_dim() == 0);
    for (Split split : {Split::train, Split::validation}) {
      const Batch batch = task->batch(split, 3, B);
      CHECK(batch.size() == B);
      CHECK_FALSE(batch.inputs.defined());
      CHECK_FALSE(batch.target_mask.defined());
      CHECK(batch.tokens.shape() == Shape{B, e.max_len});
      CHECK(batch.tokens.dtype() == kInt64);
      CHECK(batch.targets.dtype() == kInt64);
      if (e.kind == TaskKind::sequence)
        CHECK(batch.targets.shape() == Shape{B, e.max_len});
      else
        CHECK(batch.targets.shape() == Shape{B});
      REQUIRE(batch.key_padding_mask.defined() == e.mask);
      if (e.mask) {
        CHECK(batch.key_padding_mask.shape() == Shape{B, e.max_len});
        CHECK(batch.key_padding_mask.dtype() == kBool);
      }
      REQUIRE(batch.features.defined() == (e.features > 0));
      if (e.features > 0) {
        CHECK(batch.features.shape() == Shape{B, e.features});
        CHECK(batch.features.dtype() == kFloat32);
      }
      for (std::int64_t id : batch.tokens.to_vector<std::int64_t>()) {
        CHECK(id >= 0);
        CHECK(id < e.vocab);
      }
      for (std::int64_t y : batch.targets.to_vector<std::int64_t>())
        CHECK((y == -100 || (y >= 0 && y < (e.classes > 0 ? e.classes : e.vocab))));
    }
  }
  // Variable lengths give sequence tasks a mask.
  auto copy = make_task("copy", TaskOptions{}.with_min_length(2));
  CHECK(copy->batch(Split::train, 0, B).key_padding_mask.shape() == Shape{B, 17});
}

TEST_CASE("a batch is a pure function of seed, split, index and batch size") {
  const TaskOptions options = TaskOptions{}.with_seed(42).with_min_length(3);
  for (const auto& name : task_names()) {
    CAPTURE(name);
    auto a = make_task(name, options);
    auto b = make_task(name, options);  // a separate object: no hidden state shared
    // Interleaved calls in a different order still give the same batches.
    const Batch a7 = a->batch(Split::train, 7, 16);
    a->batch(Split::validation, 2, 16);
    b->batch(Split::train, 8, 16);
    CHECK(same_batch(a7, b->batch(Split::train, 7, 16)));
    CHECK(same_batch(a->batch(Split::validation, 7, 16), b->batch(Split::validation, 7, 16)));
    CHECK_FALSE(same_batch(a7, a->batch(Split::train, 8, 16)));
    CHECK_FALSE(same_batch(a7, a->batch(Split::validation, 7, 16)));
    auto other_seed = make_task(name, TaskOptions(options).with_seed(43));
    CHECK_FALSE(same_batch(a7, other_seed->batch(Split::train, 7, 16)));
  }
}

TEST_CASE("copy, reverse and sort answers and targets follow from decoding the prompt") {
  for (std::int64_t min_length : {0, 1}) {  // fixed length 6, then lengths 1..6
    for (const std::string name : {"copy", "reverse", "sort"}) {
      CAPTURE(name);
      CAPTURE(min_length);
      const auto options =
          TaskOptions{}.with_length(6).with_alphabet(5).with_min_length(min_length);
      auto task = make_task(name, options);
      REQUIRE(task->max_len() == 13);
      std::set<std::int64_t> lengths;
      for (std::int64_t index = 0; index < 20; ++index) {
        const Rows r = rows_of(task->batch(Split::train, index, 16));
        for (std::int64_t b = 0; b < r.batch_size; ++b) {
          const Ids& row = r.tokens[b];
          const std::int64_t n = find_sep(row);  // the prompt is row[0, n)
          REQUIRE(n >= 1);
          lengths.insert(n);
          check_padding(row, r.padding.empty() ? std::vector<bool>{} : r.padding[b], 2 * n + 1);
          const Ids x(row.begin(), row.begin() + n);
          const Ids y(row.begin() + n + 1, row.begin() + 2 * n + 1);
          for (std::int64_t id : x) CHECK((id >= 2 && id < 7));
          Ids expected(n);
          for (std::int64_t i = 0; i < n; ++i)
            expected[i] = name == "reverse" ? x[n - 1 - i] : x[i];
          if (name == "sort") {
            // A sorted permutation: symbol counts match and the answer never decreases.
            for (std::int64_t s = 2; s < 7; ++s)
              CHECK(std::count(x.begin(), x.end(), s) == std::count(y.begin(), y.end(), s));
            for (std::int64_t i = 1; i < n; ++i) CHECK(y[i - 1] <= y[i]);
          } else {
            CHECK(y == expected);
          }
          // Position t predicts y_{t-n+1} for t in [n, 2n); -100 everywhere else.
          for (std::int64_t t = 0; t < r.max_len; ++t) {
            CAPTURE(t);
            if (t >= n && t < 2 * n)
              CHECK(r.targets[b][t] == y[t - n]);
            else
              CHECK(r.targets[b][t] == -100);
          }
        }
      }
      if (min_length == 0)
        CHECK(lengths == std::set<std::int64_t>{6});
      else
        CHECK(lengths == std::set<std::int64_t>{1, 2, 3, 4, 5, 6});
    }
  }
}

TEST_CASE("associative recall scores only the value of the queried key") {
  const auto options = TaskOptions{}.with_length(5).with_min_length(2).with_alphabet(6);
  auto task = make_task("associative_recall", options);
  REQUIRE(task->max_len() == 13);
  REQUIRE(task->vocab_size() == 14);
  std::map<std::int64_t, std::int64_t> query_slot_counts;
  for (std::int64_t index = 0; index < 30; ++index) {
    const Rows r = rows_of(task->batch(Split::validation, index, 16));
    for (std::int64_t b = 0; b < r.batch_size; ++b) {
      const Ids& row = r.tokens[b];
      const std::int64_t sep = find_sep(row);
      REQUIRE(sep % 2 == 0);
      const std::int64_t n = sep / 2;
      REQUIRE((n >= 2 && n <= 5));
      check_padding(row, r.padding[b], 2 * n + 3);
      std::map<std::int64_t, std::int64_t> value_of;
      for (std::int64_t i = 0; i < n; ++i) {
        const std::int64_t key = row[2 * i], value = row[2 * i + 1];
        CHECK((key >= 2 && key < 8));
        CHECK((value >= 8 && value < 14));
        CHECK(value_of.count(key) == 0);  // distinct keys
        value_of[key] = value;
      }
      const std::int64_t query = row[2 * n + 1];
      REQUIRE(value_of.count(query) == 1);
      CHECK(row[2 * n + 2] == value_of[query]);
      for (std::int64_t i = 0; i < n; ++i)
        if (row[2 * i] == query) ++query_slot_counts[i];
      for (std::int64_t t = 0; t < r.max_len; ++t)
        CHECK(r.targets[b][t] == (t == 2 * n + 1 ? value_of[query] : -100));
    }
  }
  // The query is drawn from every slot, not only the first or the last.
  for (std::int64_t i = 0; i < 5; ++i) CHECK(query_slot_counts[i] > 0);
}

TEST_CASE("modular addition answers a plus b mod p on disjoint covering splits") {
  const std::int64_t p = 7;
  const double fraction = 0.3;
  const auto options = TaskOptions{}.with_modulus(p).with_validation_fraction(fraction);
  auto task = make_task("modular_addition", options);
  REQUIRE(task->max_len() == 5);
  REQUIRE(task->vocab_size() == p + 3);
  const auto decode = [&](const Rows& r, std::set<std::int64_t>& pairs) {
    for (std::int64_t b = 0; b < r.batch_size; ++b) {
      const Ids& row = r.tokens[b];
      const std::int64_t a = row[0] - 2, c = row[2] - 2;
      REQUIRE((a >= 0 && a < p && c >= 0 && c < p));
      CHECK(row[1] == p + 2);
      CHECK(row[3] == 1);
      CHECK(row[4] == 2 + (a + c) % p);
      CHECK(r.targets[b] == Ids{-100, -100, -100, 2 + (a + c) % p, -100});
      pairs.insert(a * p + c);
    }
  };
  // round(0.3 * 49) = 15 held-out pairs: batches of 4 cover them in ceil(15 / 4) = 4.
  const std::int64_t held_out = 15;
  std::set<std::int64_t> validation, train;
  for (std::int64_t index = 0; index < 4; ++index)
    decode(rows_of(task->batch(Split::validation, index, 4)), validation);
  CHECK(validation.size() == held_out);
  std::set<std::int64_t> again;  // batch 4 wraps around to the start
  decode(rows_of(task->batch(Split::validation, 4, 4)), again);
  CHECK(again.size() == 4);
  for (std::int64_t index = 0; index < 50; ++index)
    decode(rows_of(task->batch(Split::train, index, 64)), train);
  CHECK(train.size() == p * p - held_out);  // 3200 draws from 34 pairs reach them all
  for (std::int64_t pair : train) CHECK(validation.count(pair) == 0);
  std::set<std::int64_t> all = train;
  all.insert(validation.begin(), validation.end());
  CHECK(all.size() == p * p);
  // The split depends on the seed.
  auto other = make_task("modular_addition", TaskOptions(options).with_seed(1));
  std::set<std::int64_t> other_validation;
  for (std::int64_t index = 0; index < 4; ++index)
    decode(rows_of(other->batch(Split::validation, index, 4)), other_validation);
  CHECK(other_validation.size() == held_out);
  CHECK(other_validation != validation);
}

TEST_CASE("char classification labels follow the documented rule with balanced classes") {
  struct Config {
    TaskOptions options;
    std::int64_t alphabet, min_length, length;
  };
  const std::vector<Config> configs = {
      {TaskOptions{}.with_seed(5), 26, 4, 8},  // the defaults
      {TaskOptions{}.with_length(12).with_min_length(6).with_alphabet(8).with_seed(5), 8, 6, 12},
  };
  for (const auto& config : configs) {
    const std::int64_t A = config.alphabet;
    CAPTURE(A);
    auto task = make_task("char_classification", config.options);
    std::int64_t positives = 0, total = 0, first_agrees = 0, signal_agrees = 0;
    std::set<std::int64_t> lengths;
    for (std::int64_t index = 0; index < 100; ++index) {
      const Rows r = rows_of(task->batch(Split::train, index, 64));
      for (std::int64_t b = 0; b < r.batch_size; ++b) {
        const Ids letters = letters_of(r.tokens[b]);
        const auto n = static_cast<std::int64_t>(letters.size());
        REQUIRE((n >= config.min_length && n <= config.length));
        lengths.insert(n);
        check_padding(r.tokens[b], r.padding[b], n);
        for (std::int64_t l : letters) CHECK((l >= 0 && l < A));
        const bool first = letters.front() < A / 2;
        const bool signal = has_bigram(letters) || letters.back() == A - 1;
        const std::int64_t label = first != signal ? 1 : 0;
        CHECK(r.labels[b] == label);
        positives += label;
        first_agrees += (first == (label == 1));
        signal_agrees += (signal == (label == 1));
        ++total;
      }
    }
    CHECK(static_cast<std::int64_t>(lengths.size()) == config.length - config.min_length + 1);
    const double balance = static_cast<double>(positives) / total;
    const double first_only = static_cast<double>(first_agrees) / total;
    const double signal_only = static_cast<double>(signal_agrees) / total;
    MESSAGE("char_classification A=" << A << ": positive fraction " << balance
                                     << ", first-letter rule " << first_only
                                     << ", second-signal rule " << signal_only);
    // 6400 examples: the standard error of a fair coin is 0.6%.
    CHECK(std::abs(balance - 0.5) < 0.03);
    CHECK(std::abs(first_only - 0.5) < 0.03);  // one signal alone is a coin flip
    CHECK(std::abs(signal_only - 0.5) < 0.03);
  }
}

TEST_CASE("fusion labels need both modalities: one alone is near chance, both exact") {
  const auto options = TaskOptions{}.with_length(10).with_num_features(3).with_seed(9);
  auto task = make_task("fusion", options);
  // Accuracy of the best rule that sees a single boolean signal: the majority label in
  // each of its two groups (so a signal and its negation are both covered).
  struct Counts {
    std::int64_t n[2][2] = {{0, 0}, {0, 0}};  // [signal][label]
    double best(std::int64_t total) const {
      return static_cast<double>(std::max(n[0][0], n[0][1]) + std::max(n[1][0], n[1][1])) / total;
    }
  };
  Counts by_text, by_feature, by_other_feature;
  std::int64_t total = 0, exact = 0, positives = 0;
  for (std::int64_t index = 0; index < 100; ++index) {
    const Rows r = rows_of(task->batch(Split::train, index, 64));
    for (std::int64_t b = 0; b < r.batch_size; ++b) {
      const Ids letters = letters_of(r.tokens[b]);
      check_padding(r.tokens[b], r.padding[b], static_cast<std::int64_t>(letters.size()));
      REQUIRE(r.features[b].size() == 3);
      const bool text = has_bigram(letters);
      const bool feature = r.features[b][0] > 0;
      const std::int64_t label = r.labels[b];
      exact += (label == (text != feature ? 1 : 0));
      positives += label;
      ++by_text.n[text][label];
      ++by_feature.n[feature][label];
      ++by_other_feature.n[r.features[b][1] > 0][label];
      ++total;
    }
  }
  const double text_only = by_text.best(total), feature_only = by_feature.best(total);
  MESSAGE("fusion: both modalities "
          << static_cast<double>(exact) / total << ", text only " << text_only << ", feature only "
          << feature_only << ", positive fraction " << static_cast<double>(positives) / total);
  CHECK(exact == total);
  CHECK(text_only <= 0.75);
  CHECK(feature_only <= 0.75);
  CHECK(text_only < 0.53);  // independent fair coins: 50% up to sampling noise
  CHECK(feature_only < 0.53);
  CHECK(by_other_feature.best(total) < 0.53);
  CHECK(std::abs(static_cast<double>(positives) / total - 0.5) < 0.03);
}

TEST_CASE("validation examples never occur in training, even in small example spaces") {
  // How many of the token rows of `count` batches of `first` also occur among the rows of
  // 100 training batches of 64.
  const auto repeats = [](const Task& task, Split first, std::int64_t start, std::int64_t count) {
    std::set<Ids> train;
    for (std::int64_t index = 0; index < 100; ++index)
      for (const Ids& row : rows_of(task.batch(Split::train, index, 64)).tokens) train.insert(row);
    std::int64_t overlap = 0;
    for (std::int64_t index = start; index < start + count; ++index)
      for (const Ids& row : rows_of(task.batch(first, index, 64)).tokens)
        overlap += static_cast<std::int64_t>(train.count(row));
    return overlap;
  };
  const std::vector<std::pair<std::string, TaskOptions>> cases = {
      {"copy", TaskOptions{}},
      {"reverse", TaskOptions{}.with_length(3).with_alphabet(4)},                  // 64 prompts
      {"sort", TaskOptions{}.with_length(4).with_min_length(1).with_alphabet(3)},  // 120
      {"associative_recall", TaskOptions{}.with_length(2).with_alphabet(3)},       // 108
      {"char_classification", TaskOptions{}},
      {"char_classification", TaskOptions{}.with_length(5).with_alphabet(3)},
      {"fusion", TaskOptions{}.with_length(4).with_alphabet(4).with_validation_fraction(0.5)},
  };
  for (const auto& [name, options] : cases) {
    CAPTURE(name);
    auto task = make_task(name, TaskOptions(options).with_seed(3));
    CHECK(repeats(*task, Split::validation, 0, 20) == 0);
    // The measure sees repeats where they happen: in a small space, training batches
    // repeat each other.
    if (options.alphabet != 0) CHECK(repeats(*task, Split::train, 100, 20) > 100);
  }
}

TEST_CASE("a space too small to split on both sides still yields batches") {
  // copy with length 1 over 2 symbols has 2 examples. Where the split puts both on one
  // side, the other side falls back to plain draws after the documented 10000 misses per
  // example, so its examples also occur on the first side.
  std::int64_t seeds_with_fallback = 0;
  for (std::uint64_t seed = 0; seed < 8; ++seed) {
    auto task = make_task("copy", TaskOptions{}.with_seed(seed).with_length(1).with_alphabet(2));
    std::set<Ids> seen[2];
    for (Split split : {Split::train, Split::validation}) {
      for (const Ids& row : rows_of(task->batch(split, 0, 16)).tokens) {
        CHECK((row[0] == 2 || row[0] == 3));
        CHECK(row == Ids{row[0], 1, row[0]});
        seen[split == Split::train].insert(row);
      }
    }
    bool shared = false;
    for (const Ids& row : seen[0]) shared = shared || seen[1].count(row) > 0;
    seeds_with_fallback += shared;
  }
  CHECK(seeds_with_fallback > 0);
}

TEST_CASE("unknown task names and unusable options throw ValueError") {
  try {
    make_task("addition", TaskOptions{});
    FAIL("no error for an unknown task");
  } catch (const ValueError& e) {
    const std::string message = e.what();
    CHECK(message.find("addition") != std::string::npos);
    for (const auto& name : task_names()) CHECK(message.find(name) != std::string::npos);
  }
  CHECK_THROWS_WITH_AS(make_task("associative_recall", TaskOptions{}.with_alphabet(4)),
                       doctest::Contains("alphabet"), ValueError);
  CHECK_THROWS_WITH_AS(make_task("copy", TaskOptions{}.with_min_length(9)),
                       doctest::Contains("min_length"), ValueError);
  CHECK_THROWS_WITH_AS(make_task("char_classification", TaskOptions{}.with_length(2)),
                       doctest::Contains("length"), ValueError);
  CHECK_THROWS_WITH_AS(make_task("modular_addition", TaskOptions{}.with_modulus(1)),
                       doctest::Contains("modulus"), ValueError);
  CHECK_THROWS_WITH_AS(make_task("modular_addition", TaskOptions{}.with_validation_fraction(1)),
                       doctest::Contains("validation_fraction"), ValueError);
  CHECK_THROWS_WITH_AS(make_task("fusion", TaskOptions{}.with_num_features(0)),
                       doctest::Contains("num_features"), ValueError);
  auto task = make_task("sort", TaskOptions{});
  CHECK_THROWS_WITH_AS(task->batch(Split::train, -1, 4), doctest::Contains("index"), ValueError);
  CHECK_THROWS_WITH_AS(task->batch(Split::train, 0, 0), doctest::Contains("batch_size"),
                       ValueError);
}

TEST_CASE("a batch too large for memory is a MemoryError naming the length, before allocating") {
  // length 10^8: a copy batch of 64 is (64, 2*10^8 + 1) int64, 95 GiB; it failed inside
  // std::vector with std::bad_alloc.
  set_max_tensor_bytes(std::size_t{1} << 30);
  for (const std::string name : {"copy", "associative_recall", "mqar", "char_classification",
                                 "nearest_neighbour", "d_retrieval"}) {
    CAPTURE(name);
    const auto task = make_task(name, TaskOptions{}.with_length(100'000'000));
    const std::string expected = name + ".batch: a batch of 64 examples";
    CHECK_THROWS_WITH_AS(task->batch(Split::train, 0, 64), doctest::Contains(expected.c_str()),
                         MemoryError);
    CHECK_THROWS_WITH_AS(task->batch(Split::train, 0, 64), doctest::Contains("length"),
                         MemoryError);
    CHECK_THROWS_WITH_AS(task->batch(Split::train, 0, 64), doctest::Contains("1 GiB"), MemoryError);
  }
  // batch_size alone can be too large as well.
  CHECK_THROWS_AS(make_task("copy", TaskOptions{})->batch(Split::train, 0, 1'000'000'000'000),
                  MemoryError);
  set_max_tensor_bytes(0);  // the default again
}
