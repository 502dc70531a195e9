// Sections of report.md that close the study's doubts (report_sections.cpp,
// report_effects.cpp): both step budgets of the fixed_width models, the mechanism scores
// after training on the larger sample (RunResult::final_point) beside those of the last
// evaluation, the head_grid arm's count-or-size effects and the circuits into layer 0.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "aggregate.hpp"

namespace heads_compare {

// Report text: "est [low, high]" with `format` for each ("(no interval)" when a bound is
// not finite: a single seed; "-" for a NaN estimate); an accuracy interval in percent (its
// bootstrap bounds lie inside [0, 100] by construction, nothing is clipped); a loss; a
// Kaplan-Meier median, "not reached (censored at N)" when survival stays above 0.5.
std::string interval(const Interval& i, const char* format);
std::string percent(const Interval& i, const char* format = "%.1f%%");
std::string loss_text(const Interval& i, const char* format = "%.4g");
std::string km_median_text(const Interval& i, std::int64_t budget);

// The task's fixed_width models at both budgets (Study::budgets); nothing without them.
void write_budgets(std::ostringstream& md, const StudyConfig& config, const Study& study,
                   const std::string& task);

// Per model at its best lr: the strongest head's induction and previous-token scores at the
// last evaluation (eval_batches x batch_size examples) and after training (kFinalBatches x
// batch_size), and the runs with an induction head by each; nothing for runs cached before
// final_point was recorded.
void write_final_scores(std::ostringstream& md, const StudyConfig& config,
                        const std::vector<Selected>& models, bool language);

// The head_grid arm's H x d table and its count-or-size tests at each budget (Study::grids,
// report_effects.cpp); nothing for a task without head_grid models.
void write_grid_effects(std::ostringstream& md, const Study& study, const std::string& task);
// The confirmatory count-or-size tests of every task in one table with their verdicts.
void write_verdicts(std::ostringstream& md, const Study& study);
// Every model's layer-0 circuit (Selected::circuit); nothing when no run recorded one.
void write_circuits(std::ostringstream& md, const Study& study, const std::string& task);

// The main table's marks: " (edge)" after a best lr at the edge of the rates tried, " †"
// after a budget-sensitive success rate; and the footnote that explains those used.
std::string rate_mark(const Selected& s);
std::string budget_mark(const Selected& s);
void write_marks_footnote(std::ostringstream& md, const std::vector<Selected>& models);

}  // namespace heads_compare
