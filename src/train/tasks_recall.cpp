// Multi-query associative recall (mqar, after Arora et al. 2023, "Zoology"): K key-value
// pairs, then every key queried once in a mostly empty query region (layout in
// include/headgrad/train/tasks.hpp).
//
// Every batch: tokens (B, T) int64 (filler 0 = kPadId in the query region's empty slots,
// key_padding_mask undefined: every position is real), targets (B, T) int64, the paired
// value at each query position and -100 elsewhere. Each tensor is built from one vector.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>
#include <vector>

#include "headgrad/core/error.hpp"
#include "tasks_detail.hpp"

namespace headgrad::train::detail {
namespace {

// Zoology's power law for the query gaps: P(g) proportional to (g + 1)^(a - 1).
constexpr double kGapPower = 0.01;

// [k_1 v_1 ... k_K v_K | query region of T - 2K slots], keys 2..A+1, values A+2..2A+1;
// key k_i sits at 2K + 2 g_i with distinct gaps g_i drawn from the power law.
class MqarTask : public Task {
 public:
  MqarTask(std::string task_name, const TaskOptions& options)
      : name_(std::move(task_name)),
        seed_(options.seed),
        test_fraction_(options.test_fraction),
        hash_split_(options.seed, name(), options.validation_fraction, options.test_fraction) {
    require_validation_fraction(name(), options);
    pairs_ = options.length;
    require_option(pairs_ >= 1, name(), "length", std::to_string(pairs_),
                   "(key-value pairs) must be at least 1");
    context_ = options.context == 0 ? 4 * pairs_ : options.context;
    require_option(context_ % 2 == 0 && context_ >= 4 * pairs_, name(), "context",
                   std::to_string(options.context),
                   "must be even and at least 4 * length = " + std::to_string(4 * pairs_) +
                       " (the K pairs, then K queries at distinct even offsets of the rest), "
                       "or 0 for 4 * length");
    alphabet_ = options.alphabet == 0 ? std::max<std::int64_t>(4 * pairs_, 16) : options.alphabet;
    require_option(alphabet_ >= pairs_, name(), "alphabet", std::to_string(options.alphabet),
                   "must be at least length = " + std::to_string(pairs_) +
                       " (distinct keys and values), or 0 for max(4 * length, 16)");
    const std::int64_t gaps = (context_ - 2 * pairs_) / 2;
    gap_weights_.resize(gaps);
    for (std::int64_t g = 0; g < gaps; ++g)
      gap_weights_[g] = std::pow(static_cast<double>(g + 1), kGapPower - 1);
  }

  std::string name() const override { return name_; }
  TaskKind kind() const override { return TaskKind::sequence; }
  // The query region starts after the K pairs.
  std::vector<TokenLabel> token_labels(const std::vector<std::int64_t>& tokens) const override {
    return detail::key_value_labels(tokens, alphabet_, static_cast<std::size_t>(2 * pairs_), true);
  }
  std::int64_t vocab_size() const override { return kFirstSymbolId + 2 * alphabet_; }
  std::int64_t max_len() const override { return context_; }

  std::vector<Baseline> baselines(Split split, std::int64_t batches,
                                  std::int64_t batch_size) const override {
    Baseline chance = chance_baseline(*this, split, batches, batch_size, alphabet_,
                                      "the " + std::to_string(alphabet_) + " value ids");
    // key_agnostic: the K prompt values are distinct, so ignoring the key leaves a uniform
    // guess among them at every query.
    Baseline key_agnostic{"key_agnostic", "uniform over the prompt's " + std::to_string(pairs_) +
                                              " values, ignoring the query's key"};
    key_agnostic.exact_loss = std::log(static_cast<double>(pairs_));
    key_agnostic.exact_accuracy = 1.0 / static_cast<double>(pairs_);
    if (chance.accuracy > 0) {
      key_agnostic.loss = key_agnostic.exact_loss;
      key_agnostic.accuracy = key_agnostic.exact_accuracy;
    }
    return {chance, key_agnostic};
  }

  Batch batch(Split split, std::int64_t index, std::int64_t batch_size) const override {
    check_batch_args(*this, split, test_fraction_, index, batch_size);
    Generator gen(batch_seed(seed_, name(), split, index, batch_size));
    const std::int64_t t_max = context_, k = pairs_;
    std::vector<std::int64_t> tokens(batch_size * t_max, kPadId);
    std::vector<std::int64_t> targets(batch_size * t_max, kIgnoreIndex);
    std::vector<std::int64_t> keys(alphabet_), values(alphabet_), gaps(k);
    std::vector<double> weights;
    const std::int64_t first_value = kFirstSymbolId + alphabet_;
    for (std::int64_t b = 0; b < batch_size; ++b) {
      std::int64_t* row = tokens.data() + b * t_max;
      draw_on_side(hash_split_, split, row, t_max, [&](std::int64_t* r) {
        // K distinct keys and K distinct values: partial Fisher-Yates shuffles.
        std::iota(keys.begin(), keys.end(), kFirstSymbolId);
        std::iota(values.begin(), values.end(), first_value);
        for (std::int64_t i = 0; i < k; ++i) {
          std::swap(keys[i], keys[i + uniform_int(gen, alphabet_ - i)]);
          std::swap(values[i], values[i + uniform_int(gen, alphabet_ - i)]);
        }
        // K distinct gaps, each drawn from the weights of the gaps not yet taken.
        weights = gap_weights_;
        for (std::int64_t i = 0; i < k; ++i) {
          double total = 0;
          for (double w : weights) total += w;
          double u = gen.next_double() * total;
          std::int64_t pick = -1;
          for (std::int64_t g = 0; g < static_cast<std::int64_t>(weights.size()); ++g) {
            if (weights[g] == 0) continue;
            pick = g;  // the last gap still free, should rounding leave u past the end
            if (u < weights[g]) break;
            u -= weights[g];
          }
          gaps[i] = pick;
          weights[pick] = 0;
        }
        for (std::int64_t i = 0; i < k; ++i) {
          r[2 * i] = keys[i];
          r[2 * i + 1] = values[i];
          r[2 * k + 2 * gaps[i]] = keys[i];
        }
      });
      // The query of key i predicts its value; the value itself never follows the query.
      for (std::int64_t i = 0; i < k; ++i)
        targets[b * t_max + 2 * k + 2 * gaps[i]] = row[2 * i + 1];
    }
    Batch batch;
    batch.tokens = from_vector(tokens, {batch_size, t_max});
    batch.targets = from_vector(targets, {batch_size, t_max});
    return batch;
  }

 private:
  std::string name_;  // the task table's (tasks.cpp)
  std::uint64_t seed_;
  double test_fraction_;
  HashSplit hash_split_;
  std::int64_t pairs_ = 0;
  std::int64_t context_ = 0;
  std::int64_t alphabet_ = 0;
  std::vector<double> gap_weights_;  // (g + 1)^(a - 1) for g = 0 .. (T - 2K) / 2 - 1
};

}  // namespace

std::unique_ptr<Task> make_mqar_task(const std::string& name, const TaskOptions& options) {
  return std::make_unique<MqarTask>(name, options);
}

}  // namespace headgrad::train::detail
