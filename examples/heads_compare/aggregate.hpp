// heads_compare's statistics over runs (aggregate.cpp): the cells of the H x LR grid, each
// model's learning rate chosen on the selection split, the per-cell numbers with their
// intervals at that rate, paired per-seed comparisons against H = 1 (or the arm's first
// model), and the tasks' baselines.
//
// Definitions (every interval is 95%):
//   solved        a run whose report-split accuracy at the end is >= the task's threshold;
//                 success rate with a Wilson score interval
//   time to solve the first evaluation step at >= threshold on the report split;
//                 Kaplan-Meier over seeds, a run that never gets there censored at its
//                 step budget; median with the interval where the Greenwood band crosses 0.5
//   final loss,   mean over seeds with a Student t interval
//   final acc.
//   best lr       per (task, arm, model): the learning rate with the highest mean
//                 selection-split accuracy, ties (within 1e-9) to the lower mean
//                 selection-split loss; for regression tasks the lowest mean loss
//   paired        per seed at each model's own best lr: model minus reference (H = 1 in
//                 fixed_width, fixed_head_dim and one_layer; the smallest head_dim in
//                 head_size) in final report-split loss and accuracy; percentile bootstrap
//                 interval of the mean difference (10,000 resamples, fixed seed) and an
//                 exact two-sided sign test
//   pruning       per run at the best lr, on the report split, the retained gain after
//   statistics    removing k heads: r_k = (m_k - m_base) / (m_0 - m_base), m = accuracy
//                 and m_base the chance baseline's (sequence tasks), m = -loss and m_base
//                 = -predict_zero's loss (regression); runs with m_0 - m_base below a
//                 tenth of the scale (0.1 accuracy, or 0.1 of the baseline loss) learnt
//                 nothing to prune and are left out. prunable = the largest k with
//                 r_j >= 0.9 for every j <= k in importance order, as a fraction of the
//                 heads (t interval over runs); order gain = the mean of r_k over
//                 k = 1 .. heads - 1 (the area between the ends), compared per run between
//                 importance and the mean random order, and between greedy and importance
//                 (paired: bootstrap interval, sign test)
#pragma once

#include <map>
#include <string>
#include <vector>

#include "headgrad/train/tasks.hpp"
#include "statistics.hpp"
#include "study.hpp"

