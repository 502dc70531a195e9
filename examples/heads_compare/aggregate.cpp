// heads_compare's statistics over runs (see aggregate.hpp).
#include "aggregate.hpp"

#include "effects.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace heads_compare {

namespace an = statistics;
namespace hg = headgrad;

namespace {

constexpr std::int64_t kBaselineBatches = 32;

bool same_model(const ModelShape& a, const ModelShape& b) {
  return a.arm == b.arm && a.layers == b.layers && a.heads == b.heads && a.head_dim == b.head_dim &&
         a.d_model == b.d_model;
}

void fill_cell(Cell& cell) {
  std::vector<double> loss, acc, vloss, vacc, solve_times, phase_times;
  std::vector<bool> solve_events, phase_events;
  const double budget = static_cast<double>(cell.task.steps);
  for (const RunResult* r : cell.runs) {
    loss.push_back(r->final_test_loss);
    acc.push_back(r->final_test_acc);
    vloss.push_back(r->final_val_loss);
    vacc.push_back(r->final_val_acc);
    cell.solved += r->final_test_acc >= cell.task.threshold;
    solve_times.push_back(r->solved_step ? static_cast<double>(*r->solved_step) : budget);
    solve_events.push_back(r->solved_step.has_value());
    phase_times.push_back(r->phase_step ? static_cast<double>(*r->phase_step) : budget);
    phase_events.push_back(r->phase_step.has_value());
    cell.phase_changes += r->phase_step.has_value();
    cell.params = r->params;
  }
  const auto n = static_cast<std::int64_t>(cell.runs.size());
  cell.success = an::wilson_interval(cell.solved, n);
  // Percentile bootstrap: inside the runs' own range, so inside [0, 1] and [0, inf) by
  // construction (a t interval of accuracies near 100% runs past it).
  cell.final_loss = an::bootstrap_mean_interval(loss);
  cell.final_acc = an::bootstrap_mean_interval(acc);
  cell.val_loss = an::mean_interval(vloss);
  cell.val_acc = an::mean_interval(vacc);
  cell.time_to_solve = an::kaplan_meier(solve_times, solve_events);
  cell.median_solve = an::km_median(cell.time_to_solve);
  cell.median_phase = an::km_median(an::kaplan_meier(phase_times, phase_events));
}

// True when cell a's selection-split result is better than b's.
bool better(const Cell& a, const Cell& b, bool regression) {
  const double la = a.val_loss.estimate, lb = b.val_loss.estimate;
  if (regression) return la < lb;
  const double aa = a.val_acc.estimate, ab = b.val_acc.estimate;
  if (std::abs(aa - ab) > 1e-9) return aa > ab;
  return la < lb;
}

// Pairs two cells' runs by seed; the values of `get` for the seeds both have.
template <typename Get>
std::pair<std::vector<double>, std::vector<double>> paired(const Cell& a, const Cell& b, Get get) {
  std::vector<double> x, y;
  for (const RunResult* ra : a.runs)
    for (const RunResult* rb : b.runs)
      if (ra->spec.seed == rb->spec.seed) {
        x.push_back(get(*ra));
        y.push_back(get(*rb));
      }
  return {x, y};
}

// Retained gain r_k of a curve (see aggregate.hpp); empty when the run learnt too little.
std::vector<double> retained_gain(const std::vector<double>& acc, const std::vector<double>& loss,
                                  bool regression, double base) {
  const std::vector<double>& v = regression ? loss : acc;
  if (v.empty()) return {};
  auto metric = [&](std::size_t k) { return regression ? -v[k] : v[k]; };
  const double m_base = regression ? -base : base;
  const double gain = metric(0) - m_base;
  const double scale = regression ? 0.1 * base : 0.1;
  if (!(gain >= scale)) return {};
  std::vector<double> r;
  for (std::size_t k = 0; k < v.size(); ++k) r.push_back((metric(k) - m_base) / gain);
  return r;
}

// Mean of r_k over k = 1 .. size - 2 (the curve between no head and every head removed).
double order_gain(const std::vector<double>& r) {
  if (r.size() < 3) return 0;
  double sum = 0;
  for (std::size_t k = 1; k + 1 < r.size(); ++k) sum += r[k];
  return sum / static_cast<double>(r.size() - 2);
}

void fill_pruning_statistics(Selected& s, bool regression, double base) {
  std::vector<double> prunable, importance, random, greedy;
  for (const RunResult* r : s.cell->runs) {
    const auto imp =
        retained_gain(r->by_importance.accuracy, r->by_importance.loss, regression, base);
    const auto rnd = retained_gain(r->random.mean_accuracy, r->random.mean_loss, regression, base);
    const auto grd = retained_gain(r->greedy.accuracy, r->greedy.loss, regression, base);
    if (imp.size() < 3 || rnd.size() != imp.size() || grd.size() != imp.size()) continue;
    std::size_t k = 0;
    while (k + 1 < imp.size() && imp[k + 1] >= 0.9) ++k;
    prunable.push_back(static_cast<double>(k) / static_cast<double>(imp.size() - 1));
    importance.push_back(order_gain(imp));
    random.push_back(order_gain(rnd));
    greedy.push_back(order_gain(grd));
  }
  s.prune_runs = static_cast<std::int64_t>(prunable.size());
  if (prunable.empty()) return;
  s.prunable_fraction = an::bootstrap_mean_interval(prunable);
  s.importance_vs_random = an::paired_compare(importance, random);
  s.greedy_vs_importance = an::paired_compare(greedy, importance);
}

void fill_pruning(Selected& s) {
  const Cell& c = *s.cell;
  if (c.runs.empty()) return;
  const std::size_t points = c.runs.front()->by_importance.accuracy.size();
  auto average = [&](auto get) {
    std::vector<double> out(points, 0.0);
    for (const RunResult* r : c.runs) {
      const std::vector<double>& v = get(*r);
      for (std::size_t k = 0; k < points && k < v.size(); ++k) out[k] += v[k];
    }
    for (double& v : out) v /= static_cast<double>(c.runs.size());
    return out;
  };
  s.prune_importance = average(
      [](const RunResult& r) -> const std::vector<double>& { return r.by_importance.accuracy; });
  s.prune_greedy =
      average([](const RunResult& r) -> const std::vector<double>& { return r.greedy.accuracy; });
  s.prune_random = average(
      [](const RunResult& r) -> const std::vector<double>& { return r.random.mean_accuracy; });
  s.prune_random_low = average(
      [](const RunResult& r) -> const std::vector<double>& { return r.random.low_accuracy; });
  s.prune_random_high = average(
      [](const RunResult& r) -> const std::vector<double>& { return r.random.high_accuracy; });
  s.prune_importance_loss = average(
      [](const RunResult& r) -> const std::vector<double>& { return r.by_importance.loss; });
  s.prune_greedy_loss =
      average([](const RunResult& r) -> const std::vector<double>& { return r.greedy.loss; });
  s.prune_random_loss =
      average([](const RunResult& r) -> const std::vector<double>& { return r.random.mean_loss; });
  s.prune_random_low_loss =
      average([](const RunResult& r) -> const std::vector<double>& { return r.random.low_loss; });
  s.prune_random_high_loss =
      average([](const RunResult& r) -> const std::vector<double>& { return r.random.high_loss; });
  // Every head of the model has the same parameter count (one layer shape throughout).
  const RunResult& r = *c.runs.front();
  double per_head = 0;
  if (!r.head_params.empty()) per_head = static_cast<double>(r.head_params.front());
  for (std::size_t k = 0; k < points; ++k)
    s.prune_fraction.push_back(r.attention_params > 0 ? per_head * static_cast<double>(k) /
                                                            static_cast<double>(r.attention_params)
                                                      : 0.0);
}

// m_base of the pruning statistics: the chance baseline's accuracy, or predict_zero's loss.
// Selected's patching fields from the best lr's runs that measured it.
void fill_patching(Selected& s) {
  std::vector<std::vector<double>> sum;
  for (const RunResult* r : s.cell->runs) {
    if (r->patching.empty() || !(r->patching_clean - r->patching_corrupted >= kPatchingMinGap))
      continue;
    const auto restoring = static_cast<double>(r->restoring_heads);
    s.restoring_min = s.patching_runs == 0 ? restoring : std::min(s.restoring_min, restoring);
    s.restoring_max = s.patching_runs == 0 ? restoring : std::max(s.restoring_max, restoring);
    s.restoring_mean += restoring;
    s.restored_mean += r->restoring_fraction;
    s.restoring_share[r->spec.seed] =
        restoring / static_cast<double>(r->spec.model.heads * r->spec.model.layers);
    ++s.patching_runs;
    if (sum.empty()) sum.assign(r->patching.size(), std::vector<double>(r->patching[0].size(), 0));
    for (std::size_t l = 0; l < r->patching.size(); ++l) {
      std::vector<double> ranked = r->patching[l];
      std::sort(ranked.begin(), ranked.end(), std::greater<>());
      for (std::size_t k = 0; k < ranked.size() && k < sum[l].size(); ++k) sum[l][k] += ranked[k];
    }
  }
  if (s.patching_runs == 0) return;
  const auto n = static_cast<double>(s.patching_runs);
  s.restoring_mean /= n;
  s.restored_mean /= n;
  for (auto& row : sum)
    for (double& v : row) v /= n;
  s.patching_ranked = std::move(sum);
}

// char_lm's base is the bigram model's exact loss: with every head removed a GPT sees the
// current character alone, so at best it is a bigram model.
double pruning_base(const Study& study, const std::string& task, bool regression) {
  for (const TaskBaselines& t : study.baselines)
    if (t.task == task)
      for (const auto& b : t.baselines) {
        if (task == "char_lm" && b.name == "bigram") return b.exact_loss;
        if (b.name == (regression ? "predict_zero" : "chance"))
          return regression ? b.loss : b.accuracy;
      }
  return regression ? 1.0 : 0.0;
}

bool same_shape(const ModelShape& a, const ModelShape& b) {
  return a.heads == b.heads && a.head_dim == b.head_dim && a.d_model == b.d_model &&
         a.layers == b.layers;
}

// Whether `pairs` already holds this model at this rate: the head_grid's diagonal is the
// fixed_width arm's runs, listed once.
bool listed(const std::vector<BudgetPair>& pairs, const Cell& base) {
  return std::any_of(pairs.begin(), pairs.end(), [&](const BudgetPair& p) {
    return same_shape(p.base->model, base.model) && p.base->lr == base.lr;
  });
}

// Study::budgets (each model once), and each base model's budget_sensitive flag.
void fill_budgets(const StudyConfig& config, Study& study) {
  for (auto& [task, arms] : study.selected)
    for (const char* base_arm : {"fixed_width", "head_grid"}) {
      const auto longer = arms.find(long_budget_arm(config, base_arm)), base = arms.find(base_arm);
      if (longer == arms.end() || base == arms.end()) continue;
      for (const Selected& l : longer->second)
        for (Selected& b : base->second) {
          if (!same_shape(l.cell->model, b.cell->model)) continue;
          for (const Cell* cell : b.grid)
            if (cell->lr == l.cell->lr) {
              BudgetPair pair{cell, l.cell, l.cell->success.estimate - cell->success.estimate,
                              false};
              pair.sensitive = std::abs(pair.change) > kBudgetSensitive;
              b.budget_sensitive = pair.sensitive && cell == b.cell;
              auto& pairs = study.budgets[task];
              if (!listed(pairs, *cell)) pairs.push_back(pair);
            }
        }
    }
}

}  // namespace

