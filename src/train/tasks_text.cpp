// char_lm: character-level language modelling on a real corpus (text_corpus.hpp reads and
// splits it; the layout is in include/headgrad/train/tasks.hpp), its baselines, and the
// induction probe of Olsson et al. that any token task can be measured on.
//
// Every batch: tokens (B, T) int64, a window of T ids of the split's stream from a uniform
// start, and targets (B, T) int64, the same window shifted by one (every position scored;
// key_padding_mask undefined). Built from one vector each.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <mutex>
#include <numeric>
#include <unordered_map>
#include <utility>
#include <vector>

#include "headgrad/core/error.hpp"
#include "tasks_detail.hpp"
#include "text_corpus.hpp"

namespace headgrad::train {
std::string default_corpus() {
  const char* chosen = std::getenv("HEADGRAD_CORPUS");
  return chosen != nullptr && *chosen != '\0' ? std::string(chosen) : std::string(kFortunesCorpus);
}

namespace detail {
namespace {

// Laplace-smoothed character statistics of the training stream: p(c) and p(c | previous)
// over the V = vocab_size - 1 ids a target can take (everything but PAD).
class CharStatistics {
 public:
  CharStatistics(const std::vector<std::int32_t>& train, std::int64_t vocab)
      : targets_(static_cast<double>(vocab - 1)), unigram_(vocab, 0.0), previous_(vocab, 0.0) {
    for (std::size_t j = 1; j < train.size(); ++j) {
      unigram_[train[j]] += 1;
      previous_[train[j - 1]] += 1;
      pairs_[key(train[j - 1], train[j])] += 1;
    }
    total_ = static_cast<double>(train.size() - 1);
    most_frequent_ = std::max_element(unigram_.begin(), unigram_.end()) - unigram_.begin();
    for (const auto& [k, n] : pairs_) {
      const std::int64_t prev = k / kKeyBase, next = k % kKeyBase;
      auto& best = best_next_[prev];
      const double best_n = best.second;
      if (n > best_n || (n == best_n && next < best.first)) best = {next, n};
    }
  }

  double unigram_loss(std::int64_t next) const {
    return -std::log((unigram_[next] + 1) / (total_ + targets_));
  }
  double bigram_loss(std::int64_t prev, std::int64_t next) const {
    const auto it = pairs_.find(key(prev, next));
    const double n = it == pairs_.end() ? 0.0 : it->second;
    return -std::log((n + 1) / (previous_[prev] + targets_));
  }
  std::int64_t unigram_guess() const { return most_frequent_; }
  // The most frequent successor of `prev` in training (the lowest id among ties); the
  // unigram guess after a character never followed by anything.
  std::int64_t bigram_guess(std::int64_t prev) const {
    const auto it = best_next_.find(prev);
    return it == best_next_.end() ? most_frequent_ : it->second.first;
  }

 private:
  static constexpr std::int64_t kKeyBase = std::int64_t{1} << 31;
  static std::int64_t key(std::int64_t prev, std::int64_t next) { return prev * kKeyBase + next; }

  double targets_, total_ = 0;
  std::vector<double> unigram_, previous_;
  std::unordered_map<std::int64_t, double> pairs_;
  std::unordered_map<std::int64_t, std::pair<std::int64_t, double>> best_next_;
  std::int64_t most_frequent_ = 0;
};

class CharLmTask : public Task {
 public:
  CharLmTask(std::string task_name, const TaskOptions& options)
      : name_(std::move(task_name)),
        seed_(options.seed),
        test_fraction_(options.test_fraction),
        context_(options.length) {
    require_validation_fraction(name(), options);
    require_option(context_ >= 1 && context_ <= 4096, name(), "length", std::to_string(context_),
                   "(the context T) must lie in [1, 4096]");
    const std::string path = options.corpus.empty() ? default_corpus() : options.corpus;
    corpus_ = shared_corpus(path, options.validation_fraction, options.test_fraction);
    check_split_size(Split::train);
    check_split_size(Split::validation);
    if (test_fraction_ > 0) check_split_size(Split::test);
  }

