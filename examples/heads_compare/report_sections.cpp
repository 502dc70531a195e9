// report.md's sections on the study's doubts (see report_sections.hpp).
#include "report_sections.hpp"

#include <algorithm>
#include <cmath>

#include "plots_common.hpp"

namespace heads_compare {

using render::fmt;
using render::model_label;

std::string interval(const Interval& i, const char* format) {
  if (std::isnan(i.estimate)) return "-";
  std::string s = fmt(format, i.estimate);
  if (std::isfinite(i.low) && std::isfinite(i.high))
    s += " [" + fmt(format, i.low) + ", " + fmt(format, i.high) + "]";
  else
    s += " (no interval)";
  return s;
}

std::string percent(const Interval& i, const char* format) {
  return interval({100 * i.estimate, 100 * i.low, 100 * i.high}, format);
}

std::string loss_text(const Interval& i, const char* format) { return interval(i, format); }

std::string km_median_text(const Interval& i, std::int64_t budget) {
  if (!std::isfinite(i.estimate)) return "not reached (censored at " + std::to_string(budget) + ")";
  // %g: a median at the midpoint of a flat segment (R's rule) may end in .5.
  auto bound = [](double v) { return std::isfinite(v) ? fmt("%g", v) : "not reached"; };
  return fmt("%g", i.estimate) + " [" + bound(i.low) + ", " + bound(i.high) + "]";
}

namespace {

std::string solved_text(const Cell& c) {
  return std::to_string(c.solved) + "/" + std::to_string(c.runs.size()) + " " +
         interval({100 * c.success.estimate, 100 * c.success.low, 100 * c.success.high}, "%.0f%%");
}

// The largest finite value of a [layer][head] score matrix (NaN when it has none).
double strongest(const std::vector<std::vector<double>>& m) {
  double best = std::nan("");
  for (const auto& row : m)
    for (double v : row)
      if (std::isfinite(v) && !(v <= best)) best = v;
  return best;
}

// Mean [t 95%] of the strongest head's `field` over the runs that have it, and how many
// of them reach `cutoff`; `last` = the last evaluation, otherwise final_point.
struct Strongest {
  std::vector<double> values;
  std::int64_t above = 0;
};
Strongest strongest_over(const Cell& cell, std::vector<std::vector<double>> EvalPoint::*field,
                         bool last, double cutoff) {
  Strongest out;
  for (const RunResult* r : cell.runs) {
    if (r->final_point.step == 0 || r->curve.empty()) continue;
    const double v = strongest((last ? r->curve.back() : r->final_point).*field);
    if (!std::isfinite(v)) continue;
    out.values.push_back(v);
    out.above += v >= cutoff;
  }
  return out;
}

// Mean [bootstrap 95%] of scores in [0, 1]: the interval stays inside by construction.
std::string mean_text(const std::vector<double>& x) {
  return x.empty() ? std::string("-") : interval(statistics::bootstrap_mean_interval(x), "%.3f");
}

}  // namespace

void write_budgets(std::ostringstream& md, const StudyConfig& config, const Study& study,
                   const std::string& task) {
  const auto it = study.budgets.find(task);
  if (it == study.budgets.end() || it->second.empty()) return;
  const auto& pairs = it->second;
  md << "### " << task << ", both budgets\n\n"
     << "Every fixed_width model (and on the synthetic tasks every head_grid model) also "
        "trained for "
     << config.long_budget << "x its task's steps (" << pairs.front().base->task.steps << " and "
     << pairs.front().longer->task.steps
     << "), at its best rate at the shorter budget, with the same seeds (arms `"
     << long_budget_arm(config) << "` and `" << long_budget_arm(config, "head_grid")
     << "`; the grid's diagonal is the fixed_width runs, listed once). Budget-sensitive (†): "
        "the success rate changes by more than "
     << fmt("%.0f", 100 * kBudgetSensitive)
     << " points between the budgets; such a cell's \"fails\" may mean \"slower\".\n\n"
     << "| model | lr | solved at " << pairs.front().base->task.steps
     << " [Wilson 95%] | solved at " << pairs.front().longer->task.steps
     << " [Wilson 95%] | change (points) | median steps to solve, short | median steps to "
        "solve, long | final loss, short | final loss, long | final accuracy, short | final "
        "accuracy, long |\n"
     << "|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const BudgetPair& p : pairs) {
    const Cell &b = *p.base, &l = *p.longer;
    md << "| " << model_label(b.model) << " | " << fmt("%g", b.lr) << " | " << solved_text(b)
       << " | " << solved_text(l) << " | " << fmt("%+.0f", 100 * p.change)
       << (p.sensitive ? " †" : "") << " | " << km_median_text(b.median_solve, b.task.steps)
       << " | " << km_median_text(l.median_solve, l.task.steps) << " | " << loss_text(b.final_loss)
       << " | " << loss_text(l.final_loss) << " | " << percent(b.final_acc) << " | "
       << percent(l.final_acc) << " |\n";
  }
  md << "\n";
}

