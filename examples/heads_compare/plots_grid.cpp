// heads_compare's grid and pruning plots (see plots_common.hpp):
//
//   grid_success_<task>_<arm>  success rate of every (model, lr) cell as a heatmap, each cell
//                              labelled k/n, each model's selected lr boxed
//   grid_loss_<task>_<arm>     mean final report-split loss of every cell, the same way
//   pruning_<task>_<arm>       report-split accuracy as heads are removed by importance,
//                              greedily and at random, against heads removed (top) and
//                              against the fraction of attention parameters removed (bottom)
#include <algorithm>
#include <cmath>
#include <sstream>

#include "plots_common.hpp"

namespace heads_compare::render {

namespace {

// "set xtics (...)" naming the lr grid and "set ytics (...)" naming the models.
std::string grid_tics(const std::vector<double>& lrs, const Models& models) {
  std::ostringstream gp;
  gp << "set xtics (";
  for (std::size_t i = 0; i < lrs.size(); ++i)
    gp << (i ? ", " : "") << quoted(fmt("%g", lrs[i])) << " " << i;
  gp << ")\nset ytics (";
  for (std::size_t m = 0; m < models.size(); ++m)
    gp << (m ? ", " : "") << quoted(model_label(models[m].cell->model)) << " " << m;
  gp << ")\n";
  return gp.str();
}

void grid_plot(Canvas& canvas, const std::string& task, const std::string& arm,
               const Models& models, bool success) {
  // The union of every model's lrs (every model trains on the same grid).
  std::vector<double> lrs;
  for (const Selected& s : models)
    for (const Cell* c : s.grid)
      if (std::find(lrs.begin(), lrs.end(), c->lr) == lrs.end()) lrs.push_back(c->lr);
  std::sort(lrs.begin(), lrs.end());
  if (lrs.empty()) return;
  const std::string name = plot_name(success ? "grid_success" : "grid_loss", task, arm);
  std::ostringstream cells, chosen;
  cells.precision(8);
  double lo = INFINITY, hi = -INFINITY;
  for (std::size_t m = 0; m < models.size(); ++m)
    for (const Cell* c : models[m].grid) {
      const auto x =
          static_cast<std::size_t>(std::find(lrs.begin(), lrs.end(), c->lr) - lrs.begin());
      const double value = success ? c->success.estimate : c->final_loss.estimate;
      const std::string label =
          success ? std::to_string(c->solved) + "/" + std::to_string(c->runs.size())
                  : fmt("%.3g", value);
      cells << x << " " << m << " " << (std::isfinite(value) ? value : NAN) << " \"" << label
            << "\"\n";
      if (std::isfinite(value)) {
        lo = std::min(lo, value);
        hi = std::max(hi, value);
      }
      if (c == models[m].cell) chosen << x << " " << m << "\n";
    }
  const std::string data = canvas.data(name + ".dat", cells.str());
  const std::string selected = canvas.data(name + "_selected.dat", chosen.str());
  const std::size_t n = models.empty() ? 0 : models.front().cell->runs.size();
  std::ostringstream gp;
  gp << "set title "
     << title(task + ", " + arm + ": " +
              (success ? "success rate (solved / seeds)" : "mean final report-split loss") +
              "\nn = " + std::to_string(n) + " seeds per cell; box = selected lr")
     << "\n"
     << grid_tics(lrs, models) << "set xlabel 'learning rate'\nset ylabel 'model'\n"
     << "set xrange [-0.5:" << lrs.size() - 0.5 << "]\nset yrange [" << models.size() - 0.5
     << ":-0.5]\nunset grid\nset tics scale 0\n";
  if (success)
    gp << "set palette defined (0 '#f7f7f7', 1 '#a6dba0', 2 '#1b7837')\nset cbrange [0:1]\n"
       << "set cblabel 'success rate'\n";
  else
    gp << "set palette defined (0 '#fff5eb', 1 '#fdae6b', 2 '#d94801')\n"
       << (lo < hi    ? "set cbrange [" + fmt("%.10g", lo) + ":" + fmt("%.10g", hi) + "]\n"
           : lo == hi ? "set cbrange [" + fmt("%.10g", lo - 0.5 * std::abs(lo) - 1e-9) + ":" +
                            fmt("%.10g", hi + 0.5 * std::abs(hi) + 1e-9) + "]\n"
                      : "")
       << "set cblabel 'loss'\n";
  gp << "plot " << data
     << " u 1:2:(0.5):(0.5):3 w boxxyerror fs solid 1.0 noborder fc palette notitle, " << data
     << " u 1:2:4 w labels font ',12' notitle, " << selected
     << " u 1:2:(0.47):(0.47) w boxxyerror lw 3 lc rgb '#000000' notitle\n";
  const int width = std::max(560, 260 + 130 * static_cast<int>(lrs.size()));
  const int height = std::max(320, 140 + 60 * static_cast<int>(models.size()));
  canvas.draw(name, width, height, gp.str());
}

}  // namespace

void draw_grid(Canvas& canvas, const Study& study, const std::string& task, const std::string& arm,
               const Models& models) {
  (void)study;
  if (models.empty()) return;
  if (has_accuracy(models)) grid_plot(canvas, task, arm, models, true);
  grid_plot(canvas, task, arm, models, false);
}

void draw_pruning(Canvas& canvas, const Study& study, const std::string& task,
                  const std::string& arm, const Models& models) {
  std::vector<const Selected*> drawn;
  for (const Selected& s : models)
    if (!s.prune_importance.empty()) drawn.push_back(&s);
  if (drawn.empty()) return;
  const std::string name = plot_name("pruning", task, arm);
  const std::size_t n = drawn.front()->cell->runs.size();
  // Regression tasks are judged by their loss, classification tasks by accuracy.
  const auto found = study.is_regression.find(task);
  const bool by_loss = found != study.is_regression.end() && found->second;
  const std::string baselines = baseline_clauses(study, task, !by_loss);
  std::ostringstream gp;
  gp << "set multiplot layout 2," << drawn.size() << " title "
     << title(task + ", " + arm + ": report " + (by_loss ? "loss" : "accuracy") +
              " as heads are removed\n(best lr, mean over " + std::to_string(n) +
              " seeds; grey band: random orders)")
     << (by_loss ? "\nset ylabel 'loss'\nset yrange [0:*]\nset key top left opaque font ',8'\n"
                 : "\nset ylabel 'accuracy'\nset yrange [0:1.05]\nset key top right opaque "
                   "font ',8'\n");
  std::vector<std::string> files;
  for (std::size_t m = 0; m < drawn.size(); ++m) {
    const Selected& s = *drawn[m];
    std::ostringstream rows;
    rows.precision(8);
    auto at = [](const std::vector<double>& v, std::size_t k) { return k < v.size() ? v[k] : NAN; };
    const auto& importance = by_loss ? s.prune_importance_loss : s.prune_importance;
    const auto& greedy = by_loss ? s.prune_greedy_loss : s.prune_greedy;
    const auto& random = by_loss ? s.prune_random_loss : s.prune_random;
    const auto& low = by_loss ? s.prune_random_low_loss : s.prune_random_low;
    const auto& high = by_loss ? s.prune_random_high_loss : s.prune_random_high;
    for (std::size_t k = 0; k < s.prune_importance.size(); ++k)
      rows << k << " " << at(s.prune_fraction, k) << " " << at(importance, k) << " "
           << at(greedy, k) << " " << at(random, k) << " " << at(low, k) << " " << at(high, k)
           << "\n";
    files.push_back(canvas.data(name + "_" + std::to_string(m) + ".dat", rows.str()));
  }
  for (int row = 0; row < 2; ++row)
    for (std::size_t m = 0; m < drawn.size(); ++m) {
      const Selected& s = *drawn[m];
      const std::string& f = files[m];
      const int x = row == 0 ? 1 : 2;
      const std::string xs = std::to_string(x);
      gp << "set title "
         << quoted(model_label(s.cell->model) + ", " +
                   std::to_string(s.prune_importance.size() - 1) + " heads in all")
         << "\nset xlabel '"
         << (row == 0 ? "heads removed" : "fraction of attention parameters removed") << "'\n"
         << (row == 0 ? "set xtics 1\nset xrange [*:*]\n"
                      : "set xtics autofreq\nset xrange [0:1]\n")
         << "plot " << f << " u " << xs << ":6:7 w filledcurves fs transparent solid 0.25 "
         << "noborder lc rgb '#888888' notitle, " << f << " u " << xs
         << ":5 w lp pt 7 ps 0.5 lw 1.5 lc rgb '#666666' title 'random', " << f << " u " << xs
         << ":3 w lp pt 5 ps 0.6 lw 2 lc rgb '" << colour(0) << "' title 'importance', " << f
         << " u " << xs << ":4 w lp pt 9 ps 0.7 lw 2 lc rgb '" << colour(1) << "' title 'greedy'"
         << baselines << "\n";
    }
  const int width = std::max(700, 380 * static_cast<int>(drawn.size()));
  canvas.draw(name, width, 720, gp.str());
}

}  // namespace heads_compare::render