  std::string name() const override { return name_; }
  TaskKind kind() const override { return TaskKind::sequence; }
  std::int64_t vocab_size() const override { return corpus_->vocab_size(); }
  std::int64_t max_len() const override { return context_; }

  Batch batch(Split split, std::int64_t index, std::int64_t batch_size) const override {
    check_batch_args(*this, split, test_fraction_, index, batch_size);
    Generator gen(batch_seed(seed_, name(), split, index, batch_size));
    const std::vector<std::int32_t>& stream = corpus_->stream(split);
    const std::int64_t starts = static_cast<std::int64_t>(stream.size()) - context_;
    std::vector<std::int64_t> tokens(batch_size * context_), targets(tokens.size());
    for (std::int64_t b = 0; b < batch_size; ++b) {
      const std::int64_t start = uniform_int(gen, starts);
      std::copy_n(stream.begin() + start, context_, tokens.begin() + b * context_);
      std::copy_n(stream.begin() + start + 1, context_, targets.begin() + b * context_);
    }
    Batch out;
    out.tokens = from_vector(tokens, {batch_size, context_});
    out.targets = from_vector(targets, {batch_size, context_});
    return out;
  }

  std::vector<Baseline> baselines(Split split, std::int64_t batches,
                                  std::int64_t batch_size) const override {
    std::call_once(statistics_once_, [this] {
      statistics_ = std::make_unique<CharStatistics>(corpus_->stream(Split::train), vocab_size());
    });
    std::vector<Baseline> out = {chance_baseline(
        *this, split, batches, batch_size, vocab_size() - 1,
        "the " + std::to_string(vocab_size() - 1) + " ids a character can take (with SEP, UNK)")};
    out.push_back(ngram_baseline(split, batches, batch_size, false));
    out.push_back(ngram_baseline(split, batches, batch_size, true));
    return out;
  }

  std::vector<TokenLabel> token_labels(const std::vector<std::int64_t>& tokens) const override {
    std::vector<TokenLabel> out;
    for (const std::int64_t id : tokens) {
      const std::int64_t i = id - kFirstSymbolId;
      if (id == corpus_->unk_id())
        out.push_back({"UNK", "symbol"});
      else if (i < 0 || i >= static_cast<std::int64_t>(corpus_->alphabet.size()))
        out.push_back(special_label(id));
      else
        out.push_back({glyph(corpus_->alphabet[i]), "symbol"});
    }
    return out;
  }

 private:
  std::string name_;  // the task table's (tasks.cpp)
  static std::string glyph(char32_t c) {
    if (c == U' ') return "\u2423";   // open box
    if (c == U'\n') return "\u23CE";  // return symbol
    if (c == U'\t') return "\u21E5";  // rightwards arrow to bar
    return utf8(c);
  }

  void check_split_size(Split split) const {
    const std::int64_t size = static_cast<std::int64_t>(corpus_->stream(split).size());
    require_option(size > context_, name(), "length", std::to_string(context_),
                   "needs windows of length + 1 ids, but the " + to_string(split) +
                       " split of corpus " + corpus_->source + " holds " + std::to_string(size) +
                       " ids: use a shorter context, a larger corpus or other split fractions");
  }

