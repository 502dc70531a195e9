// heads_compare's outputs: the run folder's tables (metrics.csv, head_grads.csv,
// importance.csv, pruning.csv), summary.json and report.md, and the PNG plots drawn
// with gnuplot (plots/*.png from plots/*.gp and plots/data/*.dat).
#pragma once

#include <string>
#include <vector>

#include "study.hpp"

namespace heads_compare {

// Mean, sample standard deviation, min and max of a set of values (NaN mean when empty).
struct Spread {
  double mean = 0, stddev = 0, min = 0, max = 0;
  std::size_t count = 0;
};
Spread spread_of(const std::vector<double>& values);

// The runs of one model configuration, over seeds.
struct Group {
  std::string task;
  std::int64_t layers = 0, heads = 0;
  bool control = false;
  std::vector<const RunResult*> runs;
  // "H=4", or "L2 x H4" when the study also has depth-control models (always for those).
  std::string label(bool with_layers = false) const;
};
std::vector<Group> group_runs(const StudyConfig& config, const std::vector<RunResult>& results);

void write_tables(const StudyConfig& config, const std::vector<RunResult>& results);
void write_summary_json(const StudyConfig& config, const std::vector<Group>& groups,
                        const std::string& command_line, double seconds);
// Draws the plots; returns the PNG paths relative to out_dir (empty, with a warning on
// stderr, when gnuplot is missing or fails).
std::vector<std::string> draw_plots(const StudyConfig& config, const std::vector<Group>& groups);
void write_report_md(const StudyConfig& config, const std::vector<Group>& groups,
                     const std::vector<std::string>& plots, const std::string& command_line,
                     double seconds);

}  // namespace heads_compare
