// heads_compare's plots (see report.hpp): each PNG has a data file per series under
// plots/data and a gnuplot script plots/<name>.gp, so a plot can be restyled and redrawn
// with `gnuplot plots/<name>.gp` from the run folder.
//
//   learning_<task>.png     validation loss and accuracy per model, mean line and min-max
//                           band over seeds
//   grad_norms_<task>.png   per head, the gradient norm of its parameter blocks
//                           sqrt(|dW_q,h|^2 + |dW_k,h|^2 + |dW_v,h|^2 + |dW_o,h|^2) and of its
//                           output z over training (first seed, moving average)
//   patterns_<task>_<model>.png  every head's attention pattern on validation example 0
//   importance_<task>.png   normalized head importance per layer and head (first seed)
//   pruning_<task>.png      accuracy as heads are removed by importance and at random
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "report.hpp"

namespace heads_compare {

namespace fs = std::filesystem;

namespace {

std::string slug(const Group& g) {
  return g.task + "_L" + std::to_string(g.layers) + "H" + std::to_string(g.heads);
}

std::string quoted(const fs::path& p) {
  std::string s(1, '\'');
  s += p.string();
  s += '\'';
  return s;
}

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream out(path);
  if (!out) throw std::runtime_error("heads_compare: cannot write " + path.string());
  out << text;
}

struct Canvas {
  fs::path dir, data;
  std::vector<std::string> drawn;
};

// Writes <name>.gp (terminal and output prepended) and runs gnuplot on it.
void draw(Canvas& canvas, const std::string& name, int width, int height, const std::string& body) {
  const fs::path png = canvas.dir / (name + ".png"), script = canvas.dir / (name + ".gp");
  std::ostringstream gp;
  gp << "set terminal pngcairo noenhanced size " << width << "," << height << " font ',10'\n"
     << "set output " << quoted(png) << "\n"
     << body << "unset multiplot\nunset output\n";
  write_file(script, gp.str());
  const std::string command = "gnuplot " + quoted(script) + " 2>&1";
  if (std::system(command.c_str()) != 0 || !fs::exists(png)) {
    std::cerr << "heads_compare: gnuplot failed on " << script << "\n";
    return;
  }
  canvas.drawn.push_back("plots/" + name + ".png");
}

// Seed-mean and min/max of a per-run series sampled at the same x in every run.
struct Band {
  std::vector<double> x, mean, lo, hi;
};
template <typename Get>
Band band(const std::vector<const RunResult*>& runs, std::size_t points, Get get) {
  Band b;
  for (std::size_t i = 0; i < points; ++i) {
    double sum = 0, lo = INFINITY, hi = -INFINITY, x = 0;
    for (const RunResult* r : runs) {
      auto [xi, v] = get(*r, i);
      x = xi;
      sum += v;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    b.x.push_back(x);
    b.mean.push_back(sum / static_cast<double>(runs.size()));
    b.lo.push_back(lo);
    b.hi.push_back(hi);
  }
  return b;
}

std::string band_text(const Band& b) {
  std::ostringstream out;
  out.precision(8);
  for (std::size_t i = 0; i < b.x.size(); ++i)
    out << b.x[i] << " " << b.mean[i] << " " << b.lo[i] << " " << b.hi[i] << "\n";
  return out.str();
}

std::string band_plot(const fs::path& file, int color, const std::string& title) {
  std::ostringstream p;
  p << quoted(file) << " u 1:3:4 w filledcurves fs transparent solid 0.2 noborder lc " << color
    << " notitle, " << quoted(file) << " u 1:2 w lp pt 7 ps 0.4 lw 2 lc " << color << " title '"
    << title << "'";
  return p.str();
}

std::vector<const Group*> task_groups(const std::vector<Group>& groups, const std::string& task) {
  std::vector<const Group*> out;
  for (const Group& g : groups)
    if (g.task == task) out.push_back(&g);
  return out;
}

void learning_plot(Canvas& c, const std::string& task, const std::vector<const Group*>& groups) {
  const bool with_layers =
      std::any_of(groups.begin(), groups.end(), [](const Group* g) { return g->control; });
  std::string loss_plots, acc_plots;
  int color = 1;
  for (const Group* g : groups) {
    std::size_t points = g->runs.front()->curve.size();
    for (const RunResult* r : g->runs) points = std::min(points, r->curve.size());
    const fs::path loss = c.data / ("learning_loss_" + slug(*g) + ".dat");
    const fs::path acc = c.data / ("learning_acc_" + slug(*g) + ".dat");
    write_file(loss, band_text(band(g->runs, points, [](const RunResult& r, std::size_t i) {
                 return std::pair{static_cast<double>(r.curve[i].step), r.curve[i].val_loss};
               })));
    write_file(acc, band_text(band(g->runs, points, [](const RunResult& r, std::size_t i) {
                 return std::pair{static_cast<double>(r.curve[i].step), r.curve[i].val_accuracy};
               })));
    const std::string title = g->label(with_layers);
    loss_plots += (loss_plots.empty() ? "" : ", ") + band_plot(loss, color, title);
    acc_plots += (acc_plots.empty() ? "" : ", ") + band_plot(acc, color, title);
    ++color;
  }
  std::ostringstream gp;
  gp << "set multiplot layout 1,2 title '" << task
     << ": validation, mean over seeds (band: min to max)'\n"
     << "set xlabel 'step'\nset grid\nset key top right\n"
     << "set ylabel 'loss'\nset logscale y\nplot " << loss_plots << "\n"
     << "unset logscale y\nset ylabel 'accuracy'\nset yrange [0:1.02]\nset key bottom right\n"
     << "plot " << acc_plots << "\n";
  draw(c, "learning_" + task, 1200, 450, gp.str());
}

// Moving average over `window` points.
std::vector<double> smooth(const std::vector<double>& v, std::size_t window) {
  std::vector<double> out(v.size());
  double sum = 0;
  for (std::size_t i = 0; i < v.size(); ++i) {
    sum += v[i];
    if (i >= window) sum -= v[i - window];
    out[i] = sum / static_cast<double>(std::min(i + 1, window));
  }
  return out;
}

void grad_norm_plot(Canvas& c, const std::string& task, const std::vector<const Group*>& groups) {
  std::ostringstream gp;
  gp << "set multiplot layout 2," << groups.size() << " title '" << task
     << ": per-head gradient norms (first seed, moving average; color = head, dashed = "
        "later layers)'\n"
     << "set logscale y\nset grid\nset key off\nset xlabel 'step'\n";
  for (int row = 0; row < 2; ++row)
    for (const Group* g : groups) {
      const RunResult& r = *g->runs.front();
      if (r.grads.empty()) continue;
      const std::size_t heads = r.grads.front().heads.size();
      const std::size_t window = std::max<std::size_t>(1, r.grads.size() / 50);
      std::vector<std::vector<double>> series(heads);
      for (const GradStep& s : r.grads)
        for (std::size_t h = 0; h < heads; ++h) {
          const auto& n = s.heads[h];
          series[h].push_back(
              row == 0 ? std::sqrt(n.w_q * n.w_q + n.w_k * n.w_k + n.w_v * n.w_v + n.w_o * n.w_o)
                       : n.z);
        }
      std::ostringstream data;
      data.precision(6);
      for (auto& s : series) s = smooth(s, window);
      for (std::size_t i = 0; i < r.grads.size(); ++i) {
        data << r.grads[i].step;
        for (std::size_t h = 0; h < heads; ++h) data << " " << std::max(series[h][i], 1e-12);
        data << "\n";
      }
      const fs::path file =
          c.data / ("grad_norms_" + std::string(row == 0 ? "params_" : "z_") + slug(*g) + ".dat");
      write_file(file, data.str());
      gp << "set title '" << g->label()
         << (row == 0 ? ": head parameter blocks" : ": head output z") << "'\nplot ";
      for (std::size_t h = 0; h < heads; ++h) {
        const auto& id = r.grads.front().heads[h];
        gp << (h ? ", " : "") << quoted(file) << " u 1:" << h + 2 << " w l lw 1.5 lc "
           << id.head + 1 << " dt " << (id.layer == 0 ? 1 : 2);
      }
      gp << "\n";
    }
  draw(c, "grad_norms_" + task, 420 * static_cast<int>(groups.size()), 700, gp.str());
}

// Axis tics naming each position's token id (PAD = 0, SEP = 1, symbols from 2).
std::string token_tics(const std::vector<std::int64_t>& tokens, std::int64_t length) {
  std::ostringstream tics;
  for (std::int64_t i = 0; i < length && i < static_cast<std::int64_t>(tokens.size()); ++i)
    tics << (i ? ", " : "") << "'" << tokens[static_cast<std::size_t>(i)] << "' " << i;
  return "set xtics (" + tics.str() + ") font ',6' rotate by 90\nset ytics (" + tics.str() +
         ") font ',6'\n";
}

void pattern_plots(Canvas& c, const std::vector<const Group*>& groups) {
  for (const Group* g : groups) {
    const RunResult& r = *g->runs.front();
    const std::size_t layers = r.patterns.size();
    if (layers == 0) continue;
    const std::size_t heads = r.patterns.front().size();
    std::ostringstream gp;
    gp << "set multiplot layout " << layers << "," << heads << " title '" << g->task << ", "
       << g->label() << ", validation example 0 (y = query, x = key, tics = token ids)'\n"
       << "set palette defined (0 'white', 1 '#3060c0', 2 '#101040')\nset cbrange [0:1]\n"
       << "unset colorbox\nset size ratio -1\n"
       << "set xrange [-0.5:" << r.pattern_len - 0.5 << "]\nset yrange [" << r.pattern_len - 0.5
       << ":-0.5]\n"
       << token_tics(r.sample_tokens, r.pattern_len);
    for (std::size_t l = 0; l < layers; ++l)
      for (std::size_t h = 0; h < heads; ++h) {
        const fs::path file = c.data / ("pattern_" + slug(*g) + "_l" + std::to_string(l) + "h" +
                                        std::to_string(h) + ".dat");
        std::ostringstream data;
        data.precision(5);
        const auto t = static_cast<std::size_t>(r.pattern_len);
        for (std::size_t i = 0; i < t; ++i) {
          for (std::size_t j = 0; j < t; ++j) data << (j ? " " : "") << r.patterns[l][h][i * t + j];
          data << "\n";
        }
        write_file(file, data.str());
        gp << "set title 'layer " << l << ", head " << h << "'\nplot " << quoted(file)
           << " matrix w image notitle\n";
      }
    const int panel = heads > 4 ? 190 : 260;
    draw(c, "patterns_" + slug(*g), std::max(640, panel * static_cast<int>(heads) + 40),
         panel * static_cast<int>(layers) + 60, gp.str());
  }
}

void importance_plot(Canvas& c, const std::string& task, const std::vector<const Group*>& groups) {
  std::vector<const Group*> multi;
  for (const Group* g : groups)
    if (g->heads > 1) multi.push_back(g);
  if (multi.empty()) return;
  std::ostringstream gp;
  gp << "set multiplot layout 1," << multi.size() << " title '" << task
     << ": head importance, normalized per layer (first seed: head indices have no meaning "
        "across seeds)'\n"
     << "set palette defined (0 'white', 1 '#d08020', 2 '#602000')\nset cbrange [0:1]\n"
     << "set xlabel 'head'\nset ylabel 'layer'\nset xtics 1\nset ytics 1\n";
  for (const Group* g : multi) {
    const auto& first = g->runs.front()->importance.normalized;
    std::ostringstream data;
    for (std::size_t l = 0; l < first.size(); ++l) {
      for (std::size_t h = 0; h < first[l].size(); ++h) data << (h ? " " : "") << first[l][h];
      data << "\n";
    }
    const fs::path file = c.data / ("importance_" + slug(*g) + ".dat");
    write_file(file, data.str());
    gp << "set xrange [-0.5:" << g->heads - 0.5 << "]\nset yrange [" << g->layers - 0.5
       << ":-0.5]\nset title '" << g->label() << "'\nplot " << quoted(file)
       << " matrix w image notitle, " << quoted(file)
       << " matrix u 1:2:(sprintf('%.2f', $3)) w labels font ',8' notitle\n";
  }
  draw(c, "importance_" + task, std::max(560, 380 * static_cast<int>(multi.size())), 400, gp.str());
}

void pruning_plot(Canvas& c, const std::string& task, const std::vector<const Group*>& groups) {
  std::vector<const Group*> multi;
  for (const Group* g : groups)
    if (g->heads * g->layers > 1) multi.push_back(g);
  if (multi.empty()) return;
  std::ostringstream gp;
  gp << "set multiplot layout 1," << multi.size() << " title '" << task
     << ": validation accuracy as heads are removed (mean over seeds, band: min to max)'\n"
     << "set xlabel 'heads removed'\nset ylabel 'accuracy'\nset yrange [0:1.02]\nset grid\n"
     << "set key bottom left\n";
  for (const Group* g : multi) {
    const std::size_t points = g->runs.front()->pruning_by_importance.size();
    auto series = [&](bool by_importance) {
      return band(g->runs, points, [by_importance](const RunResult& r, std::size_t i) {
        const auto& p = by_importance ? r.pruning_by_importance[i] : r.pruning_random[i];
        return std::pair{static_cast<double>(p.removed), p.accuracy};
      });
    };
    const fs::path imp = c.data / ("pruning_importance_" + slug(*g) + ".dat");
    const fs::path rnd = c.data / ("pruning_random_" + slug(*g) + ".dat");
    write_file(imp, band_text(series(true)));
    write_file(rnd, band_text(series(false)));
    gp << "set title '" << g->label() << " (" << g->layers * g->heads << " heads)'\nplot "
       << band_plot(imp, 1, "least important first") << ", " << band_plot(rnd, 7, "random order")
       << "\n";
  }
  draw(c, "pruning_" + task, std::max(560, 400 * static_cast<int>(multi.size())), 400, gp.str());
}

}  // namespace

std::vector<std::string> draw_plots(const StudyConfig& config, const std::vector<Group>& groups) {
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) {
    std::cerr << "heads_compare: gnuplot not found; no plots drawn (scripts/setup.sh installs "
                 "gnuplot-nox)\n";
    return {};
  }
  Canvas canvas;
  canvas.dir = fs::path(config.out_dir) / "plots";
  canvas.data = canvas.dir / "data";
  fs::create_directories(canvas.data);
  for (const std::string& task : config.tasks) {
    const auto groups_of_task = task_groups(groups, task);
    std::vector<const Group*> main_groups;
    for (const Group* g : groups_of_task)
      if (!g->control) main_groups.push_back(g);
    learning_plot(canvas, task, groups_of_task);
    grad_norm_plot(canvas, task, main_groups);
    importance_plot(canvas, task, groups_of_task);
    pruning_plot(canvas, task, groups_of_task);
    pattern_plots(canvas, groups_of_task);
  }
  return canvas.drawn;
}

}  // namespace heads_compare