std::vector<RateChoice> choose_rates(const std::vector<RunResult>& results) {
  struct Sums {
    double acc = 0, loss = 0;
    int n = 0;
  };
  struct Model {
    RateChoice choice;
    std::map<double, Sums> by_lr;
  };
  std::vector<Model> models;  // in the order they first appear
  std::map<std::string, bool> by_loss;
  for (const RunResult& r : results) {
    if (r.spec.task.name.empty()) continue;  // left out (--cached-only)
    auto it = std::find_if(models.begin(), models.end(), [&](const Model& m) {
      return m.choice.task.name == r.spec.task.name && m.choice.task.steps == r.spec.task.steps &&
             same_model(m.choice.model, r.spec.model);
    });
    if (it == models.end()) {
      models.push_back({{r.spec.task, r.spec.model}, {}});
      it = models.end() - 1;
    }
    Sums& s = it->by_lr[r.spec.lr];
    s.acc += r.final_val_acc;
    s.loss += r.final_val_loss;
    ++s.n;
    if (!by_loss.count(r.spec.task.name))
      by_loss[r.spec.task.name] = scored_by_loss(*make_run_task(r.spec));
  }
  std::vector<RateChoice> choices;
  for (Model& m : models) {
    const bool loss_only = by_loss[m.choice.task.name];
    const Sums* best = nullptr;
    for (const auto& [lr, s] : m.by_lr) {
      const double acc = s.acc / s.n, loss = s.loss / s.n;
      const bool wins =
          !best || (loss_only                                    ? loss < best->loss / best->n
                    : std::abs(acc - best->acc / best->n) > 1e-9 ? acc > best->acc / best->n
                                                                 : loss < best->loss / best->n);
      if (wins) best = &s, m.choice.best = lr;
    }
    m.choice.lowest = m.by_lr.begin()->first;
    m.choice.highest = m.by_lr.rbegin()->first;
    choices.push_back(m.choice);
  }
  return choices;
}

