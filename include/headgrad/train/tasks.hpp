// train::Task: synthetic tasks with seeded generators, held-out validation and test splits,
// padded batches (train::Batch) and reference baselines (Task::baselines). make_task(name,
// options) builds one by name: sequence tasks copy, reverse, sort, associative_recall,
// modular_addition and mqar; char_lm, language modelling on a real text corpus;
// classification tasks char_classification and fusion; regression tasks nearest_neighbour
// and d_retrieval. induction_probe builds Olsson et al.'s repeated random sequences for any
// token task.
//
// Determinism: batch(split, index, batch_size) is a pure function of (the task's options,
// split, index, batch_size): its random numbers come from a Generator seeded with a
// splitmix64 hash of (options.seed, the task's name, split, index, batch_size), so a
// resumed run sees exactly the batches an uninterrupted run would, whatever happened in
// between. Building a batch of 64 takes microseconds. Regression batches are fresh draws
// from that stream; the token tasks draw until an example lies on the batch's split side.
//
// Token ids shared by every task: 0 = PAD (padding, key_padding_mask true there),
// 1 = SEP (separates a prompt from its answer), symbols from 2 = kFirstSymbolId.
//
// Sequence tasks (kind sequence, for a decoder-only causal model). tokens are the prompt,
// SEP, then the answer, padded at the end with PAD; targets[t] = tokens[t + 1] where
// position t predicts an answer token and -100 everywhere else, so token accuracy is the
// argmax over the scored positions. With A = alphabet, L = length, n = an example's length:
//   copy, reverse, sort     [x_1..x_n, SEP, y_1..y_n, PAD...], x_i uniform symbols
//                           2..A+1; y = x, x reversed, x sorted ascending. T = 2L + 1,
//                           vocab A + 2, scored positions n..2n-1.
//   associative_recall      [k_1, v_1, ..., k_n, v_n, SEP, q, v(q), PAD...]: n distinct
//                           keys (ids 2..A+1), values drawn with replacement (ids
//                           A+2..2A+1), the query q one of the keys; the only scored
//                           position is q's (index 2n+1), target v(q). T = 2L + 3,
//                           vocab 2A + 2, needs A >= L.
//   modular_addition        [a, PLUS, b, SEP, c] with c = (a + b) mod p: numbers are ids
//                           2..p+1, PLUS = p + 2; the only scored position is SEP's (3),
//                           target c. T = 5, vocab p + 3. The p*p pairs (a, b) are split
//                           once (a permutation seeded by options.seed): the first
//                           round(validation_fraction * p*p) are validation, the next
//                           round(test_fraction * p*p) test, the rest training. Training
//                           batches draw training pairs uniformly with replacement;
//                           validation (test) batch i holds validation (test) pairs
//                           (i*B + b) mod V in a fixed order, so batches 0..ceil(V/B)-1
//                           cover the held-out set exactly once (V = its pairs).
//   mqar                    multi-query associative recall (Arora et al. 2023, Zoology):
//                           with K = length pairs, T = context (even, T >= 4K; 0 = 4K),
//                           A = alphabet (>= K; 0 = max(4K, 16)): [k_1 v_1 ... k_K v_K,
//                           then a query region of T - 2K slots] with K distinct keys
//                           (ids 2..A+1) and K distinct values (ids A+2..2A+1), both drawn
//                           without replacement; key k_i appears once more at position
//                           2K + 2 g_i, the K gaps g_i drawn without replacement from
//                           {0 .. (T-2K)/2 - 1} with P(g) proportional to (g + 1)^(a - 1),
//                           a = 0.01 (Zoology's power law: short gaps dominate); every other
//                           query slot is the filler 0 (kPadId) and key_padding_mask is
//                           undefined (every position is real). Scored: each query
//                           position, target its key's value (never shown after the
//                           query). T >= 4K leaves room for K queries at distinct even
//                           offsets. vocab 2A + 2; min_length is not used.
//   char_lm                 character-level language modelling on real text: tokens are a
//                           window of T = length consecutive ids of one split's stream,
//                           targets the same window shifted by one (every position scored,
//                           no padding). The corpus (options.corpus; empty =
//                           default_corpus(), the Debian fortunes package's English
//                           collections, about 15,000 documents and 2.5 million
//                           characters) is a UTF-8 file or folder; documents are the texts
//                           between fortune's "%" lines, or paragraphs in other files
//                           (src/train/text_corpus.hpp has the reading and normalisation
//                           rules). Held-out DOCUMENTS, not positions, form the validation
//                           and test splits: a keyed hash of each document's text with a
//                           fixed key, so the held-out documents are the same for every
//                           seed (the seed draws the windows). Each split's stream is
//                           SEP d_1 SEP d_2 ... SEP (SEP = kSepId marks document
//                           boundaries); ids 2.. are the training documents' code points in
//                           ascending order, then UNK for a held-out character never seen
//                           in training; vocab = that count + 3. A window starts uniformly
//                           in [0, |stream| - T - 1]. The corpus is read once per process
//                           (per path and fractions). Baselines: chance over the
//                           vocab - 1 target ids, and the training documents' add-one
//                           smoothed unigram and bigram character models (exact values
//                           weigh each target of the split's stream by the windows that
//                           score it). Bits per character = loss / ln 2.
// n is L for every example unless min_length < L, in which case n is uniform in
// [min_length, L] per example and key_padding_mask is defined (true on PAD).
//
// Classification tasks (kind classification, two classes, for an encoder). Strings of n
// letters (ids 2..A+1, letter i is id 2 + i), n uniform in [min_length, L], padded with
// PAD; key_padding_mask always defined; T = L, vocab A + 2.
//   char_classification     label = [first letter < A/2] XOR [the string contains the
//                           bigram (letter 0, letter 1) somewhere, or ends with letter
//                           three places to look (the first position, any adjacent
//                           pair, the last real position, which moves with the length).
//                           The generator gives half of the examples the second signal
//                           (the bigram at a uniform position >= 1, or the final letter
//                           A-1, evenly) and removes it from the others, so each signal
//                           alone is a coin flip and the classes balance (measured in
//                           the tests: 50% +- 1.3% for A = 26 and 8). It is learnable:
//                           a 2-layer, 32-wide PyTorch encoder with masked mean pooling,
//                           on the same distribution, reached 100% after 2000 Adam steps
//                           of 64 at the defaults (length 8, A = 26), and 99.9% after
//                           1500 at length 12, min_length 6, A = 8.
//   fusion                  strings as above with only the bigram as text signal, plus
//                           features (B, F) float32, standard normal;
//                           label = [the string contains the bigram] XOR
//                           [features[:, 0] > 0]. Either modality alone predicts the label
//                           no better than chance (about 50%); both together exactly.
//
// Regression tasks (kind regression, continuous tokens for an encoder without positions or
// masks): batch.inputs (B, T, F_in) float32 replaces tokens (undefined), targets are
// (B, T, F_out) float32 vectors, target_mask (B, T) marks the scored positions (undefined =
// all). input_dim() is F_in and vocab_size() is F_out, the model's output width. The loss
// is the squared error summed over the F_out coordinates, averaged over scored positions
// (train::task_loss); targets are scaled so that a target's mean squared norm is 1, so
// predicting 0 scores about 1. Data are drawn fresh for every batch from its own seed
// stream: the splits are independent draws (disjoint with probability 1), no hash split.
//   nearest_neighbour       (Amsel, Yehudai, Bruna) N = length points (at least 2), i.i.d.
//                           uniform on the unit sphere S^{d-1}, d = dim (0 = 16, at least
//                           2), drawn as normalized Gaussians; the target of token i is its
//                           farthest point x_j, j = argmin_j <x_i, x_j> over all N (i
//                           itself, whose product 1 is the largest, is never chosen; a tie
//                           goes to the lowest j). Targets are unit vectors. T = N,
//                           F_in = F_out = d, every position scored.
//   d_retrieval             (Yu et al., ICLR 2026, generalized D-retrieval) T = length
//                           tokens x_t ~ N(0, I_D), D = dim (0 = 4), each with a last
//                           coordinate 0, then a CLS token of zeros with last coordinate 1:
//                           T + 1 positions, F_in = D + 1. Only CLS is scored (target_mask),
//                           F_out = 1: y = sum_{i=1..D} max_t a_i . x_t with a_i = e_i, the
//                           unit vectors (the paper leaves its a_i unspecified), standardized
//                           to mean 0 and variance 1 by D mu and sqrt(D) sigma, where mu and
//                           sigma are the mean and standard deviation of the maximum of T
//                           standard normals (computed at construction by Simpson's rule on
//                           the order-statistic density T phi(x) Phi(x)^(T-1)). Targets at
//                           the other positions are 0.
//
// Held-out splits: every task holds out a fraction (validation_fraction) of its example
// space for validation and, when test_fraction > 0, a further disjoint fraction for a final
// test split, so no validation or test example ever occurs in training and none occurs in
// both. modular_addition splits its p*p pairs explicitly (above; the test pairs are the
// round(test_fraction * p*p) that follow the validation block in its permutation and are
// walked the same way); the other tasks, whose spaces are often too large to enumerate,
// split by a keyed hash of an example's tokens, u in [0, 1): validation iff
// u < validation_fraction, test iff validation_fraction <= u < validation_fraction +
// test_fraction, training otherwise. A batch draws examples (from its own seed stream)
// until they fall on its side, so a held-out split costs about 1 / fraction draws per
// example. (Only a space too small to have any example on a side, e.g. copy with length 1
// and 2 symbols, falls back to the draw after 10000 misses.) For fusion the tokens decide:
// no held-out string occurs in training, with whatever features. With test_fraction 0
// (the default) batch(Split::test, ...) throws ValueError. Validation batches do not
// depend on test_fraction: a positive one moves examples from training to test only.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "headgrad/core/options.hpp"
#include "headgrad/train/batch.hpp"