  // unigram (bigram = false) or bigram: loss and accuracy, sampled on the batches and exact
  // over every window of the split (each target weighted by the windows that score it).
  Baseline ngram_baseline(Split split, std::int64_t batches, std::int64_t batch_size,
                          bool bigram) const {
    const CharStatistics& s = *statistics_;
    auto loss_of = [&](std::int64_t prev, std::int64_t next) {
      return bigram ? s.bigram_loss(prev, next) : s.unigram_loss(next);
    };
    auto hit = [&](std::int64_t prev, std::int64_t next) {
      return (bigram ? s.bigram_guess(prev) : s.unigram_guess()) == next ? 1.0 : 0.0;
    };
    Baseline b{bigram ? "bigram" : "unigram",
               bigram ? "the training documents' character bigrams, add-one smoothed: "
                        "p(next | previous character)"
                      : "the training documents' character frequencies, add-one smoothed"};
    double loss = 0, correct = 0, scored = 0;
    for (std::int64_t i = 0; i < batches; ++i) {
      const Batch data = batch(split, i, batch_size);
      const auto tokens = data.tokens.to_vector<std::int64_t>();
      const auto targets = data.targets.to_vector<std::int64_t>();
      for (std::size_t k = 0; k < tokens.size(); ++k) {
        loss += loss_of(tokens[k], targets[k]);
        correct += hit(tokens[k], targets[k]);
        scored += 1;
      }
    }
    if (scored > 0) b.loss = loss / scored, b.accuracy = correct / scored;
    const std::vector<std::int32_t>& stream = corpus_->stream(split);
    const std::int64_t last_start = static_cast<std::int64_t>(stream.size()) - context_ - 1;
    double exact_loss = 0, exact_correct = 0, weights = 0;
    for (std::int64_t j = 1; j < static_cast<std::int64_t>(stream.size()); ++j) {
      const double w = static_cast<double>(std::min(j - 1, last_start) -
                                           std::max<std::int64_t>(0, j - context_) + 1);
      if (w <= 0) continue;
      exact_loss += w * loss_of(stream[j - 1], stream[j]);
      exact_correct += w * hit(stream[j - 1], stream[j]);
      weights += w;
    }
    b.exact_loss = exact_loss / weights;
    b.exact_accuracy = exact_correct / weights;
    return b;
  }

  std::uint64_t seed_;
  double test_fraction_;
  std::int64_t context_;
  std::shared_ptr<const TextCorpus> corpus_;
  // Built by the first baselines() call (a pass over the training stream).
  mutable std::once_flag statistics_once_;
  mutable std::unique_ptr<const CharStatistics> statistics_;
};

}  // namespace

std::unique_ptr<Task> make_char_lm_task(const std::string& name, const TaskOptions& options) {
  return std::make_unique<CharLmTask>(name, options);
}

}  // namespace detail

Batch induction_probe(const Task& task, std::int64_t half, std::int64_t batch_size,
                      std::uint64_t seed) {
  const std::int64_t symbols = task.vocab_size() - kFirstSymbolId;
  if (task.kind() == TaskKind::regression)
    throw ValueError("induction_probe: task " + task.name() + " has no tokens (regression)");
  if (half < 1 || half > symbols || batch_size < 1)
    throw ValueError("induction_probe(" + task.name() + "): half = " + std::to_string(half) +
                     " must lie in [1, " + std::to_string(symbols) +
                     "] (distinct symbols per half) and batch_size = " +
                     std::to_string(batch_size) + " must be at least 1");
  Generator gen(detail::hash_combine(detail::hash_name("induction_probe " + task.name()), seed));
  const std::int64_t length = 2 * half;
  std::vector<std::int64_t> tokens(batch_size * length), targets(tokens.size(), kIgnoreIndex);
  std::vector<std::int64_t> ids(symbols);
  for (std::int64_t b = 0; b < batch_size; ++b) {
    std::iota(ids.begin(), ids.end(), kFirstSymbolId);
    for (std::int64_t i = 0; i < half; ++i)  // a partial Fisher-Yates shuffle
      std::swap(ids[i], ids[i + detail::uniform_int(gen, symbols - i)]);
    std::int64_t* row = tokens.data() + b * length;
    std::copy_n(ids.begin(), half, row);
    std::copy_n(ids.begin(), half, row + half);
    for (std::int64_t t = half; t + 1 < length; ++t) targets[b * length + t] = row[t + 1];
  }
  Batch out;
  out.tokens = from_vector(tokens, {batch_size, length});
  out.targets = from_vector(targets, {batch_size, length});
  return out;
}

}  // namespace headgrad::train