namespace {

// The cells of `results`, in plan order: results come in (task, model, lr, seed) order.
void group_cells(const std::vector<RunResult>& results, Study& study) {
  for (const RunResult& r : results) {
    if (study.cells.empty() || study.cells.back().task.name != r.spec.task.name ||
        !same_model(study.cells.back().model, r.spec.model) || study.cells.back().lr != r.spec.lr) {
      Cell cell;
      cell.task = r.spec.task;
      cell.model = r.spec.model;
      cell.lr = r.spec.lr;
      study.cells.push_back(std::move(cell));
    }
    study.cells.back().runs.push_back(&r);
  }
  for (Cell& c : study.cells) fill_cell(c);
}

// Each task's scoring (loss or accuracy) and its baselines on the test split.
void add_task_baselines(const StudyConfig& config, Study& study) {
  for (const TaskSetting& task : config.tasks) {
    hg::train::TaskOptions options;
    options.length = task.length;
    options.context = task.context;
    options.dim = task.dim;
    options.test_fraction = 0.15;
    options.corpus = task.corpus;
    const auto t = hg::train::make_task(task.name, options);
    study.is_regression[task.name] = scored_by_loss(*t);
    study.baselines.push_back(
        {task.name, t->baselines(hg::train::Split::test, kBaselineBatches, config.batch_size),
         kBaselineBatches * config.batch_size});
  }
}

// Every model's best rate among its consecutive lr cells [i, j), with its pruning,
// patching and circuit summaries, filed under its task and arm.
void select_models(Study& study) {
  for (std::size_t i = 0; i < study.cells.size();) {
    std::size_t j = i;
    while (j < study.cells.size() && study.cells[j].task.name == study.cells[i].task.name &&
           same_model(study.cells[j].model, study.cells[i].model))
      ++j;
    Selected s;
    const bool regression = study.is_regression[study.cells[i].task.name];
    for (std::size_t k = i; k < j; ++k) {
      s.grid.push_back(&study.cells[k]);
      if (!s.cell || better(study.cells[k], *s.cell, regression)) s.cell = &study.cells[k];
    }
    std::sort(s.grid.begin(), s.grid.end(),
              [](const Cell* a, const Cell* b) { return a->lr < b->lr; });
    s.rate_at_edge = s.grid.size() > 1 && (s.cell == s.grid.front() || s.cell == s.grid.back());
    fill_pruning(s);
    fill_patching(s);
    s.circuit = summarise_circuits(*s.cell);
    fill_pruning_statistics(s, regression,
                            pruning_base(study, study.cells[i].task.name, regression));
    study.selected[s.cell->task.name][s.cell->model.arm].push_back(s);
    i = j;
  }
}

// Model s against its arm's reference (the arm's first model), paired by seed: final
// loss, final accuracy and the share of the effect that restoring heads brings back.
void compare_with_reference(Selected& s, const Selected& reference_model) {
  const Cell* reference = reference_model.cell;
  s.reference = reference;
  auto [loss, ref_loss] =
      paired(*s.cell, *reference, [](const RunResult& r) { return r.final_test_loss; });
  s.loss_vs_reference = an::paired_compare(loss, ref_loss);
  auto [acc, ref_acc] =
      paired(*s.cell, *reference, [](const RunResult& r) { return r.final_test_acc; });
  s.acc_vs_reference = an::paired_compare(acc, ref_acc);
  std::vector<double> share, ref_share;
  for (const auto& [seed, v] : s.restoring_share) {
    const auto it = reference_model.restoring_share.find(seed);
    if (it == reference_model.restoring_share.end()) continue;
    share.push_back(v);
    ref_share.push_back(it->second);
  }
  if (!share.empty()) s.share_vs_reference = an::paired_compare(share, ref_share);
}

}  // namespace

Study aggregate(const StudyConfig& config, const std::vector<RunResult>& results) {
  Study study;
  group_cells(results, study);
  add_task_baselines(config, study);
  select_models(study);
  for (auto& [task, arms] : study.selected)
    for (auto& [arm, models] : arms)
      for (std::size_t m = 1; m < models.size(); ++m) compare_with_reference(models[m], models[0]);
  fill_budgets(config, study);
  study.grids = grid_effects(config, study);
  adjust_families(study);
  return study;
}

}  // namespace heads_compare
