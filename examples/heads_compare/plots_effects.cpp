// heads_compare's count-or-size and circuit plots (see plots_common.hpp):
//
//   count_or_size_<task>_head_grid  the head_grid arm as an H x d heatmap, one panel per
//                                   budget: each model at its own best rate, coloured by its
//                                   final report accuracy (loss for tasks scored by loss) and
//                                   labelled with its solved runs
//   circuit_<task>_<arm>            the circuit into layer 0 per model (best rate, mean
//                                   [bootstrap 95%] over the runs that count): the strongest
//                                   layer-0 head, the strongest path from a layer-0 head into
//                                   the receiver through its q, k and v, and the receiver
#include <algorithm>
#include <cmath>
#include <sstream>

#include "plots_common.hpp"

namespace heads_compare::render {

namespace {

// The grids of `task` (head_grid, then its long-budget arm), those with cells.
std::vector<const GridEffects*> grids_of(const Study& study, const std::string& task) {
  std::vector<const GridEffects*> grids;
  for (const GridEffects& g : study.grids)
    if (g.task == task && !g.heads.empty() && !g.head_dims.empty()) grids.push_back(&g);
  return grids;
}

// One panel's data rows: "d-index H-index value label" per cell; NaN where none.
std::string grid_rows(const GridEffects& g, double& lo, double& hi) {
  std::ostringstream rows;
  rows.precision(8);
  for (std::size_t h = 0; h < g.heads.size(); ++h)
    for (std::size_t d = 0; d < g.head_dims.size(); ++d) {
      const Selected* s = g.at[h][d];
      const double v =
          s ? (g.by_loss ? s->cell->final_loss.estimate : s->cell->final_acc.estimate) : NAN;
      std::string label = "-";
      if (s && std::isfinite(v)) {
        label = g.by_loss ? fmt("%.3f", v) : fmt("%.0f%%", 100 * v);
        if (!g.by_loss)
          label = std::to_string(s->cell->solved) + "/" + std::to_string(s->cell->runs.size()) +
                  " " + label;
        lo = std::min(lo, v);
        hi = std::max(hi, v);
      }
      rows << d << " " << h << " " << (std::isfinite(v) ? v : NAN) << " \"" << label << "\"\n";
    }
  return rows.str();
}

// The palette and colour range: accuracy in [0, 1] (greener is better), loss over the
// panels' range (darker is worse).
std::string grid_palette(bool by_loss, double lo, double hi) {
  if (!by_loss)
    return "set palette defined (0 '#f7f7f7', 1 '#a6dba0', 2 '#1b7837')\nset cbrange [0:1]\n"
           "set cblabel 'final accuracy'\n";
  std::string range;
  if (lo < hi) range = "set cbrange [" + fmt("%.10g", lo) + ":" + fmt("%.10g", hi) + "]\n";
  return "set palette defined (0 '#fff5eb', 1 '#fdae6b', 2 '#d94801')\n" + range +
         "set cblabel 'final loss'\n";
}

// A mean [low, high] triple of a data row.
std::string triple(const Interval& i) {
  auto v = [](double x) { return std::isfinite(x) ? fmt("%.6g", x) : std::string("NaN"); };
  return v(i.estimate) + " " + v(i.low) + " " + v(i.high);
}

}  // namespace

void draw_count_or_size(Canvas& canvas, const Study& study, const std::string& task) {
  const auto grids = grids_of(study, task);
  if (grids.empty()) return;
  const GridEffects& first = *grids.front();
  const std::string name = plot_name("count_or_size", task, first.arm);
  double lo = INFINITY, hi = -INFINITY;
  std::vector<std::string> files;
  for (std::size_t i = 0; i < grids.size(); ++i)
    files.push_back(
        canvas.data(name + "_" + std::to_string(i) + ".dat", grid_rows(*grids[i], lo, hi)));
  std::ostringstream gp;
  gp << "set multiplot layout 1," << grids.size() << " title "
     << title(task + ": count or size? each model at its own best rate" +
              (first.by_loss ? std::string(" (final report loss)")
                             : std::string(" (solved / seeds, final report accuracy)")))
     << "\n"
     << grid_palette(first.by_loss, lo, hi) << "unset grid\nset tics scale 0\n"
     << "set xlabel 'head dimension d'\nset ylabel 'heads H'\n";
  for (std::size_t i = 0; i < grids.size(); ++i) {
    const GridEffects& g = *grids[i];
    gp << "set title " << quoted(std::to_string(g.steps) + " steps (" + g.arm + ")") << "\n"
       << "set xtics (";
    for (std::size_t d = 0; d < g.head_dims.size(); ++d)
      gp << (d ? ", " : "") << quoted(std::to_string(g.head_dims[d])) << " " << d;
    gp << ")\nset ytics (";
    for (std::size_t h = 0; h < g.heads.size(); ++h)
      gp << (h ? ", " : "") << quoted(std::to_string(g.heads[h])) << " " << h;
    gp << ")\nset xrange [-0.5:" << g.head_dims.size() - 0.5 << "]\nset yrange ["
       << g.heads.size() - 0.5 << ":-0.5]\nplot " << files[i]
       << " u 1:2:(0.5):(0.5):3 w boxxyerror fs solid 1.0 noborder fc palette notitle, " << files[i]
       << " u 1:2:4 w labels font ',11' notitle\n";
  }
  canvas.draw(name, std::max(640, 520 * static_cast<int>(grids.size())), 520, gp.str());
}

void draw_circuits(Canvas& canvas, const Study& study, const std::string& task,
                   const std::string& arm, const Models& models) {
  (void)study;
  std::ostringstream rows;
  std::ostringstream tics;
  std::size_t drawn = 0;
  for (const Selected& s : models) {
    if (s.circuit.runs == 0) continue;
    const CircuitSummary& c = s.circuit;
    rows << drawn << " " << triple(c.layer0) << " " << triple(c.path_q) << " " << triple(c.path_k)
         << " " << triple(c.path_v) << " " << triple(c.receiver) << "\n";
    tics << (drawn ? ", " : "")
         << quoted(model_label(s.cell->model) + " (" + std::to_string(c.runs) + ")") << " "
         << drawn;
    ++drawn;
  }
  if (drawn == 0) return;
  const std::string name = plot_name("circuit", task, arm);
  const std::string data = canvas.data(name + ".dat", rows.str());
  // Five bars per model: columns 2-4 layer-0 head, 5-7 via q, 8-10 via k, 11-13 via v,
  // 14-16 receiver (mean, low, high).
  const char* labels[] = {"strongest layer-0 head", "path via q", "path via k (K-composition)",
                          "path via v", "receiver (last layer)"};
  std::ostringstream gp;
  gp << "set title "
     << title(task + ", " + arm +
              ": the circuit into layer 0 (best lr; mean [bootstrap 95%] over the runs "
              "counted, in brackets)\nnormalised patching effect, 1 = restores the clean run")
     << "\nset xtics (" << tics.str() << ") rotate by -30\nset xrange [-0.6:" << drawn - 0.4
     << "]\nset ylabel 'patching effect'\nset xzeroaxis lt -1\nset boxwidth 0.15\n"
     << "set style fill solid 1.0 noborder\nset key outside right top vertical font ',9'\n"
     << "plot ";
  for (int b = 0; b < 5; ++b) {
    const std::string x = "($1" + fmt("%+.2f", 0.16 * (b - 2)) + ")";
    const int col = 2 + 3 * b;
    gp << (b ? ", " : "") << data << " u " << x << ":" << col << " w boxes lc rgb '" << colour(b)
       << "' title " << quoted(labels[b]) << ", " << data << " u " << x << ":" << col + 1
       << ":(0):($" << col + 2 << "-$" << col + 1
       << ") w vectors nohead lw 1.2 lc rgb '#333333' notitle";
  }
  gp << "\n";
  canvas.draw(name, std::max(900, 400 + 130 * static_cast<int>(drawn)), 520, gp.str());
}

}  // namespace heads_compare::render
