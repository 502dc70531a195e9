// Internal utilities of the synthetic tasks (src/train/tasks*.cpp): the per-batch seed hash,
// bounded integer draws, the hash split of an example space, argument checks and the
// factories of each task family.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "headgrad/core/generator.hpp"
#include "headgrad/train/tasks.hpp"

namespace headgrad::train::detail {

// splitmix64's finalizer: a bijective mix of 64 bits.
inline std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Folds `value` into the running hash `h`.
inline std::uint64_t hash_combine(std::uint64_t h, std::uint64_t value) {
  return splitmix64(h ^ splitmix64(value));
}

// FNV-1a of a name: a per-task salt, so two tasks built with one seed draw unrelated data.
inline std::uint64_t hash_name(const std::string& name) {
  std::uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char c : name) h = (h ^ c) * 0x100000001B3ull;
  return h;
}

// The seed of batch `index` of `split`: a hash of (task seed, task name, split, index,
// batch_size).
inline std::uint64_t batch_seed(std::uint64_t seed, const std::string& task, Split split,
                                std::int64_t index, std::int64_t batch_size) {
  std::uint64_t h = hash_combine(seed, hash_name(task));
  h = hash_combine(h, split == Split::train        ? 0x7472u
                      : split == Split::validation ? 0x76616Cu
                                                   : 0x74657374u);
  h = hash_combine(h, static_cast<std::uint64_t>(index));
  return hash_combine(h, static_cast<std::uint64_t>(batch_size));
}

// Uniform integer in [0, n), n >= 1 (modulo bias below n / 2^64: negligible here).
inline std::int64_t uniform_int(Generator& gen, std::int64_t n) {
  return static_cast<std::int64_t>(gen.next_u64() % static_cast<std::uint64_t>(n));
}

// Uniform integer in [low, high].
inline std::int64_t uniform_between(Generator& gen, std::int64_t low, std::int64_t high) {
  return low == high ? low : low + uniform_int(gen, high - low + 1);
}

// Throws ValueError naming the task unless index >= 0 and batch_size >= 1, and, for
// Split::test, unless the task has a test split (test_fraction > 0); MemoryError, before
// anything is allocated, when the batch's largest tensor (batch_size x max_len() values,
// times the features of a regression task) would exceed max_tensor_bytes().
void check_batch_args(const Task& task, Split split, double test_fraction, std::int64_t index,
                      std::int64_t batch_size);

// Throws ValueError "<task>: option <option> = <value> <requirement>" when `ok` is false.
void require_option(bool ok, const std::string& task, const std::string& option,
                    const std::string& value, const std::string& requirement);

// Throws ValueError unless 0 < validation_fraction < 1, test_fraction >= 0 and
// validation_fraction + test_fraction < 1.
void require_validation_fraction(const std::string& task, const TaskOptions& options);

// The split of a task's example space by a keyed hash of an example's tokens: with u the
// hash as a fraction of 2^64, an example is held out for validation iff
// u < validation_fraction, for test iff validation_fraction <= u < validation_fraction +
// test_fraction, and is a training example otherwise. The three sides are therefore
// disjoint, whatever the space's size, and the split changes with the task seed.
class HashSplit {
 public:
  HashSplit(std::uint64_t seed, const std::string& task, double validation_fraction,
            double test_fraction = 0.0)
      : key_(hash_combine(hash_combine(seed, hash_name(task)), hash_name("split"))),
        validation_(validation_fraction),
        test_end_(validation_fraction + test_fraction) {}

  Split side(const std::int64_t* tokens, std::int64_t count) const {
    std::uint64_t h = start();
    for (std::int64_t i = 0; i < count; ++i) h = step(h, tokens[i]);
    return side_of(h);
  }

  // The same hash token by token, for examples not held in one array (char_lm's
  // documents): h = start(), h = step(h, token) for each token, then side_of(h).
  std::uint64_t start() const { return key_; }
  static std::uint64_t step(std::uint64_t h, std::int64_t token) {
    return splitmix64(h ^ static_cast<std::uint64_t>(token));
  }
  Split side_of(std::uint64_t h) const {
    const double u = static_cast<double>(h >> 11) * 0x1.0p-53;
    return u < validation_ ? Split::validation : u < test_end_ ? Split::test : Split::train;
  }

