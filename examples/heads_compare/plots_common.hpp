// heads_compare's drawing helpers shared by plots*.cpp and report.cpp: the gnuplot canvas,
// model labels, number formatting, the baselines' dashed lines and each plot kind's drawer.
//
// Every PNG is plots/<kind>_<task>_<arm>.png, drawn from plots/<name>.gp and data files
// under plots/data, so a plot can be restyled and redrawn with `gnuplot plots/<name>.gp`
// from the run folder.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "aggregate.hpp"
#include "study.hpp"

namespace heads_compare::render {

// The plot kinds in the order report.md embeds them, and the one-line caption of each.
const std::vector<std::string>& plot_kinds();
std::string caption(const std::string& kind, bool regression);

// "<kind>_<task>_<arm>", the PNG's name without the folder and extension.
std::string plot_name(const std::string& kind, const std::string& task, const std::string& arm);

// A short label for a model within its arm: "H=4 d=16" (fixed_width), "H=4 E=64"
// (fixed_head_dim), "d=16" (head_size), "L1 H=4" (one_layer).
std::string model_label(const ModelShape& m);

// printf of one number; "-" for NaN, "inf" and "-inf" spelled out.
std::string fmt(const char* format, double v);

// The run of a cell with the lowest seed (seed 0 when the study has it).
const RunResult* first_seed(const Cell& cell);

// The task's report-split baselines (empty when there are none).
const std::vector<headgrad::train::Baseline>& baselines_of(const Study& study,
                                                           const std::string& task);

// gnuplot's quoting of a path or a title: single quotes, with ' doubled.
std::string quoted(const std::string& text);
// A title for gnuplot, double-quoted so that '\n' in `text` breaks the line.
std::string title(const std::string& text);

// Writes plots/<name>.gp and the data files, runs gnuplot and records plots/<name>.png.
class Canvas {
 public:
  explicit Canvas(const std::filesystem::path& out_dir);
  // Writes plots/data/<file> and returns its quoted path for a plot command.
  std::string data(const std::string& file, const std::string& text) const;
  // Runs `body` (plot commands) after the terminal, output and common settings.
  void draw(const std::string& name, int width, int height, const std::string& body);
  const std::vector<std::string>& drawn() const { return drawn_; }

 private:
  std::filesystem::path dir_, data_;
  std::vector<std::string> drawn_;
};

// Plot clauses (each starting with ", ") for the task's baselines as dashed horizontal
// lines at their accuracy (accuracy = true) or loss; non-finite values are left out.
std::string baseline_clauses(const Study& study, const std::string& task, bool accuracy,
                             bool log_scale = false);

// A line colour per index (cycles through 8 colours that stay apart on white).
std::string colour(std::size_t i);
// True when some model's final report accuracy is a number (not a regression task's NaN).
bool has_accuracy(const std::vector<Selected>& models);
// A dash type per layer: solid, dashed, dotted, dash-dot.
int dash(std::size_t layer);

// The drawers: each writes the plots of one task and arm (skipping what does not apply).
using Models = std::vector<Selected>;
void draw_learning(Canvas& canvas, const Study& study, const std::string& task,
                   const std::string& arm, const Models& models);
void draw_survival(Canvas& canvas, const Study& study, const std::string& task,
                   const std::string& arm, const Models& models);
void draw_grid(Canvas& canvas, const Study& study, const std::string& task, const std::string& arm,
               const Models& models);
void draw_pruning(Canvas& canvas, const Study& study, const std::string& task,
                  const std::string& arm, const Models& models);
void draw_mechanism(Canvas& canvas, const Study& study, const std::string& task,
                    const std::string& arm, const Models& models);
void draw_patterns(Canvas& canvas, const Study& study, const std::string& task,
                   const std::string& arm, const Models& models);
void draw_grads(Canvas& canvas, const Study& study, const std::string& task, const std::string& arm,
                const Models& models);
void draw_patching(Canvas& canvas, const Study& study, const std::string& task,
                   const std::string& arm, const Models& models);
// The head_grid arm's H x d grid at each budget (once per task, drawn under head_grid).
void draw_count_or_size(Canvas& canvas, const Study& study, const std::string& task);
void draw_circuits(Canvas& canvas, const Study& study, const std::string& task,
                   const std::string& arm, const Models& models);

}  // namespace heads_compare::render
