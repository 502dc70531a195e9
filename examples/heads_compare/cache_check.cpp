// Checks of a run read from the cache (see check_cached_run in cache.hpp): the lengths of
// its arrays against the run's layers, heads and step budget, and the range of every
// number. A file that fails is not used, so an edited or damaged file can neither crash
// the report nor put impossible numbers into it.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>

#include "cache.hpp"

namespace heads_compare {

namespace {

using Matrix = std::vector<std::vector<double>>;
constexpr double kInf = std::numeric_limits<double>::infinity();

std::string text_of(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

// Records the first problem; every check after it is a no-op.
class Checks {
 public:
  Checks(const RunSpec& spec, std::int64_t eval_every)
      : layers_(static_cast<std::size_t>(spec.model.layers)),
        heads_(static_cast<std::size_t>(spec.model.heads)),
        steps_(spec.task.steps),
        eval_every_(eval_every > 0 ? eval_every : spec.task.steps) {}
  const std::string& problem() const { return problem_; }
  std::size_t heads_in_model() const { return layers_ * heads_; }
  std::int64_t steps() const { return steps_; }

  void fail(const std::string& name, const std::string& what) {
    if (problem_.empty()) problem_ = "'" + name + "' " + what;
  }
  // NaN (null in the file: a diverged run, a task without accuracy) or a finite number in
  // [lo, hi], up to rounding.
  void number(const std::string& name, double v, double lo, double hi) {
    if (std::isinf(v)) return fail(name, "is " + text_of(v) + ", not a finite number");
    const double slack = 1e-9 * std::max(1.0, std::fabs(hi));
    if (std::isnan(v) || (v >= lo && v <= hi + slack)) return;
    fail(name, "is " + text_of(v) + ", outside [" + text_of(lo) + ", " + text_of(hi) + "]");
  }
  void integer(const std::string& name, std::int64_t v, std::int64_t lo, std::int64_t hi) {
    if (v < lo || v > hi)
      fail(name, "is " + std::to_string(v) + ", outside [" + std::to_string(lo) + ", " +
                     std::to_string(hi) + "]");
  }
  void length(const std::string& name, std::size_t got, std::size_t want, const std::string& why) {
    if (got != want)
      fail(name, "has " + std::to_string(got) + " entries, expected " + std::to_string(want) +
                     " (" + why + ")");
  }
  void numbers(const std::string& name, const std::vector<double>& v, double lo, double hi) {
    for (std::size_t i = 0; i < v.size() && problem_.empty(); ++i)
      number(name + "[" + std::to_string(i) + "]", v[i], lo, hi);
  }
  // A [layer][head] table of numbers in [lo, hi].
  void per_head(const std::string& name, const Matrix& m, double lo, double hi) {
    length(name, m.size(), layers_, std::to_string(layers_) + " layers");
    for (std::size_t l = 0; l < m.size() && problem_.empty(); ++l) {
      const std::string row = name + "[" + std::to_string(l) + "]";
      length(row, m[l].size(), heads_, std::to_string(heads_) + " heads");
      numbers(row, m[l], lo, hi);
    }
  }
  // The steps at which the trainer evaluates: every eval_every steps and at the last.
  std::vector<std::int64_t> eval_steps() const {
    std::vector<std::int64_t> s;
    for (std::int64_t k = eval_every_; k < steps_; k += eval_every_) s.push_back(k);
    s.push_back(steps_);
    return s;
  }
  std::int64_t eval_every() const { return eval_every_; }

 private:
  std::size_t layers_, heads_;
  std::int64_t steps_, eval_every_;
  std::string problem_;
};

void check_sizes(Checks& c, const RunResult& r) {
  c.integer("params", r.params, 1, std::numeric_limits<std::int64_t>::max());
  c.integer("attention_params", r.attention_params, 1, r.params);
  c.length("head_params", r.head_params.size(), c.heads_in_model(), "layers x heads");
  for (std::size_t i = 0; i < r.head_params.size(); ++i)
    c.integer("head_params[" + std::to_string(i) + "]", r.head_params[i], 1, r.attention_params);
  const std::int64_t sum =
      std::accumulate(r.head_params.begin(), r.head_params.end(), std::int64_t{0});
  if (sum > r.attention_params)
    c.fail("head_params", "sum to " + std::to_string(sum) + ", more than attention_params " +
                              std::to_string(r.attention_params));
}

void check_curve(Checks& c, const RunResult& r) {
  const auto steps = c.eval_steps();
  c.length("curve", r.curve.size(), steps.size(),
           "evaluations every " + std::to_string(c.eval_every()) + " steps and at step " +
               std::to_string(c.steps()));
  for (std::size_t i = 0; i < r.curve.size() && c.problem().empty(); ++i) {
    const EvalPoint& p = r.curve[i];
    const std::string at = "curve[" + std::to_string(i) + "].";
    if (i < steps.size()) c.integer(at + "step", p.step, steps[i], steps[i]);
    c.number(at + "train_loss", p.train_loss, 0, kInf);
    c.number(at + "train_accuracy", p.train_accuracy, 0, 1);
    c.number(at + "loss", p.loss, 0, kInf);
    c.number(at + "accuracy", p.accuracy, 0, 1);
    c.per_head(at + "previous_token", p.previous_token, 0, 1);
    c.per_head(at + "induction", p.induction, 0, 1);
    c.per_head(at + "induction_all", p.induction_all, 0, 1);
    c.per_head(at + "grad_z", p.grad_z, 0, kInf);
  }
}

void check_finals(Checks& c, const RunResult& r) {
  c.number("final_val_loss", r.final_val_loss, 0, kInf);
  c.number("final_val_acc", r.final_val_acc, 0, 1);
  c.number("final_test_loss", r.final_test_loss, 0, kInf);
  c.number("final_test_acc", r.final_test_acc, 0, 1);
  if (r.solved_step) c.integer("solved_step", *r.solved_step, 0, c.steps());
  if (r.phase_step) c.integer("phase_step", *r.phase_step, 0, c.steps());
  if (!r.importance_raw.empty() || !r.importance_normalized.empty()) {  // (not without pruning)
    c.per_head("importance_raw", r.importance_raw, 0, kInf);
    c.per_head("importance_normalized", r.importance_normalized, 0, 1);
  }
  c.number("seconds", r.seconds, 0, kInf);
  c.number("inspect_seconds", r.inspect_seconds, 0, r.seconds);
  const EvalPoint& f = r.final_point;
  if (f.step == 0) return;  // cached before it was recorded
  c.integer("final_point.step", f.step, c.steps(), c.steps());
  c.number("final_point.loss", f.loss, 0, kInf);
  c.number("final_point.accuracy", f.accuracy, 0, 1);
  if (f.previous_token.empty()) return;  // a regression task: no tokens to score
  c.per_head("final_point.previous_token", f.previous_token, 0, 1);
  c.per_head("final_point.induction", f.induction, 0, 1);
  c.per_head("final_point.induction_all", f.induction_all, 0, 1);
}

// Pruning curves hold one point per number of heads removed, 0 .. layers x heads.
void check_pruning(Checks& c, const RunResult& r, std::int64_t orders) {
  const std::size_t points = c.heads_in_model() + 1;
  const std::string why = "0 to " + std::to_string(points - 1) + " heads removed";
  const auto curve = [&](const std::string& name, const std::vector<double>& loss,
                         const std::vector<double>& accuracy) {
    c.length(name + ".loss", loss.size(), points, why);
    c.length(name + ".accuracy", accuracy.size(), points, why);
    c.numbers(name + ".loss", loss, 0, kInf);
    c.numbers(name + ".accuracy", accuracy, 0, 1);
  };
  curve("by_importance", r.by_importance.loss, r.by_importance.accuracy);
  curve("greedy", r.greedy.loss, r.greedy.accuracy);
  const auto& b = r.random;
  c.integer("random.orders", b.orders, orders, orders);
  curve("random.mean", b.mean_loss, b.mean_accuracy);
  curve("random.low", b.low_loss, b.low_accuracy);
  curve("random.high", b.high_loss, b.high_accuracy);
}

// Token tasks: every head's pattern on the sample, T x T for its T tokens; others: none.
void check_patterns(Checks& c, const RunResult& r) {
  for (std::size_t i = 0; i < r.sample_tokens.size(); ++i)
    c.integer("sample_tokens[" + std::to_string(i) + "]", r.sample_tokens[i], 0,
              std::numeric_limits<std::int64_t>::max());
  const std::size_t t = r.sample_tokens.size();
  if (t == 0) return c.length("patterns", r.patterns.size(), 0, "no sample tokens");
  Matrix flat;  // [layer][head] of the patterns' sizes, checked like any per-head table
  for (std::size_t l = 0; l < r.patterns.size(); ++l) {
    flat.emplace_back();
    for (std::size_t h = 0; h < r.patterns[l].size(); ++h) {
      const std::string name = "patterns[" + std::to_string(l) + "][" + std::to_string(h) + "]";
      c.length(name, r.patterns[l][h].size(), t * t,
               std::to_string(t) + " x " + std::to_string(t) + " sample tokens");
      c.numbers(name, r.patterns[l][h], 0, 1);
      flat.back().push_back(0);
    }
  }
  c.per_head("patterns", flat, 0, 0);
}

// The view's patterns (runs of --view-seeds): examples x T tokens, and every head's T x T
// pattern on each example ([example][layer][head]), values in [0, 1].
void check_view(Checks& c, const RunResult& r) {
  if (r.view_patterns.empty() && r.view_tokens.empty()) return;
  const auto t = static_cast<std::size_t>(std::max<std::int64_t>(r.view_length, 0));
  c.integer("view.length", r.view_length, 1, std::numeric_limits<std::int64_t>::max());
  if (t == 0) return;
  const std::size_t examples = r.view_tokens.size() / t;
  c.length("view.tokens", r.view_tokens.size(), examples * t,
           "a whole number of examples of " + std::to_string(t) + " tokens");
  std::size_t heads = 0;
  for (const auto& layer : r.patterns) heads += layer.size();
  c.length("view.patterns", r.view_patterns.size(), examples * heads * t * t,
           std::to_string(examples) + " examples x " + std::to_string(heads) + " heads x " +
               std::to_string(t) + " x " + std::to_string(t));
  const std::vector<double> values(r.view_patterns.begin(), r.view_patterns.end());
  c.numbers("view.patterns", values, 0, 1);
}

// The layer-0 circuit (study.hpp, Circuit): a known corruption; the per-head grid and the
// three path grids (receivers x senders: the heads of layers 1 .. L-1 and 0 .. L-2) sized
// by the model, or all empty (the two runs tied).
void check_circuit(Checks& c, const RunResult& r) {
  const Circuit& k = r.circuit;
  if (!k.recorded()) return;
  if (k.corruption != "context" && k.corruption != "probe")
    return c.fail("circuit.corruption", "is '" + k.corruption + "', not context or probe");
  c.integer("circuit.prompts", k.prompts, 0, kPatchingPrompts);
  if (k.heads.empty()) return c.length("circuit.paths", k.paths.size(), 0, "no circuit heads");
  c.per_head("circuit.heads", k.heads, -kInf, kInf);
  c.length("circuit.paths", k.paths.size(), 3, "q, k and v");
  const std::size_t layers = static_cast<std::size_t>(r.spec.model.layers);
  const std::size_t heads = static_cast<std::size_t>(r.spec.model.heads);
  const std::size_t side = (layers - 1) * heads;
  for (std::size_t v = 0; v < k.paths.size(); ++v) {
    const std::string name = "circuit.paths[" + std::to_string(v) + "]";
    c.length(name, k.paths[v].size(), side, "a receiver per head of layers 1 .. L-1");
    for (const auto& senders : k.paths[v]) {
      c.length(name, senders.size(), side, "a sender per head of layers 0 .. L-2");
      c.numbers(name, senders, -kInf, kInf);
    }
  }
}

}  // namespace

std::string check_cached_run(const RunResult& result, const StudyConfig& config) {
  Checks c(result.spec, config.eval_every);
  check_sizes(c, result);
  check_curve(c, result);
  check_finals(c, result);
  if (config.prune) check_pruning(c, result, config.random_orders);
  check_patterns(c, result);
  check_view(c, result);
  check_circuit(c, result);
  return c.problem();
}

}  // namespace heads_compare