namespace headgrad::train {

inline constexpr std::int64_t kPadId = 0;
inline constexpr std::int64_t kSepId = 1;
inline constexpr std::int64_t kFirstSymbolId = 2;
// The Debian fortunes package's English collections (scripts/setup.sh installs the package).
inline constexpr const char* kFortunesCorpus = "/usr/share/games/fortunes";
// char_lm's corpus when TaskOptions::corpus is empty: $HEADGRAD_CORPUS when it is set and
// not empty (a machine whose fortunes were unpacked elsewhere: scripts/unpack_debs.sh's
// env.sh sets it), else kFortunesCorpus.
std::string default_corpus();

enum class Split { train, validation, test };
enum class TaskKind { sequence, classification, regression };

std::string to_string(Split split);    // "train", "validation", "test"
std::string to_string(TaskKind kind);  // "sequence", "classification", "regression"

struct TaskOptions {
  std::uint64_t seed = 0;
  // The longest example: symbols to copy/reverse/sort, key-value pairs to recall (K for
  // mqar), letters in a string, points (nearest_neighbour), input tokens before the CLS
  // token (d_retrieval). Unused by modular_addition.
  std::int64_t length = 8;
  // The shortest example; 0 = the task's default: length (fixed lengths) for the sequence
  // tasks, max(3, length / 2) for char_classification and fusion (at least 3).
  std::int64_t min_length = 0;
  // Symbols (letters, digits, keys); 0 = the task's default: 10 for copy, reverse and
  // sort, max(10, length) for associative_recall, max(4 * length, 16) for mqar, 26 (a to z) for
  // char_classification (at least 3) and fusion (at least 2).
  std::int64_t alphabet = 0;
  // The share of the example space held out for validation, in (0, 1). Regression tasks
  // check it but draw every split fresh (their splits are independent seed streams).
  double validation_fraction = 0.3;
  // The share held out for a final test split, in [0, 1 - validation_fraction); 0 = no
  // test split (batch(Split::test, ...) throws ValueError). Off by default, so that
  // training keeps every example not held out for validation; heads_compare sets 0.15.
  double test_fraction = 0.0;
  // modular_addition: the modulus p, in [2, 1024].
  std::int64_t modulus = 31;
  // fusion: the number of tabular features F (at least 1).
  std::int64_t num_features = 4;
  // mqar: the sequence length T (even, at least 4 * length); 0 = 4 * length.
  std::int64_t context = 0;
  // char_lm: the corpus, a UTF-8 text file or a folder of them; empty = default_corpus().
  std::string corpus = "";
  // nearest_neighbour: the point dimension d (0 = 16, at least 2); d_retrieval: the
  // features D of an input token (0 = 4, at least 1).
  std::int64_t dim = 0;

