// heads_compare's machine-readable outputs (see report.hpp): summary.json (every run,
// every cell of the grid with its intervals, each model at its selected learning rate with
// the paired comparisons, the baselines) and the CSV tables.
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "atomic_write.hpp"
#include "effects.hpp"
#include "report.hpp"

namespace heads_compare {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// A table's text, written to its file by write_file_atomically once complete.
std::ostringstream table() {
  std::ostringstream out;
  out.precision(9);
  return out;
}

json number(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

json interval(const Interval& i) {
  return {{"estimate", number(i.estimate)}, {"low", number(i.low)}, {"high", number(i.high)}};
}

json model_json(const ModelShape& m) {
  return {{"arm", m.arm},
          {"layers", m.layers},
          {"heads", m.heads},
          {"head_dim", m.head_dim},
          {"d_model", m.d_model}};
}

json cell_json(const Cell& c) {
  json j = model_json(c.model);
  j["task"] = c.task.name;
  j["steps"] = c.task.steps;
  j["lr"] = c.lr;
  j["n"] = c.runs.size();
  j["params"] = c.params;
  j["solved"] = c.solved;
  j["success_rate"] = interval(c.success);
  j["final_test_loss"] = interval(c.final_loss);
  j["final_test_acc"] = interval(c.final_acc);
  j["final_val_loss_mean"] = number(c.val_loss.estimate);
  j["final_val_acc_mean"] = number(c.val_acc.estimate);
  j["median_steps_to_solve"] = interval(c.median_solve);
  j["runs_with_induction_head"] = c.phase_changes;
  j["median_phase_change_step"] = interval(c.median_phase);
  return j;
}

json paired_json(const statistics::PairedComparison& p) {
  return {{"mean_difference", interval(p.mean_difference)},
          {"hodges_lehmann", interval(p.shift.shift)},
          {"hodges_lehmann_coverage", number(p.shift.coverage)},
          {"n", p.n},
          {"positive", p.positive},
          {"negative", p.negative},
          {"ties", p.ties},
          {"sign_test_p", number(p.sign_test_p)},
          {"holm_p", number(p.holm_p)}};
}

// The head_grid arm's count-or-size tests (Study::grids): each cell's model and best rate,
// and the three paired tests with their family.
json grids_json(const Study& study) {
  json grids = json::array();
  for (const GridEffects& g : study.grids) {
    json cells = json::array();
    for (const auto& row : g.at)
      for (const Selected* s : row)
        if (s) {
          json cell = model_json(s->cell->model);
          cell["best_lr"] = s->cell->lr;
          cells.push_back(cell);
        }
    grids.push_back({{"task", g.task},
                     {"arm", g.arm},
                     {"steps", g.steps},
                     {"metric", g.by_loss ? "final_test_loss" : "final_test_acc"},
                     {"heads", g.heads},
                     {"head_dims", g.head_dims},
                     {"seeds", g.seeds},
                     {"family", g.confirmatory ? "confirmatory" : "exploratory"},
                     {"cells", cells},
                     {"count", paired_json(g.count)},
                     {"size", paired_json(g.size)},
                     {"interaction", paired_json(g.interaction)},
                     {"verdicts",
                      {{"count", grid_verdict("count", g.count, g.by_loss)},
                       {"size", grid_verdict("size", g.size, g.by_loss)},
                       {"interaction", grid_verdict("interaction", g.interaction, g.by_loss)}}}});
  }
  return grids;
}

json circuit_json(const CircuitSummary& c) {
  return {{"runs_counted", c.runs},
          {"layer0", interval(c.layer0)},
          {"receiver", interval(c.receiver)},
          {"path_q", interval(c.path_q)},
          {"path_k", interval(c.path_k)},
          {"path_v", interval(c.path_v)},
          {"senders_for_90", interval(c.senders)},
          {"receivers_for_90", interval(c.receivers)}};
}

std::string spec_columns(const RunSpec& s) {
  return s.task.name + "," + s.model.arm + "," + std::to_string(s.model.layers) + "," +
         std::to_string(s.model.heads) + "," + std::to_string(s.model.head_dim) + "," +
         std::to_string(s.model.d_model) + "," + std::to_string(s.lr) + "," +
         std::to_string(s.seed);
}

}  // namespace

void write_tables(const StudyConfig& config, const std::vector<RunResult>& results) {
  const fs::path dir(config.out_dir);
  const std::string head = "task,arm,layers,heads,head_dim,d_model,lr,seed";
  auto runs = table();
  runs << head
       << ",params,solved_step,final_val_loss,final_val_acc,final_test_loss,final_test_acc,"
          "phase_step,seconds\n";
  auto curves = table();
  curves << head << ",step,train_loss,train_acc,test_loss,test_acc\n";
  auto heads = table();
  heads << head << ",step,layer,head,previous_token,induction,induction_all,grad_z\n";
  auto pruning = table();
  pruning << head << ",order,removed,accuracy,loss\n";
  for (const RunResult& r : results) {
    const std::string run = spec_columns(r.spec);
    runs << run << "," << r.params << ","
         << (r.solved_step ? std::to_string(*r.solved_step) : std::string()) << ","
         << r.final_val_loss << "," << r.final_val_acc << "," << r.final_test_loss << ","
         << r.final_test_acc << "," << (r.phase_step ? std::to_string(*r.phase_step) : "") << ","
         << r.seconds << "\n";
    for (const EvalPoint& p : r.curve) {
      curves << run << "," << p.step << "," << p.train_loss << "," << p.train_accuracy << ","
             << p.loss << "," << p.accuracy << "\n";
      for (std::size_t l = 0; l < p.induction.size(); ++l)
        for (std::size_t h = 0; h < p.induction[l].size(); ++h) {
          const double z = l < p.grad_z.size() && h < p.grad_z[l].size() ? p.grad_z[l][h] : NAN;
          heads << run << "," << p.step << "," << l << "," << h << "," << p.previous_token[l][h]
                << "," << p.induction[l][h] << "," << p.induction_all[l][h] << "," << z << "\n";
        }
    }
    for (std::size_t k = 0; k < r.by_importance.accuracy.size(); ++k)
      pruning << run << ",importance," << k << "," << r.by_importance.accuracy[k] << ","
              << r.by_importance.loss[k] << "\n";
    for (std::size_t k = 0; k < r.greedy.accuracy.size(); ++k)
      pruning << run << ",greedy," << k << "," << r.greedy.accuracy[k] << "," << r.greedy.loss[k]
              << "\n";
    for (std::size_t k = 0; k < r.random.mean_accuracy.size(); ++k)
      pruning << run << ",random_mean," << k << "," << r.random.mean_accuracy[k] << ","
              << r.random.mean_loss[k] << "\n";
  }
  write_file_atomically(dir / "runs.csv", runs.str());
  write_file_atomically(dir / "curves.csv", curves.str());
  write_file_atomically(dir / "heads.csv", heads.str());
  write_file_atomically(dir / "pruning.csv", pruning.str());
}

namespace {

// The study's settings, as summary.json's "config".
json config_json(const StudyConfig& config) {
  json tasks = json::array();
  for (const TaskSetting& t : config.tasks)
    tasks.push_back({{"name", t.name},
                     {"length", t.length},
                     {"context", t.context},
                     {"dim", t.dim},
                     {"steps", t.steps},
                     {"threshold", t.threshold}});
  return {{"tasks", tasks},
          {"arms", config.arms},
          {"heads", config.heads},
          {"lrs", config.lrs},
          {"seeds", config.seeds},
          {"batch_size", config.batch_size},
          {"warmup_fraction", config.warmup_fraction},
          {"weight_decay", config.weight_decay},
          {"clip", config.clip},
          {"eval_every", config.eval_every},
          {"eval_batches", config.eval_batches},
          {"select_batches", config.select_batches},
          {"inspect_batches", config.inspect_batches},
          {"random_orders", config.random_orders},
          {"extend_lrs", config.extend_lrs},
          {"long_budget", config.long_budget},
          {"selection_split", "validation"},
          {"report_split", "test"}};
}

// Each task's baselines (chance, key-agnostic, ...).
json baselines_json(const Study& study) {
  json baselines = json::object();
  for (const TaskBaselines& b : study.baselines) {
    json list = json::array();
    for (const auto& base : b.baselines)
      list.push_back({{"name", base.name},
                      {"description", base.description},
                      {"loss", number(base.loss)},
                      {"accuracy", number(base.accuracy)},
                      {"exact_loss", number(base.exact_loss)},
                      {"exact_accuracy", number(base.exact_accuracy)},
                      {"examples", b.examples}});
    baselines[b.task] = list;
  }
  return baselines;
}

// One line per training run.
json runs_json(const std::vector<RunResult>& results) {
  json runs = json::array();
  for (const RunResult& r : results) {
    json run = model_json(r.spec.model);
    run["task"] = r.spec.task.name;
    run["steps"] = r.spec.task.steps;
    run["lr"] = r.spec.lr;
    run["seed"] = r.spec.seed;
    run["params"] = r.params;
    run["attention_params"] = r.attention_params;
    run["solved_step"] = r.solved_step ? json(*r.solved_step) : json(nullptr);
    run["phase_change_step"] = r.phase_step ? json(*r.phase_step) : json(nullptr);
    run["final_val_loss"] = number(r.final_val_loss);
    run["final_val_acc"] = number(r.final_val_acc);
    run["final_test_loss"] = number(r.final_test_loss);
    run["final_test_acc"] = number(r.final_test_acc);
    run["seconds"] = r.seconds;
    runs.push_back(run);
  }
  return runs;
}

// A selected model's pruning results.
json pruning_json(const Selected& s) {
  json pruning = {{"fraction_of_attention_params", s.prune_fraction},
                  {"importance", s.prune_importance},
                  {"greedy", s.prune_greedy},
                  {"random_mean", s.prune_random},
                  {"random_low", s.prune_random_low},
                  {"random_high", s.prune_random_high},
                  {"runs_counted", s.prune_runs}};
  if (s.prune_runs > 0) {
    pruning["prunable_fraction"] = interval(s.prunable_fraction);
    pruning["order_gain_importance_minus_random"] = paired_json(s.importance_vs_random);
    pruning["order_gain_greedy_minus_importance"] = paired_json(s.greedy_vs_importance);
  }
  return pruning;
}

// A model at its best rate: its cell, patching, circuit, reference comparison, pruning.
json selected_json(const Selected& s) {
  json m = cell_json(*s.cell);
  m["best_lr"] = s.cell->lr;
  m["best_lr_at_edge"] = s.rate_at_edge;
  m["budget_sensitive"] = s.budget_sensitive;
  if (s.patching_runs > 0)
    m["patching"] = {
        {"runs_counted", s.patching_runs},        {"restoring_heads_mean", s.restoring_mean},
        {"restoring_heads_min", s.restoring_min}, {"restoring_heads_max", s.restoring_max},
        {"restored_mean", s.restored_mean},       {"effect_by_rank", s.patching_ranked}};
  if (s.circuit.runs > 0) m["circuit"] = circuit_json(s.circuit);
  if (s.cell->task.name == "char_lm") {
    const LanguageScores scores = language_scores(*s.cell);
    m["language"] = {{"bits_per_character", interval(scores.bits)},
                     {"icl", interval(scores.icl)},
                     {"probe_induction", interval(scores.probe)},
                     {"runs", scores.runs}};
  }
  if (s.patching_runs > 0 && s.reference)
    m["patching"]["restoring_share_minus_reference"] = paired_json(s.share_vs_reference);
  if (s.reference) {
    m["reference"] = model_json(s.reference->model);
    m["test_loss_minus_reference"] = paired_json(s.loss_vs_reference);
    m["test_acc_minus_reference"] = paired_json(s.acc_vs_reference);
  }
  m["pruning"] = pruning_json(s);
  return m;
}

// Each fixed_width and head_grid model at its two budgets (the grid's diagonal once).
json budgets_json(const Study& study) {
  json budgets = json::array();
  for (const auto& [task, pairs] : study.budgets)
    for (const BudgetPair& p : pairs) {
      json b = model_json(p.base->model);
      b["task"] = task;
      b["lr"] = p.base->lr;
      b["short"] = cell_json(*p.base);
      b["long"] = cell_json(*p.longer);
      b["success_change"] = p.change;
      b["budget_sensitive"] = p.sensitive;
      budgets.push_back(b);
    }
  return budgets;
}

}  // namespace

void write_summary_json(const StudyConfig& config, const Study& study,
                        const std::vector<RunResult>& results, const Invocation& invocation) {
  json j;
  j["command"] = invocation.command;
  j["seconds"] = invocation.seconds;
  j["runs_trained"] = invocation.trained;
  j["runs_cached"] = invocation.cached;
  j["runs_missing"] = invocation.missing;
  j["run_seconds_summed"] = invocation.run_seconds;
  j["preset"] = config.preset;
  j["design"] = config.description;
  j["device"] = config.device.str();
  j["config"] = config_json(config);
  j["baselines"] = baselines_json(study);
  j["scored_by_loss"] = study.is_regression;  // task -> its primary metric is the loss
  j["runs"] = runs_json(results);
  json cells = json::array();
  for (const Cell& c : study.cells) cells.push_back(cell_json(c));
  j["cells"] = cells;
  json selected = json::array();
  for (const auto& [task, arms] : study.selected)
    for (const auto& [arm, models] : arms)
      for (const Selected& s : models) selected.push_back(selected_json(s));
  j["selected"] = selected;
  j["budgets"] = budgets_json(study);
  j["count_or_size"] = grids_json(study);
  write_file_atomically(fs::path(config.out_dir) / "summary.json", j.dump(2) + "\n");
}

}  // namespace heads_compare
