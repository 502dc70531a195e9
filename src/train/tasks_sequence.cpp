// Sequence tasks for a decoder-only model: copy, reverse, sort, associative_recall and
// modular_addition (layouts in include/headgrad/train/tasks.hpp).
//
// Every batch: tokens (B, T) int64, targets (B, T) int64 with targets[t] = tokens[t + 1]
// at the positions that predict answer tokens and -100 elsewhere, key_padding_mask (B, T)
// bool when lengths vary. Each tensor is built from one vector.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>
#include <vector>

#include "headgrad/core/error.hpp"
#include "tasks_detail.hpp"

namespace headgrad::train::detail {
namespace {

// associative_recall's key-agnostic predictor, exactly, for a prompt of n pairs whose values
// are n independent uniform draws from A ids (tests/train/test_tasks_baselines.cpp checks
// both against a brute-force enumeration of every count vector). Beyond this length the
// exact values are not computed (NaN).
constexpr std::int64_t kMaxExactRecallLength = 32;

// E[-log(c_target / n)]: the target is one of the n values, and each of the other n - 1
// equals it with probability 1 / A, so c_target = 1 + Binomial(n - 1, 1 / A).
double recall_key_agnostic_loss(std::int64_t n, std::int64_t a) {
  const double p = 1.0 / static_cast<double>(a);
  double loss = 0;
  for (std::int64_t j = 0; j < n; ++j) {
    const double log_pmf = std::lgamma(static_cast<double>(n)) - std::lgamma(j + 1.0) -
                           std::lgamma(static_cast<double>(n - j)) + j * std::log(p) +
                           (n - 1 - j) * std::log1p(-p);
    loss -= std::exp(log_pmf) * std::log((j + 1.0) / static_cast<double>(n));
  }
  return loss;
}

// Coefficients 0..n of the product of two power series, truncated at degree n.
std::vector<double> times(const std::vector<double>& f, const std::vector<double>& g) {
  std::vector<double> out(f.size(), 0.0);
  for (std::size_t i = 0; i < f.size(); ++i)
    for (std::size_t j = 0; i + j < f.size(); ++j) out[i + j] += f[i] * g[j];
  return out;
}

// E[max_v c_v] / n: the accuracy is [target in M] / |M| with M the most frequent values,
// whose mean is E[c_max] / n. E[c_max] = sum_{k=1..n} (1 - P(c_max <= k - 1)), and
// P(c_max <= m) = n! [x^n] (sum_{j<=m} (x/A)^j / j!)^A, the counts being a multinomial.
double recall_key_agnostic_accuracy(std::int64_t n, std::int64_t a) {
  double expected_max = 0;
  for (std::int64_t k = 1; k <= n; ++k) {
    std::vector<double> term(static_cast<std::size_t>(n) + 1, 0.0), power(term.size(), 0.0);
    for (std::int64_t j = 0; j < k; ++j)
      term[j] = std::exp(-std::lgamma(j + 1.0) - j * std::log(static_cast<double>(a)));
    power[0] = 1.0;
    for (std::int64_t e = a; e > 0; e >>= 1) {  // power = term^A, by squaring
      if (e & 1) power = times(power, term);
      term = times(term, term);
    }
    expected_max += 1.0 - std::exp(std::lgamma(n + 1.0)) * power[n];
  }
  return expected_max / static_cast<double>(n);
}

// The shortest length of a sequence task: min_length, or `length` when it is 0.
std::int64_t resolve_min_length(const std::string& task, const TaskOptions& options) {
  const std::int64_t min_length = options.min_length == 0 ? options.length : options.min_length;
  require_option(min_length >= 1 && min_length <= options.length, task, "min_length",
                 std::to_string(options.min_length),
                 "must lie in [1, length = " + std::to_string(options.length) + "]");
  return min_length;
}

void require_length(const std::string& task, const TaskOptions& options) {
  require_option(options.length >= 1, task, "length", std::to_string(options.length),
                 "must be at least 1");
}

// The tensors of a sequence batch from its row-major buffers.
Batch make_sequence_batch(const std::vector<std::int64_t>& tokens,
                          const std::vector<std::int64_t>& targets,
                          const std::vector<bool>* padding, std::int64_t batch_size,
                          std::int64_t max_len) {
  Batch batch;
  batch.tokens = from_vector(tokens, {batch_size, max_len});
  batch.targets = from_vector(targets, {batch_size, max_len});
  if (padding) batch.key_padding_mask = from_vector(*padding, {batch_size, max_len});
  return batch;
}

// copy, reverse, sort: [x_1..x_n, SEP, y_1..y_n, PAD...], T = 2L + 1.
class SymbolSequenceTask : public Task {
 public:
  enum class Op { copy, reverse, sort };

