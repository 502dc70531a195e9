// The activation-patching protocol for the recall tasks (associative_recall and mqar,
// train/tasks.hpp): which prompts are clean and corrupted, where the metric is read, and
// the answers it compares.
//
//   clean       the task's prompt, as a batch of the task gives it
//   corrupted   the same prompt with the query's key replaced by another key of the prompt
//               whose value differs, so the right answer changes (associative_recall: the
//               token after the query, which shows the answer, becomes the new key's value
//               too; a causal model cannot read it at the scored position anyway)
//   position    the scored position: associative_recall's only one; mqar's first query
//   answer      the clean answer (the query's value); wrong: the corrupted answer (the
//               replacement key's value)
//   metric      logit_difference(logits, position, answer, wrong), normalised by Patching
// The replacement key is the next key of the prompt after the query's (cyclically) whose
// value differs from the query's value; an associative_recall prompt whose keys all carry
// the query's value has none and is left out (counted in `dropped`).
//
// The context corruption (RecallCorruption::context) keeps the query and changes the
// context instead: the query's key and the replacement key swap places among the pairs, so
// the query now matches the replacement's value (answer and wrong as above). The query
// corruption changes one token at the scored position, so in a causal model every layer-0
// output at an earlier position is the same in both runs and layer 0 cannot show an
// effect; under the context corruption the layer-0 outputs at the two pairs differ, which
// is where a previous-token head feeds an induction head's keys (K-composition).
#pragma once

#include <cstdint>
#include <string>

#include "headgrad/core/tensor.hpp"
#include "headgrad/train/batch.hpp"
#include "headgrad/train/tasks.hpp"

namespace headgrad::inspect {

struct CorruptedPrompts {
  Tensor clean, corrupted;         // (N, T) int64
  Tensor key_padding_mask;         // (N, T) bool, or undefined
  Tensor position, answer, wrong;  // (N) int64
  Tensor kept;                     // (N) int64: each prompt's row in the batch given
  std::int64_t dropped = 0;        // prompts left out (no key with another value)
};

enum class RecallCorruption {
  query,    // the query's key replaced by the replacement key
  context,  // the query's key and the replacement key swap places in the context
};
std::string to_string(RecallCorruption kind);
RecallCorruption parse_recall_corruption(const std::string& name);  // "query", "context"

// ValueError for another task than associative_recall or mqar, or a batch without tokens
// and targets; the batch is a task's (one scored query per example for associative_recall).
CorruptedPrompts corrupt_recall(const train::Task& task, const train::Batch& batch,
                                RecallCorruption kind);
// corrupt_recall(task, batch, RecallCorruption::query).
CorruptedPrompts corrupt_recall_query(const train::Task& task, const train::Batch& batch);

}  // namespace headgrad::inspect
