// Classification tasks over padded letter strings: char_classification and fusion (the
// rules are documented in include/headgrad/train/tasks.hpp).
//
// Every batch: tokens (B, L) int64 (letters 2..A+1, PAD 0 after the string),
// key_padding_mask (B, L) bool (true on PAD), targets (B) int64 labels in {0, 1}; fusion
// adds features (B, F) float32. Each tensor is built from one vector.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "headgrad/core/error.hpp"
#include "tasks_detail.hpp"

namespace headgrad::train::detail {
namespace {

// The letters the rules look at (letter i is token id kFirstSymbolId + i).
constexpr std::int64_t kBigramFirst = 0;  // the bigram is (letter 0, letter 1)
constexpr std::int64_t kBigramSecond = 1;

class StringTask : public Task {
 public:
  // fusion: labels need both modalities; else char_classification's rule on letters.
  StringTask(std::string name, bool fusion, const TaskOptions& options)
      : name_(std::move(name)),
        fusion_(fusion),
        seed_(options.seed),
        test_fraction_(options.test_fraction),
        hash_split_(options.seed, name_, options.validation_fraction, options.test_fraction) {
    require_validation_fraction(name_, options);
    length_ = options.length;
    require_option(length_ >= 3, name_, "length", std::to_string(length_), "must be at least 3");
    min_length_ =
        options.min_length == 0 ? std::max<std::int64_t>(3, length_ / 2) : options.min_length;
    require_option(min_length_ >= 3 && min_length_ <= length_, name_, "min_length",
                   std::to_string(options.min_length),
                   "must lie in [3, length = " + std::to_string(length_) + "] (or 0)");
    alphabet_ = options.alphabet == 0 ? 26 : options.alphabet;
    // char_classification's rule names letters 0, 1 and A-1, which must differ.
    const std::int64_t min_alphabet = fusion_ ? 2 : 3;
    require_option(alphabet_ >= min_alphabet, name_, "alphabet", std::to_string(options.alphabet),
                   "must be at least " + std::to_string(min_alphabet) + " (or 0 for 26)");
    num_features_ = fusion_ ? options.num_features : 0;
    if (fusion_)
      require_option(num_features_ >= 1, name_, "num_features", std::to_string(num_features_),
                     "must be at least 1");
  }

  std::string name() const override { return name_; }
  TaskKind kind() const override { return TaskKind::classification; }
  std::vector<TokenLabel> token_labels(const std::vector<std::int64_t>& tokens) const override {
    std::vector<TokenLabel> out;
    for (const std::int64_t id : tokens) out.push_back(detail::letter_label(id));
    return out;
  }
  std::int64_t vocab_size() const override { return kFirstSymbolId + alphabet_; }
  std::int64_t max_len() const override { return length_; }
  std::int64_t num_classes() const override { return 2; }
  std::int64_t num_features() const override { return num_features_; }

  Batch batch(Split split, std::int64_t index, std::int64_t batch_size) const override {
    check_batch_args(*this, split, test_fraction_, index, batch_size);
    Generator gen(batch_seed(seed_, name_, split, index, batch_size));
    std::vector<std::int64_t> tokens(batch_size * length_, kPadId);
    std::vector<bool> padding(batch_size * length_, false);
    std::vector<std::int64_t> labels(batch_size);
    std::vector<float> features(batch_size * num_features_);
    const std::int64_t last_letter = alphabet_ - 1;
    for (std::int64_t b = 0; b < batch_size; ++b) {
      std::int64_t* row = tokens.data() + b * length_;
      std::int64_t n = 0;
      bool pattern = false;
      draw_on_side(hash_split_, split, row, length_, [&](std::int64_t* r) {
        // Letters 0..A-1 first, ids (+ kFirstSymbolId) at the end.
        n = uniform_between(gen, min_length_, length_);
        for (std::int64_t i = 0; i < n; ++i) r[i] = uniform_int(gen, alphabet_);
        // The text signal: half of the examples get it, the others have it removed. The
        // first letter is never changed, so it stays uniform and independent of it.
        pattern = (gen.next_u64() >> 63) != 0;
        if (pattern) {
          // fusion: the bigram; char_classification: the bigram or a final letter A-1.
          if (!fusion_ && (gen.next_u64() >> 63) != 0) {
            r[n - 1] = last_letter;
          } else {
            const std::int64_t at = uniform_between(gen, 1, n - 2);
            r[at] = kBigramFirst;
            r[at + 1] = kBigramSecond;
          }
        } else {
          for (std::int64_t i = 1; i < n; ++i)
            while (r[i - 1] == kBigramFirst && r[i] == kBigramSecond)
              r[i] = uniform_int(gen, alphabet_);
          if (!fusion_)
            while (r[n - 1] == last_letter ||
                   (r[n - 2] == kBigramFirst && r[n - 1] == kBigramSecond))
              r[n - 1] = uniform_int(gen, alphabet_);
        }
        for (std::int64_t i = 0; i < n; ++i) r[i] += kFirstSymbolId;
      });
      for (std::int64_t t = n; t < length_; ++t) padding[b * length_ + t] = true;
      bool other;  // the second signal of the XOR
      if (fusion_) {
        float* feature_row = features.data() + b * num_features_;
        for (std::int64_t f = 0; f < num_features_; ++f)
          feature_row[f] = static_cast<float>(gen.next_normal());
        other = feature_row[0] > 0.0f;
      } else {
        other = row[0] - kFirstSymbolId < alphabet_ / 2;
      }
      labels[b] = pattern != other ? 1 : 0;
    }
    Batch batch;
    batch.tokens = from_vector(tokens, {batch_size, length_});
    batch.key_padding_mask = from_vector(padding, {batch_size, length_});
    batch.targets = from_vector(labels, {batch_size});
    if (fusion_) batch.features = from_vector(features, {batch_size, num_features_});
    return batch;
  }

 private:
  std::string name_;
  bool fusion_;
  std::uint64_t seed_;
  double test_fraction_;
  HashSplit hash_split_;
  std::int64_t length_ = 0;
  std::int64_t min_length_ = 0;
  std::int64_t alphabet_ = 0;
  std::int64_t num_features_ = 0;
};

}  // namespace

std::unique_ptr<Task> make_char_classification_task(const std::string& name,
                                                    const TaskOptions& options) {
  return std::make_unique<StringTask>(name, /*fusion=*/false, options);
}

std::unique_ptr<Task> make_fusion_task(const std::string& name, const TaskOptions& options) {
  return std::make_unique<StringTask>(name, /*fusion=*/true, options);
}

}  // namespace headgrad::train::detail