namespace heads_compare {

using statistics::Interval;

// The seeds of one (task, arm, model, lr).
struct Cell {
  TaskSetting task;
  ModelShape model;
  double lr = 0;
  std::vector<const RunResult*> runs;  // in seed order
  std::int64_t solved = 0;
  Interval success, final_loss, final_acc;  // report split
  Interval val_loss, val_acc;               // selection split (means only are used)
  statistics::SurvivalCurve time_to_solve;
  Interval median_solve;
  std::int64_t phase_changes = 0;  // runs with an induction head (score >= 0.4)
  Interval median_phase;           // Kaplan-Meier median of the phase-change step
  std::int64_t params = 0;
};

// A model's layer-0 circuit over its best-rate runs (study.hpp, Circuit), from the runs
// that recorded one with a clean - corrupted gap of at least kPatchingMinGap. Per run, the
// receiver is the last layer's head with the largest effect under the circuit's
// corruption; then
//   layer0        the largest layer-0 head's effect (z patching)
//   receiver      the receiver's own effect
//   path_q/k/v    the largest path effect from one layer-0 head into the receiver
//   senders       the fewest layer-0 heads whose k paths into the receiver sum to >= 90%
//                 of the positive total (K-composition spread over how many heads)
//   receivers     the fewest last-layer heads whose effects sum to >= 90% of the last
//                 layer's positive total
// means over runs with a percentile bootstrap interval.
struct CircuitSummary {
  std::int64_t runs = 0;
  statistics::Interval layer0{}, receiver{}, path_q{}, path_k{}, path_v{}, senders{}, receivers{};
};
// One model of an arm at its selected learning rate.
struct Selected {
  const Cell* cell = nullptr;     // the best lr's cell
  std::vector<const Cell*> grid;  // every lr, ascending
  // Against the arm's reference model (null for the reference itself).
  const Cell* reference = nullptr;
  statistics::PairedComparison loss_vs_reference, acc_vs_reference;
  // Pruning at the best lr, averaged over seeds: accuracy (report split) after removing
  // k heads, k = 0..heads, by importance, greedy and random (mean of the per-run means;
  // the band is the mean of the per-run percentile bands).
  std::vector<double> prune_importance, prune_greedy, prune_random, prune_random_low,
      prune_random_high;
  // The same curves in report loss (the pruning plot of a regression task).
  std::vector<double> prune_importance_loss, prune_greedy_loss, prune_random_loss,
      prune_random_low_loss, prune_random_high_loss;
  std::vector<double> prune_fraction;  // fraction of attention parameters removed at k
  // Pruning statistics (see above); prune_runs = runs that learnt enough to count.
  std::int64_t prune_runs = 0;
  Interval prunable_fraction{0, 0, 0};
  // Activation patching at the best lr (recall tasks, RunResult::patching): the runs that
  // have it with a clean - corrupted gap of at least kPatchingMinGap; the fewest heads restoring >=
  // 90% (mean over those runs, lowest, highest) and the share they restore (mean); each layer's
  // heads ranked by their effect, strongest first, averaged over the runs ([layer][rank]: heads
  // have no identity across seeds, so the map is aligned by rank).
  std::int64_t patching_runs = 0;
  double restoring_mean = 0, restoring_min = 0, restoring_max = 0, restored_mean = 0;
  std::vector<std::vector<double>> patching_ranked;
  // How distributed the mechanism is against the arm's reference: per seed that both
  // counted, the share of the model's heads needed to restore 90% (restoring heads / all
  // heads), this model minus the reference (paired: bootstrap interval, sign test).
  std::map<std::uint64_t, double> restoring_share;  // seed -> share, the runs counted
  statistics::PairedComparison share_vs_reference{};
  statistics::PairedComparison importance_vs_random{}, greedy_vs_importance{};
  // The best rate is the lowest or highest of the rates this model tried (after the
  // follow-up stage's extension): the optimum may lie beyond.
  bool rate_at_edge = false;
  // fixed_width models trained at the long budget too (Study::budgets): the success rate
  // changes by more than kBudgetSensitive between the budgets.
  bool budget_sensitive = false;
  // The layer-0 circuit over the best rate's runs (models with two or more layers).
  CircuitSummary circuit{};
};

// A success-rate change between the two budgets that flags a cell as budget-sensitive.
inline constexpr double kBudgetSensitive = 0.30;

// A fixed_width model at the study's budget and at the long budget (StudyConfig::long_budget),
// both at the rate the long runs used (the model's best).
struct BudgetPair {
  const Cell* base = nullptr;    // the task's steps
  const Cell* longer = nullptr;  // long_budget x the steps
  double change = 0;             // success rate, longer - base
  bool sensitive = false;        // |change| > kBudgetSensitive
};

struct TaskBaselines {
  std::string task;
  std::vector<headgrad::train::Baseline> baselines;  // report split
  std::int64_t examples = 0;  // report-split examples the sampled values are means over
};

// Count or size (per task, per budget of the head_grid arm; the primary metric is the final
// report-split accuracy, or the loss for tasks scored by it; each model at its best rate;
// only the seeds every corner cell has):
//   count        per seed, the mean over d of m(H_max, d) - m(H_min, d): more heads at the
//                same head size
//   size         per seed, the mean over H of m(H, d_max) - m(H, d_min): larger heads at
//                the same count
//   interaction  per seed, [m(H_max, d_max) - m(H_min, d_max)] - [m(H_max, d_min) -
//                m(H_min, d_min)]: whether the count's effect depends on the size
// each tested against 0 with the exact sign test and given as a Hodges-Lehmann shift with
// its exact signed-rank interval (analysis/stats.hpp).
//
// Families (Holm within each): confirmatory = the three count-or-size tests of every task
// at the task's own budget (the question the study is built to answer, stated before the
// runs); exploratory = every other paired test in the report (against the reference model,
// pruning orders, mechanism shares, the grid at the long budget).
struct GridEffects {
  std::string task, arm;  // arm: head_grid, or its long-budget arm
  std::int64_t steps = 0;
  bool by_loss = false;                          // the metric is the loss (lower is better)
  std::vector<std::int64_t> heads, head_dims;    // ascending
  std::vector<std::vector<const Selected*>> at;  // [H index][d index]; null when missing
  std::int64_t seeds = 0;                        // seeds every corner cell has
  statistics::PairedComparison count{}, size{}, interaction{};
  bool confirmatory = false;
};

struct Study {
  std::vector<Cell> cells;  // task, arm, model, lr order
  // [task name][arm] -> models in plan order
  std::map<std::string, std::map<std::string, std::vector<Selected>>> selected;
  std::vector<TaskBaselines> baselines;
  // task name -> scored by its loss (regression tasks and char_lm: scored_by_loss)
  std::map<std::string, bool> is_regression;
  // task name -> its fixed_width models at both budgets (empty without long-budget runs)
  std::map<std::string, std::vector<BudgetPair>> budgets;
  // The head_grid arm's count-or-size effects (effects.hpp), Holm-adjusted with the rest.
  std::vector<GridEffects> grids;
};

Study aggregate(const StudyConfig& config, const std::vector<RunResult>& results);

}  // namespace heads_compare
