// report.md's sections on the head_grid arm's count-or-size effects and on the circuits
// into layer 0 (see report_sections.hpp).
#include <cmath>
#include <string>

#include "effects.hpp"
#include "plots_common.hpp"
#include "report_sections.hpp"

namespace heads_compare {

namespace {

using render::fmt;
using render::model_label;

// A cell of the H x d table: solved k/n and the primary metric's mean [bootstrap 95%].
std::string grid_cell(const Selected* s, bool by_loss) {
  if (!s) return "-";
  const Cell& c = *s->cell;
  return std::to_string(c.solved) + "/" + std::to_string(c.runs.size()) + "; " +
         (by_loss ? loss_text(c.final_loss) : percent(c.final_acc)) + " (lr " + fmt("%g", c.lr) +
         rate_mark(*s) + ")";
}

std::string effect_row(const char* name, const char* what, const statistics::PairedComparison& p,
                       bool by_loss, bool confirmatory) {
  if (p.n == 0) return std::string("| ") + name + " | " + what + " | no pairs | | | |\n";
  const double scale = by_loss ? 1.0 : 100.0;
  const auto& d = p.shift.shift;
  std::string shift =
      interval({scale * d.estimate, scale * d.low, scale * d.high}, by_loss ? "%+.4f" : "%+.1f");
  if (p.shift.coverage < 0.95 - 1e-9)
    shift += " (exact " + fmt("%.0f", 100 * p.shift.coverage) + "%)";
  return std::string("| ") + name + " | " + what + " | " + shift + " | " +
         std::to_string(p.positive) + "+ " + std::to_string(p.negative) + "- " +
         std::to_string(p.ties) + "= | " + fmt("%.3g", p.sign_test_p) + " | " +
         fmt("%.3g", p.holm_p) + (confirmatory ? " (confirmatory)" : " (exploratory)") + " |\n";
}

void write_grid_table(std::ostringstream& md, const GridEffects& g) {
  md << "| H \\ d |";
  for (std::int64_t d : g.head_dims) md << " d = " << d << " |";
  md << "\n|---|";
  for (std::size_t d = 0; d < g.head_dims.size(); ++d) md << "---|";
  md << "\n";
  for (std::size_t h = 0; h < g.heads.size(); ++h) {
    md << "| H = " << g.heads[h] << " |";
    for (std::size_t d = 0; d < g.head_dims.size(); ++d)
      md << " " << grid_cell(g.at[h][d], g.by_loss) << " |";
    md << "\n";
  }
}

void write_effects_table(std::ostringstream& md, const GridEffects& g) {
  const std::string hi = std::to_string(g.heads.back()), lo = std::to_string(g.heads.front());
  const std::string dhi = std::to_string(g.head_dims.back()),
                    dlo = std::to_string(g.head_dims.front());
  const std::string count = "mean over d of m(H=" + hi + ", d) - m(H=" + lo + ", d)";
  const std::string size = "mean over H of m(H, d=" + dhi + ") - m(H, d=" + dlo + ")";
  const std::string inter = "[m(" + hi + ", " + dhi + ") - m(" + lo + ", " + dhi + ")] - [m(" + hi +
                            ", " + dlo + ") - m(" + lo + ", " + dlo + ")]";
  md << "\n| effect | per seed | Hodges-Lehmann shift " << (g.by_loss ? "(loss)" : "(points)")
     << " [exact 95%] | signs | sign p | Holm p (family) |\n|---|---|---|---|---|---|\n"
     << effect_row("count", count.c_str(), g.count, g.by_loss, g.confirmatory)
     << effect_row("size", size.c_str(), g.size, g.by_loss, g.confirmatory)
     << effect_row("interaction", inter.c_str(), g.interaction, g.by_loss, g.confirmatory);
}

std::string circuit_row(const Selected& s) {
  const CircuitSummary& c = s.circuit;
  auto v = [](const Interval& i) { return interval(i, "%.2f"); };
  return "| " + model_label(s.cell->model) + " | " + std::to_string(c.runs) + "/" +
         std::to_string(s.cell->runs.size()) + " | " + v(c.layer0) + " | " + v(c.receiver) + " | " +
         v(c.path_q) + " | " + v(c.path_k) + " | " + v(c.path_v) + " | " +
         interval(c.senders, "%.1f") + " | " + interval(c.receivers, "%.1f") + " |\n";
}

std::string overturn(const statistics::PairedComparison& p) {
  if (p.n == 0) return "-";
  return p.holm_p < 0.05 ? "new seeds whose interval includes 0, or a longer budget that closes it"
                         : "more seeds or a longer budget moving the interval off 0";
}

}  // namespace

void write_verdicts(std::ostringstream& md, const Study& study) {
  std::ostringstream rows;
  for (const GridEffects& g : study.grids) {
    if (!g.confirmatory) continue;
    const double scale = g.by_loss ? 1.0 : 100.0;
    const char* format = g.by_loss ? "%+.4f" : "%+.1f";
    for (const auto& [name, p] :
         {std::pair<const char*, const statistics::PairedComparison*>{"count", &g.count},
          {"size", &g.size},
          {"interaction", &g.interaction}}) {
      const auto& d = p->shift.shift;
      rows << "| " << g.task << " | " << name << " | "
           << (p->n ? interval({scale * d.estimate, scale * d.low, scale * d.high}, format)
                    : std::string("-"))
           << " " << (g.by_loss ? "(loss)" : "(points)") << "; " << p->n << " seeds | "
           << (p->n ? fmt("%.3g", p->holm_p) : std::string("-")) << " | "
           << grid_verdict(name, *p, g.by_loss) << " | " << overturn(*p) << " |\n";
    }
  }
  if (rows.str().empty()) return;
  md << "## Verdicts: head count or head size? (confirmatory)\n\n"
     << "The head_grid arm's tests at each task's own budget (per task's section: the H x d "
        "table and the same tests at the long budget, exploratory). Hodges-Lehmann shift "
        "[exact 95%] of the per-seed difference; Holm's correction over these tests; a "
        "verdict needs Holm p < 0.05.\n\n"
     << "| task | effect | shift [95%]; n | Holm p | verdict | what would overturn it |\n"
        "|---|---|---|---|---|---|\n"
     << rows.str() << "\n";
}

void write_grid_effects(std::ostringstream& md, const Study& study, const std::string& task) {
  bool heading = false;
  for (const GridEffects& g : study.grids) {
    if (g.task != task || g.heads.empty() || g.head_dims.empty()) continue;
    if (!heading)
      md << "### Count or size? (head_grid)\n\n"
         << "Every H with every head size d at the same residual width; each cell is the "
            "model at its own best rate: solved k/n, the final "
         << (g.by_loss ? "loss" : "accuracy")
         << " (mean [bootstrap 95%]) and the rate. The tests compare the corners per seed "
            "(m = the final "
         << (g.by_loss ? "loss: a negative shift is better" : "accuracy, in points")
         << "), over the " << g.seeds << " seeds every corner has.\n\n";
    heading = true;
    md << "**" << g.steps << " steps** (" << g.arm << "):\n\n";
    write_grid_table(md, g);
    write_effects_table(md, g);
    md << "\n";
  }
}

void write_circuits(std::ostringstream& md, const Study& study, const std::string& task) {
  const auto task_it = study.selected.find(task);
  if (task_it == study.selected.end()) return;
  std::ostringstream rows;
  for (const auto& [arm, models] : task_it->second)
    for (const Selected& s : models)
      if (s.circuit.runs > 0) rows << circuit_row(s);
  if (rows.str().empty()) return;
  md << "### Circuits into layer 0\n\n"
     << (task == "char_lm"
             ? "Corruption: Olsson's probe against the same rows with another first half (the "
               "context changes, the repeated half does not). "
             : "Corruption: the query's key and another key swap places in the context, so "
               "the answer changes and layer 0's outputs at those pairs differ (the query "
               "corruption above cannot move layer 0 at earlier positions). ")
     << "Per run at the best rate (runs whose clean and corrupted metrics differ by at least "
     << fmt("%g", kPatchingMinGap)
     << "), normalised patching effects (1 = restores the clean run): the strongest layer-0 "
        "head's z; the receiver, the last layer's strongest head; the strongest single path "
        "from a layer-0 head into the receiver through its q, k or v (path patching: "
        "K-composition is the induction circuit's path); how many layer-0 heads carry 90% "
        "of the k paths and how many last-layer heads 90% of the last layer's effect. Means "
        "[bootstrap 95%] over runs; exploratory.\n\n"
     << "| model | runs | layer-0 head | receiver | path via q | via k | via v | layer-0 heads "
        "for 90% of k | last-layer heads for 90% |\n|---|---|---|---|---|---|---|---|---|\n"
     << rows.str() << "\n";
}

}  // namespace heads_compare