  SymbolSequenceTask(std::string name, Op op, const TaskOptions& options)
      : name_(std::move(name)),
        op_(op),
        seed_(options.seed),
        test_fraction_(options.test_fraction),
        hash_split_(options.seed, name_, options.validation_fraction, options.test_fraction) {
    require_length(name_, options);
    require_validation_fraction(name_, options);
    length_ = options.length;
    min_length_ = resolve_min_length(name_, options);
    alphabet_ = options.alphabet == 0 ? 10 : options.alphabet;
    require_option(alphabet_ >= 2, name_, "alphabet", std::to_string(options.alphabet),
                   "must be at least 2 (or 0 for the default 10)");
  }

  std::string name() const override { return name_; }
  TaskKind kind() const override { return TaskKind::sequence; }
  std::vector<TokenLabel> token_labels(const std::vector<std::int64_t>& tokens) const override {
    std::vector<TokenLabel> out;
    for (const std::int64_t id : tokens) out.push_back(detail::letter_label(id));
    return out;
  }
  std::int64_t vocab_size() const override { return kFirstSymbolId + alphabet_; }
  std::int64_t max_len() const override { return 2 * length_ + 1; }

  std::vector<Baseline> baselines(Split split, std::int64_t batches,
                                  std::int64_t batch_size) const override {
    return {chance_baseline(*this, split, batches, batch_size, alphabet_,
                            "the " + std::to_string(alphabet_) + " symbols")};
  }

  Batch batch(Split split, std::int64_t index, std::int64_t batch_size) const override {
    check_batch_args(*this, split, test_fraction_, index, batch_size);
    Generator gen(batch_seed(seed_, name_, split, index, batch_size));
    const std::int64_t t_max = max_len();
    const bool variable = min_length_ < length_;
    std::vector<std::int64_t> tokens(batch_size * t_max, kPadId);
    std::vector<std::int64_t> targets(batch_size * t_max, kIgnoreIndex);
    std::vector<bool> padding(variable ? batch_size * t_max : 0, false);
    for (std::int64_t b = 0; b < batch_size; ++b) {
      std::int64_t* row = tokens.data() + b * t_max;
      std::int64_t n = 0;
      draw_on_side(hash_split_, split, row, t_max, [&](std::int64_t* r) {
        n = uniform_between(gen, min_length_, length_);
        for (std::int64_t i = 0; i < n; ++i) r[i] = kFirstSymbolId + uniform_int(gen, alphabet_);
        r[n] = kSepId;
        std::int64_t* answer = r + n + 1;
        std::copy(r, r + n, answer);
        if (op_ == Op::reverse) std::reverse(answer, answer + n);
        if (op_ == Op::sort) std::sort(answer, answer + n);
      });
      // Position t predicts tokens[t + 1]: SEP predicts y_1, y_{n-1} predicts y_n.
      for (std::int64_t t = n; t < 2 * n; ++t) targets[b * t_max + t] = row[t + 1];
      if (variable)
        for (std::int64_t t = 2 * n + 1; t < t_max; ++t) padding[b * t_max + t] = true;
    }
    return make_sequence_batch(tokens, targets, variable ? &padding : nullptr, batch_size, t_max);
  }

