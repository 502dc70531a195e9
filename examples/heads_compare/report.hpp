// heads_compare's outputs: the run folder's tables (runs.csv, curves.csv, grid.csv,
// pruning.csv), summary.json (summary.cpp), report.md (report.cpp) and the PNG plots drawn
// with gnuplot (plots.cpp: plots/*.png from plots/*.gp and plots/data/*.dat).
#pragma once

#include <string>
#include <vector>

#include "aggregate.hpp"
#include "study.hpp"

namespace heads_compare {

// What one invocation did, for the report's header.
struct Invocation {
  std::string command;
  double seconds = 0;
  std::size_t trained = 0, cached = 0;  // unique runs trained now / read from the cache
  std::size_t missing = 0;              // unique runs left out (--cached-only, not in the cache)
  double run_seconds = 0;  // the unique runs' own time (training and inspection), summed
};

void write_tables(const StudyConfig& config, const std::vector<RunResult>& results);
void write_summary_json(const StudyConfig& config, const Study& study,
                        const std::vector<RunResult>& results, const Invocation& invocation);
// Draws the plots; returns the PNG paths relative to out_dir (empty, with a warning on
// stderr, when gnuplot is missing or fails).
std::vector<std::string> draw_plots(const StudyConfig& config, const Study& study);
// Writes view.html, the interactive attention view (study_view.cpp); false (with a note on
// stderr, and no view.html) when no run of config.view_seeds on a token task is there.
bool write_view_html(const StudyConfig& config, const Study& study);
// `view`: whether view.html was written (report.md links it).
void write_report_md(const StudyConfig& config, const Study& study,
                     const std::vector<std::string>& plots, const Invocation& invocation,
                     bool view);

}  // namespace heads_compare
