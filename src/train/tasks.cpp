// The task registry: make_task by name, task_names, and the utilities the task families
// share (argument checks, enum names).
#include "headgrad/train/tasks.hpp"

#include <algorithm>
#include <cstdio>

#include "headgrad/core/error.hpp"
#include "headgrad/core/storage.hpp"
#include "headgrad/train/task_loss.hpp"
#include "tasks_detail.hpp"

namespace headgrad::train {

std::string to_string(Split split) {
  switch (split) {
    case Split::train:
      return "train";
    case Split::validation:
      return "validation";
    case Split::test:
      return "test";
  }
  return "unknown";
}

std::string to_string(TaskKind kind) {
  switch (kind) {
    case TaskKind::sequence:
      return "sequence";
    case TaskKind::classification:
      return "classification";
    case TaskKind::regression:
      return "regression";
  }
  return "unknown";
}

namespace {

// Every task, once: its name and how to make it (task_names() lists them in this order).
struct TaskEntry {
  const char* name;
  detail::TaskFactory make;
};

constexpr TaskEntry kTasks[] = {
    {"copy", detail::make_copy_task},
    {"reverse", detail::make_reverse_task},
    {"sort", detail::make_sort_task},
    {"associative_recall", detail::make_associative_recall_task},
    {"modular_addition", detail::make_modular_addition_task},
    {"mqar", detail::make_mqar_task},
    {"char_lm", detail::make_char_lm_task},
    {"char_classification", detail::make_char_classification_task},
    {"fusion", detail::make_fusion_task},
    {"nearest_neighbour", detail::make_nearest_neighbour_task},
    {"d_retrieval", detail::make_d_retrieval_task},
};

}  // namespace

std::vector<std::string> task_names() {
  std::vector<std::string> out;
  for (const TaskEntry& t : kTasks) out.emplace_back(t.name);
  return out;
}

std::unique_ptr<Task> make_task(const std::string& name, const TaskOptions& options) {
  for (const TaskEntry& t : kTasks)
    if (name == t.name) return t.make(name, options);
  std::string known;
  for (const auto& n : task_names()) known += (known.empty() ? "" : ", ") + n;
  throw ValueError("make_task: unknown task '" + name + "'; known tasks: " + known);
}

namespace detail {

void check_batch_args(const Task& t, Split split, double test_fraction, std::int64_t index,
                      std::int64_t batch_size) {
  const std::string task = t.name();
  if (split == Split::test && !(test_fraction > 0))
    throw ValueError(task + ".batch: Split::test needs a test split, but test_fraction = " +
                     std::to_string(test_fraction) +
                     ": the test split is off by default (training keeps those examples). "
                     "Make the task with train::TaskOptions().with_test_fraction(0.15), as "
                     "heads_compare does, or evaluate on Split::validation");
  if (index < 0) throw ValueError(task + ".batch: index " + std::to_string(index) + " is negative");
  if (batch_size < 1)
    throw ValueError(task + ".batch: batch_size " + std::to_string(batch_size) +
                     " must be at least 1");
  // The batch's largest tensor: tokens and targets (int64), or a regression task's inputs
  // and targets (float32, max(F_in, F_out) per position), or fusion's features. Counted in
  // double, which cannot overflow here.
  const bool regression = t.kind() == TaskKind::regression;
  const double width =
      regression ? static_cast<double>(std::max(t.input_dim(), t.vocab_size())) : 1.0;
  const double per_example =
      std::max(static_cast<double>(t.max_len()) * width, static_cast<double>(t.num_features()));
  const double bytes = static_cast<double>(batch_size) * per_example * (regression ? 4.0 : 8.0);
  auto gib = [](double b) {
    char text[32];
    std::snprintf(text, sizeof text, "%.3g GiB", b / double(1 << 30));
    return std::string(text);
  };
  auto refuse = [&](const std::string& why) {
    throw MemoryError(task + ".batch: a batch of " + std::to_string(batch_size) +
                      " examples of up to " + std::to_string(t.max_len()) +
                      " positions (max_len, set by the task's option length) needs " + why +
                      "; lower batch_size or the task's length");
  };
  if (const std::size_t limit = max_tensor_bytes(); bytes > static_cast<double>(limit))
    refuse(gib(bytes) + " for one tensor, more than the limit of " +
           gib(static_cast<double>(limit)) +
           " (the machine's memory unless set_max_tensor_bytes changed it)");
  // Two such tensors (tokens and targets, inputs and targets) are filled at once.
  if (2 * bytes >= double(64 << 20))
    if (const auto available = available_cpu_memory(); available && 2 * bytes > double(*available))
      refuse(gib(2 * bytes) + " for its tensors, more than the " +
             gib(static_cast<double>(*available)) + " of memory available now");
}

void require_option(bool ok, const std::string& task, const std::string& option,
                    const std::string& value, const std::string& requirement) {
  if (!ok) throw ValueError(task + ": option " + option + " = " + value + " " + requirement);
}

void require_validation_fraction(const std::string& task, const TaskOptions& options) {
  const double f = options.validation_fraction;
  require_option(f > 0 && f < 1, task, "validation_fraction", std::to_string(f),
                 "must lie strictly between 0 and 1");
  const double t = options.test_fraction;
  require_option(t >= 0 && f + t < 1, task, "test_fraction", std::to_string(t),
                 "must be at least 0 with validation_fraction + test_fraction = " +
                     std::to_string(f + t) + " below 1");
}

// prefix + n, appended (GCC 12's -Wrestrict misreads "literal" + std::string here).
std::string numbered(const char* prefix, std::int64_t n) {
  std::string out(prefix);
  out += std::to_string(n);
  return out;
}

TokenLabel special_label(std::int64_t id) {
  if (id == kPadId) return {"PAD", "pad"};
  if (id == kSepId) return {"SEP", "sep"};
  return {numbered("s", id - kFirstSymbolId), "symbol"};
}

TokenLabel letter_label(std::int64_t id) {
  const std::int64_t i = id - kFirstSymbolId;
  if (i < 0) return special_label(id);
  if (i < 26) return {std::string(1, static_cast<char>('a' + i)), "symbol"};
  return special_label(id);
}

std::vector<TokenLabel> key_value_labels(const std::vector<std::int64_t>& tokens,
                                         std::int64_t alphabet, std::size_t query_from,
                                         bool filler) {
  std::vector<TokenLabel> out;
  for (std::size_t t = 0; t < tokens.size(); ++t) {
    const std::int64_t i = tokens[t] - kFirstSymbolId;
    if (i < 0 && tokens[t] == kPadId && t >= query_from && filler)
      out.push_back({"_", "filler"});
    else if (i < 0)
      out.push_back(special_label(tokens[t]));
    else if (i < alphabet && t >= query_from)
      out.push_back({numbered("?K", i), "query"});
    else if (i < alphabet)
      out.push_back({numbered("K", i), "key"});
    else
      out.push_back({numbered("V", i - alphabet), "value"});
  }
  return out;
}

}  // namespace detail

std::vector<TokenLabel> Task::token_labels(const std::vector<std::int64_t>& tokens) const {
  std::vector<TokenLabel> out;
  if (kind() == TaskKind::regression) return out;
  for (const std::int64_t id : tokens) out.push_back(detail::special_label(id));
  return out;
}

Tensor Task::loss(const Tensor& logits, const Batch& batch) const {
  return task_loss(logits, batch, kind());
}

std::pair<std::int64_t, std::int64_t> Task::count_scored(const Tensor& logits,
                                                         const Batch& batch) const {
  return train::count_scored(logits, batch, kind());
}

Metrics Task::metrics(const Tensor& logits, const Batch& batch) const {
  return evaluate_logits(logits, batch, kind());
}

}  // namespace headgrad::train