 private:
  std::string name_;
  Op op_;
  std::uint64_t seed_;
  double test_fraction_;
  HashSplit hash_split_;
  std::int64_t length_ = 0;
  std::int64_t min_length_ = 0;
  std::int64_t alphabet_ = 0;
};

// [k_1, v_1, ..., k_n, v_n, SEP, q, v(q), PAD...], T = 2L + 3; keys 2..A+1, values
// A+2..2A+1.
class AssociativeRecallTask : public Task {
 public:
  AssociativeRecallTask(std::string task_name, const TaskOptions& options)
      : name_(std::move(task_name)),
        seed_(options.seed),
        test_fraction_(options.test_fraction),
        hash_split_(options.seed, name(), options.validation_fraction, options.test_fraction) {
    require_length(name(), options);
    require_validation_fraction(name(), options);
    length_ = options.length;
    min_length_ = resolve_min_length(name(), options);
    alphabet_ = options.alphabet == 0 ? std::max<std::int64_t>(10, length_) : options.alphabet;
    require_option(alphabet_ >= length_, name(), "alphabet", std::to_string(options.alphabet),
                   "must be at least length = " + std::to_string(length_) +
                       " (distinct keys), or 0 for the default max(10, length)");
  }

  std::string name() const override { return name_; }
  TaskKind kind() const override { return TaskKind::sequence; }
  // The query is the key after SEP.
  std::vector<TokenLabel> token_labels(const std::vector<std::int64_t>& tokens) const override {
    const auto sep = std::find(tokens.begin(), tokens.end(), kSepId);
    return detail::key_value_labels(tokens, alphabet_,
                                    static_cast<std::size_t>(sep - tokens.begin()) + 1, false);
  }
  std::int64_t vocab_size() const override { return kFirstSymbolId + 2 * alphabet_; }
  std::int64_t max_len() const override { return 2 * length_ + 3; }

  std::vector<Baseline> baselines(Split split, std::int64_t batches,
                                  std::int64_t batch_size) const override {
    // key_agnostic: P(v) = c(v) / n from the prompt's value counts c; the argmax set M of
    // the most frequent values scores [target in M] / |M|.
    double loss = 0, accuracy = 0;
    std::int64_t scored = 0;
    const std::int64_t t_max = max_len();
    std::vector<std::int64_t> counts(2 * alphabet_ + kFirstSymbolId);
    for (std::int64_t i = 0; i < batches; ++i) {
      const auto tokens = batch(split, i, batch_size).tokens.to_vector<std::int64_t>();
      for (std::int64_t b = 0; b < batch_size; ++b) {
        const std::int64_t* row = tokens.data() + b * t_max;
        std::int64_t n = 0;
        while (row[2 * n] != kSepId) ++n;
        std::fill(counts.begin(), counts.end(), 0);
        std::int64_t top = 0;
        for (std::int64_t k = 0; k < n; ++k) top = std::max(top, ++counts[row[2 * k + 1]]);
        std::int64_t tied = 0;
        for (std::int64_t c : counts) tied += c == top;
        const std::int64_t target = row[2 * n + 2];
        loss -= std::log(static_cast<double>(counts[target]) / static_cast<double>(n));
        if (counts[target] == top) accuracy += 1.0 / static_cast<double>(tied);
        ++scored;
      }
    }
    Baseline key_agnostic{"key_agnostic",
                          "the prompt's value frequencies, ignoring the query's key"};
    if (length_ <= kMaxExactRecallLength) {
      // The prompt size n is uniform on [min_length, length].
      double exact_loss = 0, exact_accuracy = 0;
      for (std::int64_t n = min_length_; n <= length_; ++n) {
        exact_loss += recall_key_agnostic_loss(n, alphabet_);
        exact_accuracy += recall_key_agnostic_accuracy(n, alphabet_);
      }
      key_agnostic.exact_loss = exact_loss / static_cast<double>(length_ - min_length_ + 1);
      key_agnostic.exact_accuracy = exact_accuracy / static_cast<double>(length_ - min_length_ + 1);
    }
    if (scored > 0) {
      key_agnostic.loss = loss / static_cast<double>(scored);
      key_agnostic.accuracy = accuracy / static_cast<double>(scored);
    }
    return {chance_baseline(*this, split, batches, batch_size, alphabet_,
                            "the " + std::to_string(alphabet_) + " value ids"),
            key_agnostic};
  }

