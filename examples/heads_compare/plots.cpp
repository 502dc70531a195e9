// heads_compare's plots (see report.hpp and plots_common.hpp): the shared canvas and
// helpers, draw_plots, and the learning-curve and survival plots. The grid and pruning plots
// are in plots_grid.cpp, the head-by-head plots (mechanism, patterns, gradients) in
// plots_heads.cpp.
//
//   learning_<task>_<arm>   report-split accuracy and loss over training at each model's
//                           best lr: mean over seeds, band from the lowest to the highest seed
//   survival_<task>_<arm>   Kaplan-Meier fraction of runs not yet solved against the step,
//                           with the pointwise 95% Greenwood (log-log) band
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <limits>
#include <sstream>

#include "atomic_write.hpp"
#include "headgrad/core/process.hpp"
#include "plots_common.hpp"
#include "report.hpp"

namespace heads_compare {

namespace render {

namespace fs = std::filesystem;

const std::vector<std::string>& plot_kinds() {
  static const std::vector<std::string> kinds = {
      "learning", "survival", "grid_success", "grid_loss",     "pruning", "mechanism",
      "grads",    "patterns", "patching",     "count_or_size", "circuit"};
  return kinds;
}

std::string caption(const std::string& kind, bool regression) {
  if (kind == "learning")
    return regression ? "Report-split loss over training at each model's best lr (lower is "
                        "better): mean over seeds, band from the lowest to the highest seed; "
                        "dashed: baselines."
                      : "Report-split accuracy (left) and loss (right) over training at each "
                        "model's best lr: mean over seeds, band from the lowest to the highest "
                        "seed; dashed: baselines.";
  if (kind == "survival")
    return "Kaplan-Meier fraction of runs not yet solved against the step (best lr; band: 95% "
           "Greenwood log-log); a curve that stays above 0.5 has no median.";
  if (kind == "count_or_size")
    return regression ? "The head_grid arm as an H x d grid, each model at its own best rate: "
                        "the mean final report-split loss, one panel per budget."
                      : "The head_grid arm as an H x d grid, each model at its own best rate: "
                        "runs solved / seeds and the mean final report-split accuracy, one "
                        "panel per budget.";
  if (kind == "circuit")
    return "The circuit into layer 0 under the context corruption (best lr; mean [bootstrap "
           "95%] over the runs counted, their number in brackets): the strongest layer-0 "
           "head, the strongest single path from a layer-0 head into the receiver through "
           "its q, k and v, and the receiver itself.";
  if (kind == "grid_success")
    return "Success rate (runs solved / seeds) over the whole H x lr grid; boxed: each model's "
           "selected lr (selection split).";
  if (kind == "grid_loss")
    return "Mean final report-split loss over the whole H x lr grid; boxed: each model's "
           "selected lr.";
  if (kind == "pruning")
    return "Report-split accuracy (loss for regression tasks) as heads are removed (best lr, "
           "mean over seeds): by "
           "importance, greedily, and in random orders (band: the central 95% of the "
           "random orders, averaged over runs); top against heads removed, bottom against the "
           "fraction of attention "
           "parameters removed.";
  if (kind == "mechanism")
    return "Induction score at the scored positions (top) and previous-token score (bottom) "
           "of every head over training, "
           "seed 0 at best lr (colour = head, dash = layer; dotted: the 0.4 cut-off of an "
           "induction head); right: seed mean of the highest score over heads, per model.";
  if (kind == "grads")
    return "Gradient norm ||dL/dz_h|| of every head's output over training, seed 0 at best lr "
           "(colour = head, dash = layer; log scale).";
  if (kind == "patching")
    return "Activation patching at each model's best lr, over seeds: the fewest heads whose "
           "clean z restores >= 90% of the logit difference (left), and each layer's single-"
           "head effects ranked strongest first (right; see the table above).";
  if (kind == "patterns")
    return "Attention pattern of every head on report example 0, seed 0 at best lr (rows: "
           "query position, columns: key position, tics: token ids).";
  return kind;
}

std::string plot_name(const std::string& kind, const std::string& task, const std::string& arm) {
  return kind + "_" + task + "_" + arm;
}

std::string model_label(const ModelShape& m) {
  std::ostringstream s;
  // The long-budget arms (fixed_width_3x, head_grid_3x) label their models as their base.
  if (m.arm.rfind("fixed_width", 0) == 0 || m.arm.rfind("head_grid", 0) == 0)
    s << "H=" << m.heads << " d=" << m.head_dim;
  else if (m.arm == "fixed_head_dim")
    s << "H=" << m.heads << " E=" << m.d_model;
  else if (m.arm == "head_size")
    s << "d=" << m.head_dim;
  else if (m.arm == "one_layer")
    s << "L" << m.layers << " H=" << m.heads;
  else
    s << "L" << m.layers << " H=" << m.heads << " d=" << m.head_dim << " E=" << m.d_model;
  return s.str();
}

std::string fmt(const char* format, double v) {
  if (std::isnan(v)) return "-";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

const RunResult* first_seed(const Cell& cell) {
  const RunResult* best = nullptr;
  for (const RunResult* r : cell.runs)
    if (!best || r->spec.seed < best->spec.seed) best = r;
  return best;
}

const std::vector<headgrad::train::Baseline>& baselines_of(const Study& study,
                                                           const std::string& task) {
  static const std::vector<headgrad::train::Baseline> none;
  for (const TaskBaselines& b : study.baselines)
    if (b.task == task) return b.baselines;
  return none;
}

std::string quoted(const std::string& text) {
  std::string s = "'";
  for (char c : text) s += c == '\'' ? std::string("''") : std::string(1, c);
  return s + "'";
}

std::string title(const std::string& text) {
  std::string s = "\"";
  for (char c : text) {
    if (c == '\n')
      s += "\\n";
    else if (c == '"' || c == '\\')
      s += std::string("\\") + c;
    else
      s += c;
  }
  return s + "\"";
}

bool has_accuracy(const std::vector<Selected>& models) {
  for (const Selected& s : models)
    for (const Cell* c : s.grid)
      if (std::isfinite(c->final_acc.estimate)) return true;
  return false;
}

Canvas::Canvas(const fs::path& out_dir) : dir_(out_dir / "plots"), data_(dir_ / "data") {
  fs::create_directories(data_);
}

namespace {

// True when `path` holds a whole PNG: it ends with the IEND chunk (a write cut short by a
// full disk does not).
bool complete_png(const fs::path& path) {
  static const unsigned char iend[8] = {'I', 'E', 'N', 'D', 0xAE, 0x42, 0x60, 0x82};
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return false;
  unsigned char tail[8] = {};
  const bool read = std::fseek(f, -8, SEEK_END) == 0 && std::fread(tail, 1, 8, f) == 8;
  std::fclose(f);
  return read && std::equal(tail, tail + 8, iend);
}

// Runs `script` with gnuplot, its output going to `png` (the script's own default is
// overridden through the variable `png_output`) and gnuplot's output to stderr; true when
// gnuplot succeeded. No shell: the paths reach gnuplot as they are.
bool run_gnuplot(const fs::path& script, const fs::path& png) {
  try {
    return headgrad::run_program(
               {"gnuplot", "-e", "png_output = " + quoted(png.string()), script.string()},
               headgrad::ProgramOptions().with_stdout_to(headgrad::Redirect::to_stderr())) == 0;
  } catch (const headgrad::Error& e) {
    std::cerr << "heads_compare: " << e.what() << "\n";
    return false;
  }
}

}  // namespace

std::string Canvas::data(const std::string& file, const std::string& text) const {
  write_file_atomically(data_ / file, text, false);
  return quoted((data_ / file).string());
}

void Canvas::draw(const std::string& name, int width, int height, const std::string& body) {
  const fs::path png = dir_ / (name + ".png"), script = dir_ / (name + ".gp");
  std::ostringstream gp;
  // `png_output` may be set before the script runs (draw sets a temporary file); `gnuplot
  // plots/<name>.gp` alone writes the PNG beside the script.
  gp << "set terminal pngcairo noenhanced size " << width << "," << height << " font ',11'\n"
     << "if (!exists('png_output')) png_output = " << quoted(png.string()) << "\n"
     << "set output png_output\n"
     << "set datafile missing 'NaN'\nset grid lc rgb '#dddddd'\nset border lc rgb '#444444'\n"
     << body << "unset multiplot\nunset output\n";
  write_file_atomically(script, gp.str(), false);
  // Drawn into a temporary file and renamed over the PNG only when whole: a failed
  // drawing leaves the previous PNG, which the report then does not show.
  const fs::path tmp = temp_path_for(png);
  if (!run_gnuplot(script, tmp) || !complete_png(tmp)) {
    std::error_code ec;
    fs::remove(tmp, ec);
    std::cerr << "heads_compare: gnuplot failed on " << script.string() << "\n";
    return;
  }
  fs::rename(tmp, png);
  drawn_.push_back("plots/" + name + ".png");
}

std::string baseline_clauses(const Study& study, const std::string& task, bool accuracy,
                             bool log_scale) {
  std::ostringstream p;
  p.precision(8);
  std::size_t i = 0;
  for (const headgrad::train::Baseline& b : baselines_of(study, task)) {
    // The exact expectation where known: the sampled mean's noise is no property of the task.
    const double exact = accuracy ? b.exact_accuracy : b.exact_loss;
    const double v = std::isfinite(exact) ? exact : accuracy ? b.accuracy : b.loss;
    ++i;
    if (!std::isfinite(v) || (log_scale && v <= 0)) continue;
    p << ", " << v << " w l dt 2 lw 1.5 lc rgb '" << (i == 1 ? "#555555" : "#aa3333") << "' title "
      << quoted(b.name + (std::isfinite(exact) ? " (exact) " : " (sampled) ") + fmt("%.3g", v));
  }
  return p.str();
}

std::string colour(std::size_t i) {
  static const char* colours[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                  "#9467bd", "#8c564b", "#e377c2", "#17becf"};
  return colours[i % 8];
}

int dash(std::size_t layer) { return static_cast<int>(layer % 4) + 1; }

namespace {

// Seed mean and lowest/highest seed of a per-evaluation value, over the points every run
// has: "step mean low high" rows.
template <typename Get>
std::string band_rows(const std::vector<const RunResult*>& runs, Get get, bool positive) {
  std::size_t points = std::numeric_limits<std::size_t>::max();
  for (const RunResult* r : runs) points = std::min(points, r->curve.size());
  if (runs.empty()) points = 0;
  std::ostringstream out;
  out.precision(8);
  auto clamp = [positive](double v) { return positive ? std::max(v, 1e-12) : v; };
  for (std::size_t i = 0; i < points; ++i) {
    double sum = 0, lo = INFINITY, hi = -INFINITY;
    std::size_t n = 0;
    for (const RunResult* r : runs) {
      const double v = get(r->curve[i]);
      if (std::isnan(v)) continue;
      sum += v;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
      ++n;
    }
    out << runs.front()->curve[i].step << " ";
    if (n == 0)
      out << "NaN NaN NaN\n";
    else
      out << clamp(sum / static_cast<double>(n)) << " " << clamp(lo) << " " << clamp(hi) << "\n";
  }
  return out.str();
}

std::string band_clause(const std::string& file, std::size_t i, const std::string& title) {
  return file + " u 1:3:4 w filledcurves fs transparent solid 0.18 noborder lc rgb '" + colour(i) +
         "' notitle, " + file + " u 1:2 w l lw 2 lc rgb '" + colour(i) + "' title " + quoted(title);
}

}  // namespace

void draw_learning(Canvas& canvas, const Study& study, const std::string& task,
                   const std::string& arm, const Models& models) {
  const bool regression = study.is_regression.count(task) && study.is_regression.at(task);
  const std::string name = plot_name("learning", task, arm);
  std::string acc_plot, loss_plot;
  for (std::size_t m = 0; m < models.size(); ++m) {
    const Cell& cell = *models[m].cell;
    const std::string title = model_label(cell.model) + " lr " + fmt("%g", cell.lr);
    const std::string stem = name + "_" + std::to_string(m);
    const std::string acc = canvas.data(
        stem + "_acc.dat", band_rows(
                               cell.runs, [](const EvalPoint& p) { return p.accuracy; }, false));
    const std::string loss = canvas.data(
        stem + "_loss.dat", band_rows(
                                cell.runs, [](const EvalPoint& p) { return p.loss; }, true));
    acc_plot += (acc_plot.empty() ? "" : ", ") + band_clause(acc, m, title);
    loss_plot += (loss_plot.empty() ? "" : ", ") + band_clause(loss, m, title);
  }
  if (models.empty()) return;
  const std::size_t n = models.front().cell->runs.size();
  std::ostringstream gp;
  gp << "set xlabel 'step'\nset key outside right top font ',9'\n"
     << "set offsets 0, 0, graph 0.05, graph 0.05\n";
  if (regression) {
    gp << "set title "
       << title(task + ", " + arm + ": report-split loss (lower is better)\nn = " +
                std::to_string(n) + " seeds (band: lowest to highest seed)")
       << "\nset ylabel 'loss'\nset logscale y\nplot " << loss_plot
       << baseline_clauses(study, task, false, true) << "\n";
    canvas.draw(name, 900, 480, gp.str());
    return;
  }
  gp << "set multiplot layout 1,2 title "
     << title(task + ", " + arm + ": report split at each model's best lr\nn = " +
              std::to_string(n) + " seeds (band: lowest to highest seed)")
     << "\nset ylabel 'accuracy'\nset yrange [0:1.02]\nset key inside right bottom opaque font "
        "',9'\n"
     << "plot " << acc_plot << baseline_clauses(study, task, true) << "\n"
     << "set ylabel 'loss'\nset autoscale y\nset logscale y\nset key inside right top\nplot "
     << loss_plot << baseline_clauses(study, task, false, true) << "\n";
  canvas.draw(name, 1300, 500, gp.str());
}

void draw_survival(Canvas& canvas, const Study& study, const std::string& task,
                   const std::string& arm, const Models& models) {
  (void)study;
  if (models.empty() || !has_accuracy(models)) return;
  const std::string name = plot_name("survival", task, arm);
  const Cell& front = *models.front().cell;
  const double budget = static_cast<double>(front.task.steps);
  std::string plot;
  for (std::size_t m = 0; m < models.size(); ++m) {
    const Cell& cell = *models[m].cell;
    const auto& km = cell.time_to_solve;
    // The step function drawn point by point: (t_k, S_k) to (t_k+1, S_k), then down.
    std::ostringstream rows;
    rows.precision(8);
    for (std::size_t k = 0; k < km.time.size(); ++k) {
      const double next = k + 1 < km.time.size() ? km.time[k + 1] : budget;
      rows << km.time[k] << " " << km.survival[k] << " " << km.low[k] << " " << km.high[k] << "\n"
           << std::max(next, km.time[k]) << " " << km.survival[k] << " " << km.low[k] << " "
           << km.high[k] << "\n";
    }
    const std::string file = canvas.data(name + "_" + std::to_string(m) + ".dat", rows.str());
    plot += (plot.empty() ? "" : ", ") +
            band_clause(file, m,
                        model_label(cell.model) + ": " + std::to_string(cell.solved) + "/" +
                            std::to_string(cell.runs.size()) + " solved");
  }
  std::ostringstream gp;
  gp << "set title "
     << title(task + ", " + arm +
              ": runs not yet at report accuracy >= " + fmt("%g", front.task.threshold) +
              "\nbest lr, n = " + std::to_string(front.runs.size()) + " seeds; censored at " +
              fmt("%g", budget) + " steps")
     << "\nset xlabel 'step'\nset ylabel 'fraction not yet solved'\nset yrange [0:1.05]\n"
     << "set xrange [0:" << budget << "]\nset key outside right top font ',9'\n"
     << "plot " << plot << ", 0.5 w l dt 3 lc rgb '#777777' title 'median level'\n";
  canvas.draw(name, 1000, 480, gp.str());
}

}  // namespace render

std::vector<std::string> draw_plots(const StudyConfig& config, const Study& study) {
  if (headgrad::find_program("gnuplot").empty()) {
    std::cerr << "heads_compare: gnuplot not found; no plots drawn (scripts/setup.sh installs "
                 "gnuplot-nox)\n";
    return {};
  }
  render::Canvas canvas(config.out_dir);
  for (const TaskSetting& task : config.tasks) {
    const auto found = study.selected.find(task.name);
    if (found == study.selected.end()) continue;
    for (const std::string& arm : reported_arms(config)) {
      const auto models = found->second.find(arm);
      if (models == found->second.end() || models->second.empty()) continue;
      const render::Models& m = models->second;
      render::draw_learning(canvas, study, task.name, arm, m);
      render::draw_survival(canvas, study, task.name, arm, m);
      // A long-budget arm trains each model at one rate: no grid to draw.
      if (long_budget_base(config, arm).empty())
        render::draw_grid(canvas, study, task.name, arm, m);
      render::draw_pruning(canvas, study, task.name, arm, m);
      render::draw_mechanism(canvas, study, task.name, arm, m);
      render::draw_grads(canvas, study, task.name, arm, m);
      render::draw_patching(canvas, study, task.name, arm, m);
      render::draw_circuits(canvas, study, task.name, arm, m);
      if (arm == "head_grid") render::draw_count_or_size(canvas, study, task.name);
      if (arm == "fixed_width") render::draw_patterns(canvas, study, task.name, arm, m);
    }
  }
  return canvas.drawn();
}

}  // namespace heads_compare
