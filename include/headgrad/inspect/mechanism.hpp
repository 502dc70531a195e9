// Mechanism scores of attention heads from their attention patterns: previous-token heads
// and induction heads (Olsson et al. 2022, "In-context Learning and Induction Heads").
//
// For one example with tokens t_0 .. t_{L-1} and a head's pattern A (L, S), S >= L (keys
// past L, from add_bias_kv / add_zero_attn, are never read):
//   previous-token  the mean of A[i, i-1] over query positions i >= 1 where both i and
//                   i - 1 are real (not padding).
//   induction       prefix matching, "attend to the position after an earlier occurrence
//                   of the current token" (TransformerLens's definition; the paper's main
//                   text says the same, its appendix says "preceded"): for a real query i,
//                   the occurrences are the real positions j with t_j == t_i and
//                   j + 1 < i; when there is at least one, the query scores
//                   sum over occurrences of A[i, j + 1]. Queries without an earlier
//                   occurrence do not count. On a sequence repeated twice, a head that
//                   attends only to the token after the earlier copy scores 1.
//   induction_scored  the induction score over the induction queries whose prediction the
//                   task scores (a mask `scored`, (N, L) bool). On a task trained only at
//                   some positions (associative recall scores the query alone), tokens that
//                   repeat by chance elsewhere (two equal values) have nothing to look up,
//                   and averaging over them dilutes the lookup the task asks for: with 8
//                   pairs over 10 value ids about 2.3 chance repeats per example sit beside
//                   the one query, so a head that does the lookup perfectly scores ~0.3 on
//                   `induction` and ~1 on `induction_scored`.
// All are averaged over every counted (example, query) of every batch; the counts are
// shared by all heads. Scores are NaN when nothing was counted.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "headgrad/core/tensor.hpp"
#include "headgrad/nn/module.hpp"
#include "headgrad/train/trainer.hpp"

namespace headgrad::inspect {

struct MechanismScores {
  // Attention layer names (attention_layers order) for the model overload; "0", "1", ...
  // for the pattern overload.
  std::vector<std::string> layers;
  std::vector<std::vector<double>> previous_token, induction, induction_scored;  // [layer][head]
  std::int64_t positions_previous = 0;          // counted (example, query) pairs, previous-token
  std::int64_t positions_induction = 0;         // counted (example, query) pairs, induction
  std::int64_t positions_induction_scored = 0;  // of those, the scored ones
};

// Scores from patterns already recorded (inspect::Capture of "pattern"): one (N, H, L, S)
// tensor per layer (any float dtype, any device), tokens (N, L) int64,
// key_padding_mask (N, L) bool, true = padding (undefined = none), scored (N, L) bool,
// true = the position's prediction is scored (undefined = every position, and then
// induction_scored equals induction). Computed in float64. ShapeError / DTypeError naming
// the layer or mask when the shapes or dtypes disagree.
MechanismScores mechanism_scores(const std::vector<Tensor>& patterns, const Tensor& tokens,
                                 const Tensor& key_padding_mask = {}, const Tensor& scored = {});

// Runs `forward` on batches 0 .. batches-1 of `split` (eval mode, no graph; the training
// mode is restored) while capturing every attention layer's pattern, and scores them: the
// sums and counts run over all batches, so the result equals one call of the pattern
// overload on the batches concatenated. Each batch is moved to the model's device. A
// batch without token ids (batch.tokens undefined: continuous-input tasks) has nothing to
// score: the result then has NaN scores and zero counts. ValueError for non-positive
// batches or batch_size, or when an attention layer does not run in `forward`; the scored
// positions are those whose target is not kIgnoreIndex when the batch's targets are (N, L)
// ids (sequence tasks), every position otherwise;
// ShapeError when a layer's pattern does not cover the token positions (L of its
// queries differs from the tokens').
MechanismScores mechanism_scores(nn::Module& model, const train::ForwardFn& forward,
                                 const train::Task& task, train::Split split, std::int64_t batches,
                                 std::int64_t batch_size);

// The same on one given batch (e.g. train::induction_probe's repeated random sequences,
// Olsson et al.'s probe), moved to the model's device.
MechanismScores mechanism_scores(nn::Module& model, const train::ForwardFn& forward,
                                 const train::Batch& batch);

// Olsson et al.'s in-context-learning score of a sequence model: the mean next-token loss
// (cross-entropy in nats, over the scored targets) at the late positions [late_from, T)
// minus the mean at the early positions [early_from, early_to), on batches 0 .. batches-1
// of `split` (eval mode, no graph; the mode is restored). Negative = later tokens, with
// more context, are predicted better. Olsson et al. take token 500 minus token 50 of a
// 512-token context; a short context scales both (heads_compare: [T/8, T/4) and
// [3T/4, T)). Computed in float64 from the logits. ValueError unless
// 0 <= early_from < early_to <= late_from < T for the task's T = max_len, the task is a
// sequence task, and a range has scored targets.
struct InContextScore {
  double early_loss = 0, late_loss = 0;
  double score = 0;  // late_loss - early_loss
};
InContextScore in_context_score(nn::Module& model, const train::ForwardFn& forward,
                                const train::Task& task, train::Split split, std::int64_t batches,
                                std::int64_t batch_size, std::int64_t early_from,
                                std::int64_t early_to, std::int64_t late_from);

}  // namespace headgrad::inspect
