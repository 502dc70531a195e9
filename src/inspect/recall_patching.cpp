// The recall tasks' patching protocol (see inspect/recall_patching.hpp).
#include "headgrad/inspect/recall_patching.hpp"

#include <string>
#include <vector>

#include "headgrad/core/error.hpp"
#include "headgrad/ops/index.hpp"

namespace headgrad::inspect {

namespace {

// One prompt's corruption: the scored position, the two answers, and the replacement key
// and value; found false when the prompt has no key whose value differs.
struct Corruption {
  bool found = false;
  std::int64_t position = 0, answer = 0, wrong = 0, key = 0;
  std::int64_t query_pair = 0, key_pair = 0;  // the pairs of the query's key and of `key`
};

// tokens and targets of one example (length T). Keys sit at 0, 2, ..., 2 pairs - 2 with
// their values one after; `pairs` is how many.
Corruption corrupt_one(const std::int64_t* tokens, const std::int64_t* targets, std::int64_t t,
                       std::int64_t pairs, std::int64_t position) {
  Corruption c;
  c.position = position;
  c.answer = targets[position];
  const std::int64_t query = tokens[position];
  std::int64_t query_pair = -1;
  for (std::int64_t j = 0; j < pairs; ++j)
    if (tokens[2 * j] == query) query_pair = j;
  if (query_pair < 0 || 2 * pairs > t) return c;
  for (std::int64_t step = 1; step < pairs; ++step) {
    const std::int64_t j = (query_pair + step) % pairs;
    if (tokens[2 * j + 1] != c.answer) {
      c.found = true;
      c.query_pair = query_pair;
      c.key_pair = j;
      c.key = tokens[2 * j];
      c.wrong = tokens[2 * j + 1];
      return c;
    }
  }
  return c;
}

// The corrupted copy of one prompt (`row`, length t). associative_recall shows the answer
// one after the query: it becomes the wrong answer too (a causal model cannot read it at the
// scored position anyway).
std::vector<std::int64_t> corrupted_row(const std::int64_t* row, std::int64_t t,
                                        const Corruption& c, RecallCorruption kind, bool recall) {
  std::vector<std::int64_t> changed(row, row + t);
  const auto at = [](std::int64_t i) { return static_cast<std::size_t>(i); };
  if (kind == RecallCorruption::query) {
    changed[at(c.position)] = c.key;
  } else {
    std::swap(changed[at(2 * c.query_pair)], changed[at(2 * c.key_pair)]);
  }
  if (recall && c.position + 1 < t) changed[at(c.position + 1)] = c.wrong;
  return changed;
}

}  // namespace

std::string to_string(RecallCorruption kind) {
  return kind == RecallCorruption::query ? "query" : "context";
}

RecallCorruption parse_recall_corruption(const std::string& name) {
  if (name == "query") return RecallCorruption::query;
  if (name == "context") return RecallCorruption::context;
  throw ValueError("inspect::parse_recall_corruption: unknown corruption '" + name +
                   "'; known: query (the query's key replaced), context (the query's key and "
                   "another key swap places in the context)");
}

CorruptedPrompts corrupt_recall_query(const train::Task& task, const train::Batch& batch) {
  return corrupt_recall(task, batch, RecallCorruption::query);
}

CorruptedPrompts corrupt_recall(const train::Task& task, const train::Batch& batch,
                                RecallCorruption kind) {
  const std::string op = "inspect::corrupt_recall (" + to_string(kind) + ")";
  const std::string name = task.name();
  const bool recall = name == "associative_recall", mqar = name == "mqar";
  if (!recall && !mqar)
    throw ValueError(op + ": the protocol is defined for associative_recall and " + "mqar, not '" +
                     name + "'");
  if (!batch.tokens.defined() || !batch.targets.defined() ||
      batch.tokens.shape() != batch.targets.shape() || batch.tokens.dim() != 2)
    throw ValueError(op + ": the batch needs tokens and targets of one shape (N, T)");
  const Tensor tokens_cpu = batch.tokens.to(Device::cpu());
  const std::vector<std::int64_t> tokens = tokens_cpu.to_vector<std::int64_t>();
  const std::vector<std::int64_t> targets =
      batch.targets.to(Device::cpu()).to_vector<std::int64_t>();
  const std::int64_t n = batch.tokens.size(0), t = batch.tokens.size(1);

  CorruptedPrompts out;
  std::vector<std::int64_t> kept, clean, corrupted, position, answer, wrong;
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t* row = tokens.data() + i * t;
    const std::int64_t* target = targets.data() + i * t;
    std::int64_t first = -1, scored = 0;
    for (std::int64_t p = 0; p < t; ++p)
      if (target[p] != train::kIgnoreIndex) {
        if (first < 0) first = p;
        ++scored;
      }
    // associative_recall: [k1 v1 .. kn vn SEP q ...], q at 2n + 1; mqar: K pairs, K queries.
    const std::int64_t pairs = recall ? (first - 1) / 2 : scored;
    const Corruption c = first < 0 ? Corruption{} : corrupt_one(row, target, t, pairs, first);
    if (!c.found) {
      ++out.dropped;
      continue;
    }
    kept.push_back(i);
    clean.insert(clean.end(), row, row + t);
    const std::vector<std::int64_t> changed = corrupted_row(row, t, c, kind, recall);
    corrupted.insert(corrupted.end(), changed.begin(), changed.end());
    position.push_back(c.position);
    answer.push_back(c.answer);
    wrong.push_back(c.wrong);
  }
  const auto m = static_cast<std::int64_t>(kept.size());
  if (m == 0)
    throw ValueError(op + ": none of the batch's " + std::to_string(n) +
                     " prompts has a key whose value differs from the query's");
  out.clean = from_vector<std::int64_t>(clean, {m, t});
  out.corrupted = from_vector<std::int64_t>(corrupted, {m, t});
  out.position = from_vector<std::int64_t>(position, {m});
  out.answer = from_vector<std::int64_t>(answer, {m});
  out.wrong = from_vector<std::int64_t>(wrong, {m});
  out.kept = from_vector<std::int64_t>(kept, {m});
  if (batch.key_padding_mask.defined())
    out.key_padding_mask = index_select(batch.key_padding_mask.to(Device::cpu()), 0, out.kept);
  return out;
}

}  // namespace headgrad::inspect
