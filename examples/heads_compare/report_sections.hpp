// Sections of report.md that close the study's doubts (report_sections.cpp): both step
// budgets of the fixed_width models, and the mechanism scores after training on the larger
// sample (RunResult::final_point) beside those of the last evaluation.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "aggregate.hpp"

namespace heads_compare {

// Report text: "est [low, high]" with `format` for each ("(no interval)" when a bound is
// not finite: a single seed; "-" for a NaN estimate); an accuracy interval in percent, its
// bounds clipped to [0, 100] (a t interval over few seeds can pass them); a Kaplan-Meier
// median, "not reached (censored at N)" when survival stays above 0.5.
std::string interval(const Interval& i, const char* format);
std::string percent(const Interval& i, const char* format = "%.1f%%");
// A loss's interval: its t interval can dip below 0, which no loss does, so the lower
// bound is clipped at 0.
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

// The main table's marks: " (edge)" after a best lr at the edge of the rates tried, " †"
// after a budget-sensitive success rate; and the footnote that explains those used.
std::string rate_mark(const Selected& s);
std::string budget_mark(const Selected& s);
void write_marks_footnote(std::ostringstream& md, const std::vector<Selected>& models);

}  // namespace heads_compare
