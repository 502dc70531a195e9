// heads_compare's view.html (inspect::write_attention_view): for every token task and each
// --view-seeds seed, every model of every arm at its selected learning rate, on that seed's
// first view_examples report-split examples, with each head's scores from the run
// (induction and previous-token at the last evaluation, importance, the gradient norm of
// its output z at the last recorded step, activation patching on the recall tasks). Panels
// A and B open on the fixed-width arm's H = 1 and largest-H models: the study's question.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>

#include "headgrad/inspect/view.hpp"
#include "plots_common.hpp"
#include "report.hpp"

namespace heads_compare {
namespace {

namespace hg = headgrad;
using Matrix = std::vector<std::vector<double>>;

std::string model_name(const Selected& s, std::uint64_t seed) {
  const ModelShape& m = s.cell->model;
  return "H = " + std::to_string(m.heads) + " · " + m.arm + " (E " + std::to_string(m.d_model) +
         ", d " + std::to_string(m.head_dim) + ", " + std::to_string(m.layers) + " layers) · lr " +
         render::fmt("%g", s.cell->lr) + " · seed " + std::to_string(seed);
}

const RunResult* run_of_seed(const Selected& s, std::uint64_t seed) {
  for (const RunResult* r : s.cell->runs)
    if (r != nullptr && r->spec.seed == seed && !r->view_patterns.empty()) return r;
  return nullptr;
}

// A [layer][head] table, or NaN everywhere when the run lacks it (wrong size).
Matrix table_or_nan(const Matrix& m, std::int64_t layers, std::int64_t heads) {
  bool ok = static_cast<std::int64_t>(m.size()) == layers;
  for (const auto& row : m) ok = ok && static_cast<std::int64_t>(row.size()) == heads;
  if (ok) return m;
  return Matrix(layers, std::vector<double>(heads, std::numeric_limits<double>::quiet_NaN()));
}

// The circuit's composition per head (study.hpp, Circuit): for a layer-0 head its path
// through k into the receiver (the last layer's head with the largest context-patching
// effect); for a last-layer head the largest path through k into it from a layer-0 head;
// NaN elsewhere and for runs without a circuit.
Matrix k_composition(const RunResult& r, std::int64_t layers, std::int64_t heads) {
  Matrix m(layers, std::vector<double>(heads, std::numeric_limits<double>::quiet_NaN()));
  const Circuit& c = r.circuit;
  if (layers < 2 || c.paths.size() != 3 || static_cast<std::int64_t>(c.heads.size()) != layers)
    return m;
  const Matrix& k = c.paths[1];  // [receiver][sender]; the last layer's receivers come last
  const auto h = static_cast<std::size_t>(heads);
  if (k.size() < h) return m;
  const std::vector<double>& last = c.heads.back();
  const auto receiver =
      static_cast<std::size_t>(std::max_element(last.begin(), last.end()) - last.begin());
  const std::size_t first_last = k.size() - h;
  for (std::size_t s = 0; s < h && s < k[first_last + receiver].size(); ++s)
    m[0][s] = k[first_last + receiver][s];
  for (std::size_t r2 = 0; r2 < h; ++r2) {
    const std::vector<double>& from = k[first_last + r2];
    m[static_cast<std::size_t>(layers - 1)][r2] =
        *std::max_element(from.begin(), from.begin() + static_cast<std::ptrdiff_t>(h));
  }
  return m;
}

std::vector<hg::inspect::ViewScore> scores_of(const RunResult& r, std::int64_t layers,
                                              std::int64_t heads) {
  std::vector<hg::inspect::ViewScore> out;
  auto add = [&](const char* key, const char* label, const Matrix& m) {
    out.push_back({key, label, table_or_nan(m, layers, heads)});
  };
  const EvalPoint* last = r.curve.empty() ? nullptr : &r.curve.back();
  const EvalPoint* last_grads = nullptr;  // gradient norms are recorded at some steps only
  for (const EvalPoint& p : r.curve)
    if (!p.grad_z.empty()) last_grads = &p;
  add("induction", "induction", last ? last->induction : Matrix{});
  add("previous_token", "prev-token", last ? last->previous_token : Matrix{});
  add("importance", "importance", r.importance_normalized);
  add("grad_norm", "|dL/dz|", last_grads ? last_grads->grad_z : Matrix{});
  if (!r.patching.empty()) add("patching", "patching", r.patching);
  if (!r.circuit.heads.empty()) {
    add("context_patching", "ctx patch", r.circuit.heads);
    add("k_composition", "K-comp", k_composition(r, layers, heads));
  }
  return out;
}

hg::inspect::ViewModel view_model(const Selected& s, const RunResult& r, std::uint64_t seed) {
  hg::inspect::ViewModel m;
  m.name = model_name(s, seed);
  m.layers = static_cast<std::int64_t>(r.patterns.size());
  m.heads = r.patterns.empty() ? 0 : static_cast<std::int64_t>(r.patterns[0].size());
  m.patterns = r.view_patterns;
  m.scores = scores_of(r, m.layers, m.heads);
  return m;
}

// The group of one task and seed: every arm's models that have the view's data.
std::optional<hg::inspect::ViewGroup> group_of(const StudyConfig& config, const Study& study,
                                               const TaskSetting& task, std::uint64_t seed) {
  const auto task_it = study.selected.find(task.name);
  if (task_it == study.selected.end()) return std::nullopt;
  hg::inspect::ViewGroup g;
  g.name = task.name + " · seed " + std::to_string(seed);
  const RunResult* first = nullptr;
  std::size_t fixed_width_first = 0, fixed_width_last = 0;
  bool fixed_width_seen = false;
  for (const std::string& arm : config.arms) {
    const auto arm_it = task_it->second.find(arm);
    if (arm_it == task_it->second.end()) continue;
    for (const Selected& s : arm_it->second) {
      const RunResult* r = run_of_seed(s, seed);
      if (r == nullptr) continue;
      if (first == nullptr) first = r;
      if (r->view_length != first->view_length || r->view_tokens != first->view_tokens) continue;
      if (arm == "fixed_width") {
        if (!fixed_width_seen) fixed_width_first = g.models.size();
        fixed_width_seen = true;
        fixed_width_last = g.models.size();
      }
      g.models.push_back(view_model(s, *r, seed));
    }
  }
  if (first == nullptr) return std::nullopt;
  g.length = first->view_length;
  const auto labels = make_run_task(first->spec);
  const std::size_t examples = first->view_tokens.size() / static_cast<std::size_t>(g.length);
  for (std::size_t e = 0; e < examples; ++e) {
    const auto row = first->view_tokens.begin() + static_cast<std::ptrdiff_t>(e * g.length);
    g.examples.push_back(labels->token_labels({row, row + g.length}));
  }
  g.model_a = fixed_width_seen ? fixed_width_first : 0;
  g.model_b = fixed_width_seen ? fixed_width_last : g.models.size() - 1;
  return g;
}

}  // namespace

bool write_view_html(const StudyConfig& config, const Study& study) {
  hg::inspect::AttentionView view;
  view.title = "heads_compare: attention patterns, head by head (" + config.preset + " preset)";
  view.note =
      "Each model at its selected learning rate (the best mean selection-split loss "
      "over seeds), on the first " +
      std::to_string(config.view_examples) +
      " report-split examples of the seed's task; scores under each head are that "
      "run's: induction and previous-token scores at the last evaluation, importance "
      "(normalised), the gradient norm of the head's output z, activation patching "
      "where measured, and the circuit into layer 0: ctx patch (the head's effect when "
      "the context is corrupted) and K-comp (layer 0: its path through the keys of the "
      "last layer's strongest head; last layer: the strongest such path into it). Open "
      "report.md for the statistics.";
  for (const TaskSetting& task : config.tasks)
    for (const std::uint64_t seed : config.view_seeds)
      if (auto g = group_of(config, study, task, seed)) view.groups.push_back(std::move(*g));
  const std::filesystem::path path = std::filesystem::path(config.out_dir) / "view.html";
  if (view.groups.empty()) {
    // A view.html already there is never deleted: --cached-only may lack runs an earlier
    // invocation showed. report.md says it is from an earlier invocation.
    std::error_code ec;
    const bool earlier = std::filesystem::exists(path, ec);
    std::fprintf(stderr,
                 "heads_compare: no view.html written: no run of the --view-seeds seeds on a "
                 "token task is in this study%s\n",
                 earlier ? "; the view.html of an earlier invocation is left as it was" : "");
    return false;
  }
  hg::inspect::write_attention_view(path, view);
  return true;
}

}  // namespace heads_compare