  HEADGRAD_WITH(seed)
  HEADGRAD_WITH(length)
  HEADGRAD_WITH(min_length)
  HEADGRAD_WITH(alphabet)
  HEADGRAD_WITH(modulus)
  HEADGRAD_WITH(validation_fraction)
  HEADGRAD_WITH(test_fraction)
  HEADGRAD_WITH(context)
  HEADGRAD_WITH(dim)
  HEADGRAD_WITH(corpus)
  HEADGRAD_WITH(num_features)
};

// A reference predictor's score on a task's split, with the loss and accuracy definitions of
// train::evaluate_logits (mean over scored targets; regression: summed squared error and
// the kRegressionTolerance rule).
struct Baseline {
  std::string name;         // "chance", "key_agnostic", "predict_zero"
  std::string description;  // the predictor, in a sentence
  double loss = 0;          // the predictor's mean on the batches scored (a sample)
  double accuracy = 0;
  // Its exact expectation over every example the task's generator draws, where derived
  // (chance; associative_recall's and mqar's key_agnostic), NaN otherwise. The sampled
  // values above differ from it by sampling noise only.
  double exact_loss = std::numeric_limits<double>::quiet_NaN();
  double exact_accuracy = std::numeric_limits<double>::quiet_NaN();
};

// One token's name and role, for viewers (inspect::AttentionView's token strip).
struct TokenLabel {
  std::string text;  // e.g. "K3", "V7", "?K3", "a", "12", "+", "SEP", "PAD", "_"
  std::string role;  // key, value, query, filler, sep, pad or symbol
};

struct Metrics;  // train/task_loss.hpp

class Task {
 public:
  virtual ~Task() = default;
  virtual std::string name() const = 0;
  virtual TaskKind kind() const = 0;
  // Token ids for sequence and classification tasks; for regression tasks the width of a
  // target vector, F_out (the model's output width).
  virtual std::int64_t vocab_size() const = 0;
  virtual std::int64_t max_len() const = 0;                // T
  virtual std::int64_t num_classes() const { return 0; }   // classification
  virtual std::int64_t num_features() const { return 0; }  // fusion task
  // The width of a continuous input token, F_in (regression tasks: batch.inputs is
  // (B, T, F_in)); 0 = the inputs are token ids (batch.tokens).
  virtual std::int64_t input_dim() const { return 0; }
  // Batch number `index` (>= 0) of a split, `batch_size` (>= 1) examples: a pure function
  // of (task seed, split, index, batch_size), built on the CPU whatever device the model
  // is on (batch.to(device) copies it; the Trainer does). Throws ValueError on a negative
  // index, a batch size below 1, or Split::test when the task has no test split
  // (test_fraction 0).
  virtual Batch batch(Split split, std::int64_t index, std::int64_t batch_size) const = 0;
  // Reference predictors scored on batches 0 .. batches-1 of `split` (the batches
  // train::evaluate sees), so a model's metrics can be read against them:
  //   chance        (sequence, classification) uniform over the ids a scored target can
  //                 take: the A symbols of copy/reverse/sort, the A value ids of
  //                 associative_recall and mqar, the p residues of modular_addition, the
  //                 classes; loss log(count), accuracy 1/count. The default for other
  //                 sequence tasks counts the whole vocabulary.
  //   key_agnostic  (associative_recall, mqar) the best predictor that ignores the query's
  //                 key. associative_recall: P(v) = (times v occurs among the prompt's n
  //                 values) / n, loss -log P(target), accuracy [target is among the most
  //                 frequent prompt values] / (how many values share that count), ties
  //                 broken uniformly; mqar: uniform over the K values of the prompt
  //                 (loss log K, accuracy 1/K). associative_recall's exact expectation
  //                 (exact_loss, exact_accuracy; length <= 32) averages over the prompt
  //                 sizes n: loss E[-log((1 + B) / n)], B ~ Binomial(n - 1, 1 / A), and
  //                 accuracy E[max_v c_v] / n for the counts c of n uniform draws from A.
  //   predict_zero  (regression) output 0: loss = the mean squared norm of the scored
  //                 targets (about 1), accuracy = the share of targets with squared norm
  //                 below kRegressionTolerance.
  // Empty splits (no scored targets) score 0. Throws what batch() throws.
  virtual std::vector<Baseline> baselines(Split split, std::int64_t batches,
                                          std::int64_t batch_size) const;
  // Names for the tokens of one example (its ids in order, padding included): keys Kn,
  // values Vn and the queried key ?Kn (associative_recall, mqar, whose empty query slots
  // are the filler _), letters a, b, ... (copy, reverse, sort and the string tasks; sN
  // past z), numbers, + and = (modular_addition), SEP and PAD. The default names a symbol
  // sN (N = id - kFirstSymbolId). Regression tasks have no tokens: an empty list.
  virtual std::vector<TokenLabel> token_labels(const std::vector<std::int64_t>& tokens) const;
  // How the task scores `logits` (the model's output for `batch`): the training loss
  // (differentiable), the (correct, scored) counts of a training step, and an evaluation's
  // loss and accuracy (no graph). The trainers, train::evaluate and inspect's importance ask
  // the task; the defaults score by kind() with train/task_loss.hpp's task_loss,
  // count_scored and evaluate_logits.
  virtual Tensor loss(const Tensor& logits, const Batch& batch) const;
  virtual std::pair<std::int64_t, std::int64_t> count_scored(const Tensor& logits,
                                                             const Batch& batch) const;
  virtual Metrics metrics(const Tensor& logits, const Batch& batch) const;
};

// Builds the task `name` (one of task_names()); throws ValueError for an unknown name
// (listing the known ones) or options the task cannot use (naming the option).
std::unique_ptr<Task> make_task(const std::string& name, const TaskOptions& options = {});

// "copy", "reverse", "sort", "associative_recall", "modular_addition", "mqar", "char_lm",
// "char_classification", "fusion", "nearest_neighbour", "d_retrieval".
std::vector<std::string> task_names();

// Olsson et al.'s induction probe for a token task: batch_size rows of `half` distinct
// symbols (ids kFirstSymbolId .. vocab_size - 1, drawn uniformly without replacement), each
// row repeated once, T = 2 * half. Targets: at t in [half, 2 * half - 2] the next token,
// which the copy at t - half + 1 predicts (an induction head's job), -100 elsewhere. A pure
// function of (task name, vocab, half, batch_size, seed). ValueError for a regression task
// or half outside [1, vocab_size - kFirstSymbolId].
Batch induction_probe(const Task& task, std::int64_t half, std::int64_t batch_size,
                      std::uint64_t seed = 0);

}  // namespace headgrad::train