  Batch batch(Split split, std::int64_t index, std::int64_t batch_size) const override {
    check_batch_args(*this, split, test_fraction_, index, batch_size);
    Generator gen(batch_seed(seed_, name(), split, index, batch_size));
    const std::int64_t t_max = max_len();
    const bool variable = min_length_ < length_;
    std::vector<std::int64_t> tokens(batch_size * t_max, kPadId);
    std::vector<std::int64_t> targets(batch_size * t_max, kIgnoreIndex);
    std::vector<bool> padding(variable ? batch_size * t_max : 0, false);
    std::vector<std::int64_t> keys(alphabet_);
    const std::int64_t first_value = kFirstSymbolId + alphabet_;
    for (std::int64_t b = 0; b < batch_size; ++b) {
      std::int64_t* row = tokens.data() + b * t_max;
      std::int64_t n = 0;
      draw_on_side(hash_split_, split, row, t_max, [&](std::int64_t* r) {
        n = uniform_between(gen, min_length_, length_);
        // n distinct keys: the first n entries of a partial Fisher-Yates shuffle.
        std::iota(keys.begin(), keys.end(), kFirstSymbolId);
        for (std::int64_t i = 0; i < n; ++i)
          std::swap(keys[i], keys[i + uniform_int(gen, alphabet_ - i)]);
        for (std::int64_t i = 0; i < n; ++i) {
          r[2 * i] = keys[i];
          r[2 * i + 1] = first_value + uniform_int(gen, alphabet_);
        }
        const std::int64_t query = uniform_int(gen, n);
        r[2 * n] = kSepId;
        r[2 * n + 1] = r[2 * query];
        r[2 * n + 2] = r[2 * query + 1];
      });
      targets[b * t_max + 2 * n + 1] = row[2 * n + 2];
      if (variable)
        for (std::int64_t t = 2 * n + 3; t < t_max; ++t) padding[b * t_max + t] = true;
    }
    return make_sequence_batch(tokens, targets, variable ? &padding : nullptr, batch_size, t_max);
  }

 private:
  std::string name_;  // the task table's (tasks.cpp)
  std::uint64_t seed_;
  double test_fraction_;
  HashSplit hash_split_;
  std::int64_t length_ = 0;
  std::int64_t min_length_ = 0;
  std::int64_t alphabet_ = 0;
};

// [a, PLUS, b, SEP, (a + b) mod p], T = 5; numbers 2..p+1, PLUS = p + 2. The p*p pairs are
// split once into validation, test and training pairs.
class ModularAdditionTask : public Task {
 public:
  ModularAdditionTask(std::string task_name, const TaskOptions& options)
      : name_(std::move(task_name)),
        seed_(options.seed),
        test_fraction_(options.test_fraction),
        modulus_(options.modulus) {
    require_option(modulus_ >= 2 && modulus_ <= 1024, name(), "modulus", std::to_string(modulus_),
                   "must lie in [2, 1024]");
    const double fraction = options.validation_fraction;
    const std::int64_t pairs = modulus_ * modulus_;
    const auto held_out = static_cast<std::int64_t>(std::llround(fraction * pairs));
    require_option(
        fraction > 0 && fraction < 1 && held_out >= 1 && held_out < pairs, name(),
        "validation_fraction", std::to_string(fraction),
        "must hold out between 1 and p*p - 1 of the " + std::to_string(pairs) + " pairs");
    const auto tested = static_cast<std::int64_t>(std::llround(test_fraction_ * pairs));
    require_option(
        test_fraction_ == 0 || (test_fraction_ > 0 && tested >= 1 && held_out + tested < pairs),
        name(), "test_fraction", std::to_string(test_fraction_),
        "must be 0 or hold out at least 1 pair, leaving at least 1 of the " +
            std::to_string(pairs) + " pairs (" + std::to_string(held_out) +
            " validation) for training");
    // A permutation of the pair ids a * p + b, seeded by the task seed alone: validation
    // first, then test, then training.
    std::vector<std::int32_t> order(pairs);
    std::iota(order.begin(), order.end(), 0);
    Generator gen(hash_combine(seed_, hash_name("modular_addition/split")));
    for (std::int64_t i = pairs - 1; i > 0; --i)
      std::swap(order[i], order[uniform_int(gen, i + 1)]);
    validation_.assign(order.begin(), order.begin() + held_out);
    test_.assign(order.begin() + held_out, order.begin() + held_out + tested);
    train_.assign(order.begin() + held_out + tested, order.end());
  }