void write_final_scores(std::ostringstream& md, const StudyConfig& config,
                        const std::vector<Selected>& models, bool language) {
  std::ostringstream rows;
  for (const Selected& s : models) {
    const Cell& c = *s.cell;
    const Strongest il = strongest_over(c, &EvalPoint::induction, true, 0.4);
    const Strongest ifin = strongest_over(c, &EvalPoint::induction, false, 0.4);
    const Strongest pl = strongest_over(c, &EvalPoint::previous_token, true, 0.4);
    const Strongest pfin = strongest_over(c, &EvalPoint::previous_token, false, 0.4);
    if (ifin.values.empty()) continue;
    rows << "| " << model_label(c.model) << " | " << mean_text(il.values) << " | "
         << mean_text(ifin.values) << " | " << il.above << "/" << il.values.size() << " | "
         << ifin.above << "/" << ifin.values.size() << " | " << mean_text(pl.values) << " | "
         << mean_text(pfin.values) << " |\n";
  }
  if (rows.str().empty()) return;
  // Examples (or probe rows) behind each column: the last evaluation's and final_point's.
  const std::int64_t prev_small = config.eval_batches * config.batch_size,
                     prev_large = kFinalBatches * config.batch_size;
  const std::int64_t ind_small = language ? kProbeRows : prev_small,
                     ind_large = language ? kFinalProbeRows : prev_large;
  const std::string where = language ? " probe rows" : " examples";
  md << "Mechanism scores after training on two samples (best lr; the strongest head per run, "
        "mean [bootstrap 95%] over runs): at the last evaluation and after training on a larger "
        "sample; "
     << (language ? "induction on Olsson's probe (random characters repeated once), "
                    "previous-token on report-split windows"
                  : "both on report-split examples")
     << ". Induction head: a head scoring >= 0.4.\n\n"
     << "| model | induction, " << ind_small << where << " | induction, " << ind_large << where
     << " | runs with an induction head (" << ind_small << ") | runs with an induction head ("
     << ind_large << ") | previous-token, " << prev_small << " | previous-token, " << prev_large
     << " |\n|---|---|---|---|---|---|---|\n"
     << rows.str() << "\n";
}

std::string rate_mark(const Selected& s) { return s.rate_at_edge ? " (edge)" : ""; }

std::string budget_mark(const Selected& s) { return s.budget_sensitive ? " †" : ""; }

void write_marks_footnote(std::ostringstream& md, const std::vector<Selected>& models) {
  const bool edge =
      std::any_of(models.begin(), models.end(), [](const Selected& s) { return s.rate_at_edge; });
  const bool budget = std::any_of(models.begin(), models.end(),
                                  [](const Selected& s) { return s.budget_sensitive; });
  if (edge)
    md << "\n(edge): the best rate is the lowest or highest this model tried (after the "
          "extension one rate past the preset's grid, where that ran): the optimum may lie "
          "beyond, so the model may be better than reported.";
  if (budget)
    md << "\n†: budget-sensitive: the success rate changes by more than "
       << fmt("%.0f", 100 * kBudgetSensitive) << " points at the long budget (see \"both "
       << "budgets\").";
  if (edge || budget) md << "\n";
}

}  // namespace heads_compare