 private:
  std::uint64_t key_;
  double validation_;
  double test_end_;
};

// After this many draws that all fall on the other side (a space too small to have
// examples on this side) the last draw is kept.
inline constexpr int kMaxDraws = 10000;

// Fills `row` (width ids) with PAD, then calls draw(row) to write an example, until the
// example lies on `split`'s side of `hash_split`. `draw` reports through its captures, which
// hold the accepted draw's values on return.
template <typename Draw>
void draw_on_side(const HashSplit& hash_split, Split split, std::int64_t* row, std::int64_t width,
                  Draw&& draw) {
  for (int attempt = 1;; ++attempt) {
    std::fill(row, row + width, kPadId);
    draw(row);
    if (hash_split.side(row, width) == split || attempt >= kMaxDraws) return;
  }
}

// Baselines shared by the tasks (tasks_baselines.cpp), scored on batches 0..batches-1 of
// `split`. chance_baseline: uniform over `count` ids, `what` names them ("the 10 symbols").
Baseline chance_baseline(const Task& task, Split split, std::int64_t batches,
                         std::int64_t batch_size, std::int64_t count, const std::string& what);
// predict_zero_baseline: output 0 for a regression task.
Baseline predict_zero_baseline(const Task& task, Split split, std::int64_t batches,
                               std::int64_t batch_size);
// The scored targets (not -100) of batches 0..batches-1 of a sequence or classification
// task (class labels are never -100).
std::int64_t count_scored_targets(const Task& task, Split split, std::int64_t batches,
                                  std::int64_t batch_size);

// The tasks' factories, one per task, called by name from the task table (tasks.cpp), the
// one place a task's name is written; a task's name() returns the name it was made with.
// Defined in tasks_sequence.cpp (copy, reverse, sort, associative_recall,
// modular_addition), tasks_recall.cpp (mqar), tasks_text.cpp (char_lm),
// tasks_classification.cpp (char_classification, fusion) and tasks_regression.cpp
// (nearest_neighbour, d_retrieval). Each validates the options it uses and throws
// ValueError naming the bad one.
using TaskFactory = std::unique_ptr<Task> (*)(const std::string& name, const TaskOptions& options);
std::unique_ptr<Task> make_copy_task(const std::string& name, const TaskOptions& options);
std::unique_ptr<Task> make_reverse_task(const std::string& name, const TaskOptions& options);
std::unique_ptr<Task> make_sort_task(const std::string& name, const TaskOptions& options);
std::unique_ptr<Task> make_associative_recall_task(const std::string& name,
                                                   const TaskOptions& options);
std::unique_ptr<Task> make_modular_addition_task(const std::string& name,
                                                 const TaskOptions& options);
std::unique_ptr<Task> make_mqar_task(const std::string& name, const TaskOptions& options);
std::unique_ptr<Task> make_char_lm_task(const std::string& name, const TaskOptions& options);
std::unique_ptr<Task> make_char_classification_task(const std::string& name,
                                                    const TaskOptions& options);
std::unique_ptr<Task> make_fusion_task(const std::string& name, const TaskOptions& options);
std::unique_ptr<Task> make_nearest_neighbour_task(const std::string& name,
                                                  const TaskOptions& options);
std::unique_ptr<Task> make_d_retrieval_task(const std::string& name, const TaskOptions& options);

// Token labels (tasks.cpp): PAD and SEP; a letter for symbol index i (a..z, then sN); the
// labels of a key-value task, whose keys are symbols 0..A-1 and values A..2A-1, a key
// after the prompt (at or past `query_from`) being the query ?Kn, and PAD there the
// filler _ when `filler` (mqar's empty query slots) or padding otherwise.
TokenLabel special_label(std::int64_t id);
TokenLabel letter_label(std::int64_t id);
std::vector<TokenLabel> key_value_labels(const std::vector<std::int64_t>& tokens,
                                         std::int64_t alphabet, std::size_t query_from,
                                         bool filler);

}  // namespace headgrad::train::detail