  std::string name() const override { return name_; }
  TaskKind kind() const override { return TaskKind::sequence; }
  // Numbers 0..p-1, PLUS as + and SEP as =.
  std::vector<TokenLabel> token_labels(const std::vector<std::int64_t>& tokens) const override {
    std::vector<TokenLabel> out;
    for (const std::int64_t id : tokens) {
      const std::int64_t n = id - kFirstSymbolId;
      if (id == kSepId)
        out.push_back({"=", "sep"});
      else if (n == modulus_)
        out.push_back({"+", "symbol"});
      else if (n >= 0 && n < modulus_)
        out.push_back({std::to_string(n), "symbol"});
      else
        out.push_back(detail::special_label(id));
    }
    return out;
  }
  std::int64_t vocab_size() const override { return kFirstSymbolId + modulus_ + 1; }
  std::int64_t max_len() const override { return 5; }

  std::vector<Baseline> baselines(Split split, std::int64_t batches,
                                  std::int64_t batch_size) const override {
    return {chance_baseline(*this, split, batches, batch_size, modulus_,
                            "the " + std::to_string(modulus_) + " residues")};
  }

  Batch batch(Split split, std::int64_t index, std::int64_t batch_size) const override {
    check_batch_args(*this, split, test_fraction_, index, batch_size);
    constexpr std::int64_t t_max = 5;
    std::vector<std::int64_t> tokens(batch_size * t_max);
    std::vector<std::int64_t> targets(batch_size * t_max, kIgnoreIndex);
    Generator gen(batch_seed(seed_, name(), split, index, batch_size));
    const std::vector<std::int32_t>& held = split == Split::test ? test_ : validation_;
    const auto held_out = static_cast<std::int64_t>(held.size());
    // Held-out batch i holds pairs (i*B + b) mod V: consecutive batches walk the held-out
    // set in a fixed order (computed modulo V, so no overflow for any index).
    const std::int64_t start = (index % held_out) * (batch_size % held_out) % held_out;
    for (std::int64_t b = 0; b < batch_size; ++b) {
      const std::int32_t pair =
          split == Split::train ? train_[uniform_int(gen, static_cast<std::int64_t>(train_.size()))]
                                : held[(start + b % held_out) % held_out];
      const std::int64_t lhs = pair / modulus_;
      const std::int64_t rhs = pair % modulus_;
      std::int64_t* row = tokens.data() + b * t_max;
      row[0] = kFirstSymbolId + lhs;
      row[1] = kFirstSymbolId + modulus_;  // PLUS
      row[2] = kFirstSymbolId + rhs;
      row[3] = kSepId;
      row[4] = kFirstSymbolId + (lhs + rhs) % modulus_;
      targets[b * t_max + 3] = row[4];
    }
    return make_sequence_batch(tokens, targets, nullptr, batch_size, t_max);
  }

 private:
  std::string name_;  // the task table's (tasks.cpp)
  std::uint64_t seed_;
  double test_fraction_;
  std::int64_t modulus_;
  std::vector<std::int32_t> train_;       // pair ids a * p + b
  std::vector<std::int32_t> validation_;  // held out, in their fixed order
  std::vector<std::int32_t> test_;        // held out for the test split, in their order
};

}  // namespace

std::unique_ptr<Task> make_copy_task(const std::string& name, const TaskOptions& options) {
  return std::make_unique<SymbolSequenceTask>(name, SymbolSequenceTask::Op::copy, options);
}

std::unique_ptr<Task> make_reverse_task(const std::string& name, const TaskOptions& options) {
  return std::make_unique<SymbolSequenceTask>(name, SymbolSequenceTask::Op::reverse, options);
}

std::unique_ptr<Task> make_sort_task(const std::string& name, const TaskOptions& options) {
  return std::make_unique<SymbolSequenceTask>(name, SymbolSequenceTask::Op::sort, options);
}

std::unique_ptr<Task> make_associative_recall_task(const std::string& name,
                                                   const TaskOptions& options) {
  return std::make_unique<AssociativeRecallTask>(name, options);
}

std::unique_ptr<Task> make_modular_addition_task(const std::string& name,
                                                 const TaskOptions& options) {
  return std::make_unique<ModularAdditionTask>(name, options);
}

}  // namespace headgrad::train::detail
