// heads_compare's head-by-head plots (see plots_common.hpp), each from seed 0 at a model's
// best lr:
//
//   mechanism_<task>_<arm>  induction (top row) and previous-token (bottom row) score of
//                           every head (layer, head) over training, one column per model;
//                           the last column: the seed mean of the highest score over heads
//   grads_<task>_<arm>      the gradient norm ||dL/dz_h|| of every head's output over training
//   patterns_<task>_<arm>   every head's attention pattern on report example 0 (one row per
//                           model and layer, one column per head)
//   patching_<task>_<arm>   activation patching at the best lr over seeds (recall tasks): the
//                           fewest heads restoring 90% per model, and each layer's head
//                           effects ranked strongest first
#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "plots_common.hpp"

namespace heads_compare::render {

namespace {

// Four step tics across a task's budget (gnuplot's own crowd a narrow panel).
std::string step_tics(std::int64_t steps) {
  return "set xtics " + std::to_string(std::max<std::int64_t>(1, steps / 4)) + "\n";
}

using Grid = std::vector<std::vector<double>>;  // [layer][head]

bool has_values(const Grid& g) {
  for (const auto& row : g)
    for (double v : row)
      if (std::isfinite(v)) return true;
  return false;
}

// True when the run recorded mechanism scores (tasks with tokens).
bool has_mechanism(const RunResult& r) {
  return std::any_of(r.curve.begin(), r.curve.end(),
                     [](const EvalPoint& p) { return has_values(p.induction); });
}

double max_of(const Grid& g) {
  double best = NAN;
  for (const auto& row : g)
    for (double v : row)
      if (std::isfinite(v) && !(v <= best)) best = v;
  return best;
}

// The heads of a run in model order, (layer, head), from its first non-empty grid.
std::vector<std::pair<std::size_t, std::size_t>> heads_of(const RunResult& r,
                                                          Grid EvalPoint::*field) {
  std::vector<std::pair<std::size_t, std::size_t>> heads;
  for (const EvalPoint& p : r.curve)
    if (!(p.*field).empty()) {
      for (std::size_t l = 0; l < (p.*field).size(); ++l)
        for (std::size_t h = 0; h < (p.*field)[l].size(); ++h) heads.emplace_back(l, h);
      break;
    }
  return heads;
}

// "step v(head 0) v(head 1) ..." rows of a per-head field; NaN where a point lacks a head.
std::string head_rows(const RunResult& r, Grid EvalPoint::*field,
                      const std::vector<std::pair<std::size_t, std::size_t>>& heads,
                      bool positive) {
  std::ostringstream out;
  out.precision(8);
  for (const EvalPoint& p : r.curve) {
    const Grid& g = p.*field;
    if (g.empty()) continue;
    out << p.step;
    for (auto [l, h] : heads) {
      double v = l < g.size() && h < g[l].size() ? g[l][h] : NAN;
      if (positive && std::isfinite(v)) v = std::max(v, 1e-12);
      out << " " << (std::isfinite(v) ? v : NAN);
    }
    out << "\n";
  }
  return out.str();
}

// Plot clauses for every head column of a head_rows file.
std::string head_clauses(const std::string& file,
                         const std::vector<std::pair<std::size_t, std::size_t>>& heads,
                         bool titles) {
  std::ostringstream p;
  for (std::size_t i = 0; i < heads.size(); ++i) {
    const auto [l, h] = heads[i];
    p << (i ? ", " : "") << file << " u 1:" << i + 2 << " w l lw 1.8 lc rgb '" << colour(h)
      << "' dt " << dash(l) << " ";
    if (titles)
      p << "title 'L" << l << " h" << h << "'";
    else
      p << "notitle";
  }
  return p.str();
}

// The seed mean of max-over-heads of a field, "step mean" rows over the common points.
std::string max_rows(const Cell& cell, Grid EvalPoint::*field) {
  std::size_t points = std::numeric_limits<std::size_t>::max();
  for (const RunResult* r : cell.runs) points = std::min(points, r->curve.size());
  if (cell.runs.empty()) return "";
  std::ostringstream out;
  out.precision(8);
  for (std::size_t i = 0; i < points; ++i) {
    double sum = 0;
    std::size_t n = 0;
    for (const RunResult* r : cell.runs) {
      const double v = max_of(r->curve[i].*field);
      if (std::isnan(v)) continue;
      sum += v;
      ++n;
    }
    out << cell.runs.front()->curve[i].step << " " << (n ? sum / static_cast<double>(n) : NAN)
        << "\n";
  }
  return out.str();
}

}  // namespace

void draw_mechanism(Canvas& canvas, const Study& study, const std::string& task,
                    const std::string& arm, const Models& models) {
  (void)study;
  std::vector<const Cell*> cells;
  for (const Selected& s : models)
    if (const RunResult* r = first_seed(*s.cell); r && has_mechanism(*r)) cells.push_back(s.cell);
  if (cells.empty()) return;
  const std::string name = plot_name("mechanism", task, arm);
  const std::size_t columns = cells.size() + 1;
  std::ostringstream gp;
  gp << "set multiplot layout 2," << columns << " title "
     << title(task + ", " + arm +
              ": head scores over training\n(seed 0 at best lr; colour = "
              "head, dash = layer)")
     << "\nset yrange [0:1.02]\nset xlabel 'step'\nset key top left font ',8' maxrows 8\n"
     << step_tics(cells.front()->task.steps);
  const std::pair<Grid EvalPoint::*, const char*> rows[] = {
      {&EvalPoint::induction, "induction"}, {&EvalPoint::previous_token, "previous-token"}};
  for (const auto& [field, label] : rows) {
    // The induction-head cut-off (score >= 0.4) on the induction row.
    const std::string cutoff =
        field == &EvalPoint::induction ? ", 0.4 w l dt 3 lc rgb '#777777' notitle" : "";
    for (std::size_t m = 0; m < cells.size(); ++m) {
      const RunResult& r = *first_seed(*cells[m]);
      const auto heads = heads_of(r, field);
      // The heads' key once per column, on the bottom row (the same colours above).
      const bool titled = field == &EvalPoint::previous_token && heads.size() <= 16;
      const std::string file = canvas.data(name + "_" + label + "_" + std::to_string(m) + ".dat",
                                           head_rows(r, field, heads, false));
      gp << "set title " << quoted(model_label(cells[m]->model) + ", lr " + fmt("%g", cells[m]->lr))
         << "\nset ylabel '" << label << " score'\n"
         << "plot " << head_clauses(file, heads, titled) << cutoff << "\n";
    }
    std::string summary;
    for (std::size_t m = 0; m < cells.size(); ++m) {
      const std::string file = canvas.data(
          name + "_" + label + "_max_" + std::to_string(m) + ".dat", max_rows(*cells[m], field));
      summary += (m ? ", " : "") + file + " u 1:2 w l lw 2 lc rgb '" + colour(m) + "' title " +
                 quoted(model_label(cells[m]->model));
    }
    gp << "set title "
       << quoted(std::string("max over heads, mean of ") +
                 std::to_string(cells.front()->runs.size()) + " seeds")
       << "\nplot " << summary << cutoff << "\n";
  }
  canvas.draw(name, 380 * static_cast<int>(columns), 760, gp.str());
}

void draw_grads(Canvas& canvas, const Study& study, const std::string& task, const std::string& arm,
                const Models& models) {
  (void)study;
  std::vector<const Cell*> cells;
  for (const Selected& s : models)
    if (const RunResult* r = first_seed(*s.cell); r && !heads_of(*r, &EvalPoint::grad_z).empty())
      cells.push_back(s.cell);
  if (cells.empty()) return;
  const std::string name = plot_name("grads", task, arm);
  std::size_t most_heads = 0, most_layers = 0;
  std::ostringstream gp;
  gp << "set multiplot layout 1," << cells.size() + 1 << " title "
     << quoted(task + ", " + arm + ": ||dL/dz_h|| per head (seed 0 at best lr)")
     << "\nset logscale y\nset xlabel 'step'\nset ylabel 'gradient norm'\nset key off\n"
     << step_tics(cells.front()->task.steps);
  for (std::size_t m = 0; m < cells.size(); ++m) {
    const RunResult& r = *first_seed(*cells[m]);
    const auto heads = heads_of(r, &EvalPoint::grad_z);
    for (auto [l, h] : heads) {
      most_layers = std::max(most_layers, l + 1);
      most_heads = std::max(most_heads, h + 1);
    }
    const std::string file = canvas.data(name + "_" + std::to_string(m) + ".dat",
                                         head_rows(r, &EvalPoint::grad_z, heads, true));
    gp << "set title " << quoted(model_label(cells[m]->model) + ", lr " + fmt("%g", cells[m]->lr))
       << "\nplot " << head_clauses(file, heads, false) << "\n";
  }
  // A legend panel: one colour per head index, one dash type per layer.
  gp << "unset title\nunset border\nunset tics\nunset xlabel\nunset ylabel\nunset logscale y\n"
     << "set xrange [0:1]\nset yrange [0:1]\nset key center center font ',10'\nplot ";
  for (std::size_t h = 0; h < most_heads; ++h)
    gp << (h ? ", " : "") << "NaN w l lw 2 lc rgb '" << colour(h) << "' title 'head " << h << "'";
  for (std::size_t l = 0; l < most_layers; ++l)
    gp << ", NaN w l lw 2 lc rgb '#333333' dt " << dash(l) << " title 'layer " << l << "'";
  gp << "\n";
  canvas.draw(name, std::max(700, 380 * static_cast<int>(cells.size() + 1)), 460, gp.str());
}

void draw_patterns(Canvas& canvas, const Study& study, const std::string& task,
                   const std::string& arm, const Models& models) {
  (void)study;
  std::vector<const RunResult*> runs;
  std::size_t columns = 0, rows = 0;
  for (const Selected& s : models)
    if (const RunResult* r = first_seed(*s.cell); r && !r->patterns.empty()) {
      runs.push_back(r);
      rows += r->patterns.size();
      for (const auto& layer : r->patterns) columns = std::max(columns, layer.size());
    }
  if (runs.empty() || columns == 0) return;
  const std::string name = plot_name("patterns", task, arm);
  std::ostringstream gp;
  gp << "set multiplot layout " << rows << "," << columns << " title "
     << title(task + ", " + arm +
              ": attention of every head on report example 0\n(seed 0 at "
              "best lr; y = query, x = key)")
     << "\nset palette defined (0 '#ffffff', 1 '#6b8fd6', 2 '#08306b')\nset cbrange [0:1]\n"
     << "unset colorbox\nunset grid\nset size ratio -1\nset tics scale 0\n";
  for (std::size_t m = 0; m < runs.size(); ++m) {
    const RunResult* r = runs[m];
    const std::size_t len = static_cast<std::size_t>(
        std::llround(std::sqrt(static_cast<double>(r->patterns[0][0].size()))));
    gp << "set xrange [-0.5:" << len - 0.5 << "]\nset yrange [" << len - 0.5 << ":-0.5]\n";
    if (len <= 24 && r->sample_tokens.size() >= len) {
      std::ostringstream tics;
      for (std::size_t i = 0; i < len; ++i)
        tics << (i ? ", " : "") << "'" << r->sample_tokens[i] << "' " << i;
      gp << "set xtics (" << tics.str() << ") font ',7'\nset ytics (" << tics.str()
         << ") font ',7'\n";
    } else {
      gp << "set xtics autofreq font ',8'\nset ytics autofreq font ',8'\n";
    }
    for (std::size_t l = 0; l < r->patterns.size(); ++l) {
      for (std::size_t h = 0; h < r->patterns[l].size(); ++h) {
        const auto& p = r->patterns[l][h];
        std::ostringstream data;
        data.precision(5);
        for (std::size_t i = 0; i < len; ++i) {
          for (std::size_t j = 0; j < len; ++j) data << (j ? " " : "") << p[i * len + j];
          data << "\n";
        }
        const std::string file =
            canvas.data(name + "_" + std::to_string(m) + "_l" + std::to_string(l) + "h" +
                            std::to_string(h) + ".dat",
                        data.str());
        gp << "set title "
           << quoted(model_label(r->spec.model) + ": L" + std::to_string(l) + " h" +
                     std::to_string(h))
           << " font ',10'\nplot " << file << " matrix w image notitle\n";
      }
      for (std::size_t h = r->patterns[l].size(); h < columns; ++h) gp << "set multiplot next\n";
    }
  }
  const int panel = columns > 4 ? 200 : 270;
  canvas.draw(name, std::max(700, panel * static_cast<int>(columns) + 40),
              panel * static_cast<int>(rows) + 70, gp.str());
}

void draw_patching(Canvas& canvas, const Study& study, const std::string& task,
                   const std::string& arm, const Models& models) {
  (void)study;
  std::vector<const Selected*> measured;
  for (const Selected& s : models)
    if (s.patching_runs > 0) measured.push_back(&s);
  if (measured.empty()) return;
  const std::string name = plot_name("patching", task, arm);
  std::ostringstream counts, tics;
  tics << "set xtics (";
  for (std::size_t m = 0; m < measured.size(); ++m) {
    const Selected& s = *measured[m];
    counts << m << " " << s.restoring_mean << " " << s.restoring_min << " " << s.restoring_max
           << "\n";
    tics << (m ? ", " : "") << quoted(model_label(s.cell->model)) << " " << m;
  }
  tics << ")\n";
  const std::string count_file = canvas.data(name + "_restoring.dat", counts.str());
  std::ostringstream gp;
  gp << "set multiplot layout 1,2 title "
     << title(task + ", " + arm + ": activation patching at the best lr (mean over seeds)") << "\n"
     << tics.str() << "set xrange [-0.5:" << measured.size() - 0.5 << "]\n"
     << "set yrange [0:*]\nset ylabel 'heads'\nset title 'fewest heads restoring >= 90% "
        "(bars: lowest to highest seed)'\n"
     << "plot " << count_file << " u 1:2:3:4 w yerrorlines lw 2 pt 7 notitle\n"
     << "unset xtics\nset xtics 1\nset xrange [0.5:*]\nset yrange [*:*]\n"
        "set xlabel 'head rank within its layer (1 = strongest)'\n"
        "set ylabel 'effect (normalised logit difference)'\n"
        "set title 'effect by rank (colour = model, dash = layer)'\nset key top right font ',8'\n"
        "plot ";
  bool first = true;
  for (std::size_t m = 0; m < measured.size(); ++m) {
    const Selected& s = *measured[m];
    for (std::size_t l = 0; l < s.patching_ranked.size(); ++l) {
      std::ostringstream rows;
      for (std::size_t k = 0; k < s.patching_ranked[l].size(); ++k)
        rows << k + 1 << " " << s.patching_ranked[l][k] << "\n";
      const std::string file = canvas.data(
          name + "_rank_" + std::to_string(m) + "_" + std::to_string(l) + ".dat", rows.str());
      gp << (first ? "" : ", ") << file << " u 1:2 w lp lw 2 pt 7 dt " << dash(l) << " lc rgb '"
         << colour(m) << "' title "
         << quoted(model_label(s.cell->model) + " L" + std::to_string(l));
      first = false;
    }
  }
  gp << "\n";
  canvas.draw(name, 900, 420, gp.str());
}

}  // namespace heads_compare::render
