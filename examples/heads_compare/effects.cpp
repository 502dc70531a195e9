// The head_grid arm's count-or-size effects, the circuits into layer 0 and the report's
// families of tests (see effects.hpp and aggregate.hpp for the definitions).
#include "effects.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <set>

namespace heads_compare {

namespace an = statistics;

namespace {

// The fewest of `values` (largest first) whose sum reaches `fraction` of the positive
// total; 0 when nothing is positive.
double fewest_reaching(std::vector<double> values, double fraction) {
  double total = 0;
  for (double v : values)
    if (v > 0) total += v;
  if (!(total > 0)) return 0;
  std::sort(values.begin(), values.end(), std::greater<>());
  double sum = 0;
  for (std::size_t k = 0; k < values.size(); ++k) {
    sum += values[k];
    if (sum >= fraction * total) return static_cast<double>(k + 1);
  }
  return static_cast<double>(values.size());
}

an::Interval bootstrap(const std::vector<double>& x) {
  return an::bootstrap_mean_interval(x, 10000, 0);
}

// One run's circuit numbers (CircuitSummary's fields, in its order); empty when the run
// has none to count.
std::vector<double> circuit_numbers(const RunResult& r) {
  const Circuit& c = r.circuit;
  if (c.heads.size() < 2 || c.paths.size() != 3 || !(c.clean - c.corrupted >= kPatchingMinGap))
    return {};
  const std::vector<double>& last = c.heads.back();
  const std::size_t heads = last.size();
  const auto receiver =
      static_cast<std::size_t>(std::max_element(last.begin(), last.end()) - last.begin());
  // Receivers are numbered over layers 1 .. L-1: the last layer's come last.
  const std::size_t row = c.paths[1].size() - heads + receiver;
  auto strongest_from_layer0 = [&](std::size_t via) {
    const std::vector<double>& senders = c.paths[via][row];
    return *std::max_element(senders.begin(), senders.begin() + static_cast<long>(heads));
  };
  const std::vector<double> k_paths(c.paths[1][row].begin(),
                                    c.paths[1][row].begin() + static_cast<long>(heads));
  return {*std::max_element(c.heads[0].begin(), c.heads[0].end()),
          last[receiver],
          strongest_from_layer0(0),
          strongest_from_layer0(1),
          strongest_from_layer0(2),
          fewest_reaching(k_paths, 0.9),
          fewest_reaching(last, 0.9)};
}

// The primary metric of a run: accuracy, or loss for tasks scored by it.
double metric_of(const RunResult& r, bool by_loss) {
  return by_loss ? r.final_test_loss : r.final_test_acc;
}

// seed -> metric of a selected model's best-rate runs.
std::map<std::uint64_t, double> by_seed(const Selected& s, bool by_loss) {
  std::map<std::uint64_t, double> m;
  for (const RunResult* r : s.cell->runs) m[r->spec.seed] = metric_of(*r, by_loss);
  return m;
}

// The grid of one (task, arm): its models placed by H and d.
GridEffects place_models(const std::string& task, const std::string& arm,
                         const std::vector<Selected>& models, bool by_loss) {
  GridEffects g;
  g.task = task;
  g.arm = arm;
  g.by_loss = by_loss;
  std::set<std::int64_t> heads, dims;
  for (const Selected& s : models) {
    heads.insert(s.cell->model.heads);
    dims.insert(s.cell->model.head_dim);
    g.steps = s.cell->task.steps;
  }
  g.heads.assign(heads.begin(), heads.end());
  g.head_dims.assign(dims.begin(), dims.end());
  g.at.assign(g.heads.size(), std::vector<const Selected*>(g.head_dims.size(), nullptr));
  for (const Selected& s : models) {
    const auto h = std::find(g.heads.begin(), g.heads.end(), s.cell->model.heads) - g.heads.begin();
    const auto d = std::find(g.head_dims.begin(), g.head_dims.end(), s.cell->model.head_dim) -
                   g.head_dims.begin();
    g.at[static_cast<std::size_t>(h)][static_cast<std::size_t>(d)] = &s;
  }
  return g;
}

// The three tests of a complete grid (every cell present), over the seeds all cells have.
void test_effects(GridEffects& g) {
  std::vector<std::vector<std::map<std::uint64_t, double>>> m(g.heads.size());
  std::set<std::uint64_t> seeds;
  bool first = true;
  for (std::size_t h = 0; h < g.heads.size(); ++h)
    for (std::size_t d = 0; d < g.head_dims.size(); ++d) {
      if (!g.at[h][d]) return;
      m[h].push_back(by_seed(*g.at[h][d], g.by_loss));
      std::set<std::uint64_t> here;
      for (const auto& [seed, v] : m[h][d])
        if (first || seeds.count(seed)) here.insert(seed);
      seeds = here;
      first = false;
    }
  const std::size_t hn = g.heads.size() - 1, dn = g.head_dims.size() - 1;
  std::vector<double> many, one, large, small, count_at_large, count_at_small;
  for (const std::uint64_t s : seeds) {
    double a = 0, b = 0, c = 0, e = 0;
    for (std::size_t d = 0; d <= dn; ++d) a += m[hn][d].at(s), b += m[0][d].at(s);
    for (std::size_t h = 0; h <= hn; ++h) c += m[h][dn].at(s), e += m[h][0].at(s);
    many.push_back(a / static_cast<double>(dn + 1));
    one.push_back(b / static_cast<double>(dn + 1));
    large.push_back(c / static_cast<double>(hn + 1));
    small.push_back(e / static_cast<double>(hn + 1));
    count_at_large.push_back(m[hn][dn].at(s) - m[0][dn].at(s));
    count_at_small.push_back(m[hn][0].at(s) - m[0][0].at(s));
  }
  g.seeds = static_cast<std::int64_t>(seeds.size());
  if (seeds.empty() || hn == 0 || dn == 0) return;
  g.count = an::paired_compare(many, one);
  g.size = an::paired_compare(large, small);
  g.interaction = an::paired_compare(count_at_large, count_at_small);
}

void adjust(const std::vector<an::PairedComparison*>& family) {
  std::vector<double> p;
  for (const an::PairedComparison* c : family) p.push_back(c->sign_test_p);
  const std::vector<double> adjusted = an::holm_adjust(p);
  for (std::size_t i = 0; i < family.size(); ++i) family[i]->holm_p = adjusted[i];
}

}  // namespace

std::string grid_verdict(const std::string& effect, const statistics::PairedComparison& p,
                         bool by_loss) {
  if (p.n == 0) return "no pairs";
  if (!(p.holm_p < 0.05)) {
    char text[64];
    std::snprintf(text, sizeof text, "not shown (Holm p %.3g)", p.holm_p);
    return text;
  }
  const bool better = by_loss ? p.shift.shift.estimate < 0 : p.shift.shift.estimate > 0;
  if (effect == "count") return better ? "more heads better" : "more heads worse";
  if (effect == "size") return better ? "larger heads better" : "larger heads worse";
  return better ? "more heads gain more with larger heads"
                : "more heads gain less with larger heads";
}

LanguageScores language_scores(const Cell& cell) {
  std::vector<double> bits, icl, probe;
  for (const RunResult* r : cell.runs) {
    const bool sampled = r->final_point.step > 0;
    bits.push_back((sampled ? r->final_point.loss : r->final_test_loss) / std::log(2.0));
    if (r->curve.empty()) continue;
    const EvalPoint& last = sampled ? r->final_point : r->curve.back();
    if (std::isfinite(last.icl)) icl.push_back(last.icl);
    double best = 0;
    for (const auto& layer : last.induction)
      for (double v : layer)
        if (std::isfinite(v)) best = std::max(best, v);
    probe.push_back(best);
  }
  const statistics::Interval none{NAN, NAN, NAN};
  LanguageScores out;
  out.runs = static_cast<std::int64_t>(probe.size());
  out.bits = bits.empty() ? none : statistics::mean_interval(bits);
  out.icl = icl.empty() ? none : statistics::mean_interval(icl);
  out.probe = probe.empty() ? none : statistics::bootstrap_mean_interval(probe);
  return out;
}

CircuitSummary summarise_circuits(const Cell& cell) {
  CircuitSummary s;
  std::vector<std::vector<double>> columns(7);
  for (const RunResult* r : cell.runs) {
    const std::vector<double> v = circuit_numbers(*r);
    if (v.empty()) continue;
    ++s.runs;
    for (std::size_t i = 0; i < v.size(); ++i) columns[i].push_back(v[i]);
  }
  if (s.runs == 0) return s;
  an::Interval* fields[] = {&s.layer0, &s.receiver, &s.path_q,   &s.path_k,
                            &s.path_v, &s.senders,  &s.receivers};
  for (std::size_t i = 0; i < columns.size(); ++i) *fields[i] = bootstrap(columns[i]);
  return s;
}

std::vector<GridEffects> grid_effects(const StudyConfig& config, const Study& study) {
  std::vector<GridEffects> grids;
  for (const auto& [task, arms] : study.selected)
    for (const std::string& arm :
         {std::string("head_grid"), long_budget_arm(config, "head_grid")}) {
      const auto it = arms.find(arm);
      if (it == arms.end() || it->second.empty()) continue;
      const auto loss = study.is_regression.find(task);
      GridEffects g =
          place_models(task, arm, it->second, loss != study.is_regression.end() && loss->second);
      g.confirmatory = arm == "head_grid";
      test_effects(g);
      grids.push_back(std::move(g));
    }
  return grids;
}

void adjust_families(Study& study) {
  std::vector<an::PairedComparison*> confirmatory, exploratory;
  for (GridEffects& g : study.grids)
    for (an::PairedComparison* c : {&g.count, &g.size, &g.interaction})
      if (c->n > 0) (g.confirmatory ? confirmatory : exploratory).push_back(c);
  for (auto& [task, arms] : study.selected)
    for (auto& [arm, models] : arms)
      for (Selected& s : models)
        for (an::PairedComparison* c :
             {&s.loss_vs_reference, &s.acc_vs_reference, &s.share_vs_reference,
              &s.importance_vs_random, &s.greedy_vs_importance})
          if (c->n > 0) exploratory.push_back(c);
  adjust(confirmatory);
  adjust(exploratory);
}

}  // namespace heads_compare
