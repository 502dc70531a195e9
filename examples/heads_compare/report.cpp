// heads_compare's report.md (see report.hpp): the design, the per-task and per-arm results at
// each model's selected learning rate with their 95% intervals, the whole H x lr grid, the
// plots with captions, and how to read them.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>
#include <sstream>

#include "atomic_write.hpp"
#include "effects.hpp"
#include "headgrad/train/trainer.hpp"
#include "plots_common.hpp"
#include "report.hpp"
#include "report_sections.hpp"

namespace heads_compare {

namespace fs = std::filesystem;
using render::fmt;
using render::model_label;

namespace {

bool regression_task(const Study& study, const std::string& task) {
  const auto it = study.is_regression.find(task);
  return it != study.is_regression.end() && it->second;
}

std::string paired_text(const statistics::PairedComparison& p, const char* format, double scale) {
  if (p.n == 0) return "no pairs";
  const Interval& d = p.shift.shift;
  std::string text = interval({scale * d.estimate, scale * d.low, scale * d.high}, format);
  if (p.shift.coverage < 0.95 - 1e-9)
    text += " (exact " + fmt("%.0f", 100 * p.shift.coverage) + "%: too few pairs for 95%)";
  text += "; sign p = " + fmt("%.3g", p.sign_test_p);
  if (!std::isnan(p.holm_p)) text += ", Holm " + fmt("%.3g", p.holm_p);
  return text + "; " + std::to_string(p.n) + " pairs (" + std::to_string(p.positive) + "+ " +
         std::to_string(p.negative) + "- " + std::to_string(p.ties) + "=)";
}

std::string lr_text(double lr) { return fmt("%g", lr); }

// The design's task table.
void write_design_tasks(std::ostringstream& md, const StudyConfig& config, const Study& study) {
  md << "## Design\n\n### Tasks\n\n"
     << "| task | kind | length | context | dim | steps | solved when report accuracy >= |\n"
     << "|---|---|---|---|---|---|---|\n";
  for (const TaskSetting& t : config.tasks)
    md << "| " << t.name << " | "
       << (t.name == "char_lm"              ? "language model"
           : regression_task(study, t.name) ? "regression"
                                            : "sequence")
       << " | " << t.length << " | " << (t.context ? std::to_string(t.context) : "default") << " | "
       << (t.dim ? std::to_string(t.dim) : "-") << " | " << t.steps << " | "
       << fmt("%g", t.threshold) << " |\n";
}

// The arms, and every selected model's shape and size.
void write_design_models(std::ostringstream& md, const StudyConfig& config, const Study& study) {
  md << "\n### Arms and models\n\n"
     << "- `fixed_width`: d_model E fixed, head_dim d = E / H; the parameter count does not "
        "depend on H, only the split into heads changes.\n"
     << "- `fixed_head_dim`: d fixed, E = d * H; the model grows with H.\n"
     << "- `head_size`: E and H fixed, d varies (query/key/value width H * d need not be E).\n"
     << "- `one_layer`: as fixed_width with a single layer (the depth control).\n"
     << "- `head_grid`: E fixed, every H with every d (query/key/value width H * d): the head "
        "count and the head size varied apart; its diagonal d = E / H is fixed_width.\n\n"
     << "| task | arm | model | layers | H | head_dim | d_model | parameters |\n"
     << "|---|---|---|---|---|---|---|---|\n";
  for (const TaskSetting& t : config.tasks) {
    const auto task_it = study.selected.find(t.name);
    if (task_it == study.selected.end()) continue;
    for (const std::string& arm : reported_arms(config)) {
      const auto arm_it = task_it->second.find(arm);
      if (arm_it == task_it->second.end()) continue;
      for (const Selected& s : arm_it->second) {
        const ModelShape& m = s.cell->model;
        md << "| " << t.name << " | " << arm << " | " << model_label(m) << " | " << m.layers
           << " | " << m.heads << " | " << m.head_dim << " | " << m.d_model << " | "
           << s.cell->params << " |\n";
      }
    }
  }
}

// The rates, seeds, batches and splits.
void write_design_training(std::ostringstream& md, const StudyConfig& config) {
  md << "\n### Training and evaluation\n\n"
     << "- Learning-rate grid (AdamW, cosine schedule to 0.1 x, warm-up "
     << fmt("%g", 100 * config.warmup_fraction) << "% of the steps, weight decay "
     << fmt("%g", config.weight_decay) << ", gradient clip " << fmt("%g", config.clip) << "): ";
  for (std::size_t i = 0; i < config.lrs.size(); ++i)
    md << (i ? ", " : "") << lr_text(config.lrs[i]);
  md << ".\n- Seeds: ";
  for (std::size_t i = 0; i < config.seeds.size(); ++i) md << (i ? ", " : "") << config.seeds[i];
  md << " (n = " << config.seeds.size()
     << " per cell). Runs with the same seed see the same batches; with the same (E, d, "
        "layers) they start from identical weights.\n"
     << "- Batch size " << config.batch_size << "; evaluation every " << config.eval_every
     << " steps on " << config.eval_batches << " report batches.\n"
     << "- Splits: every task holds out disjoint parts of its example space. The **selection** "
        "split (validation, "
     << config.select_batches << " batches at the end; importance: " << config.inspect_batches
     << " batches) chooses each model's learning rate and the head importance. The **report** "
        "split (test) gives every number reported here: learning curves, mechanism scores, "
        "final metrics and pruning curves ("
     << config.inspect_batches << " batches, " << config.random_orders
     << " random orders per run).\n\n";
}

// Each task's baselines, exact and sampled.
void write_design_baselines(std::ostringstream& md, const Study& study) {
  md << "### Baselines (report split)\n\n"
     << "Each baseline twice: *exact*, its expectation over every example the task's generator "
        "draws (a property of the task; \"-\" where not derived), and *sampled*, its mean on the "
        "report-split examples counted in the table, which differs from the exact value by "
        "sampling noise only.\n\n"
     << "| task | baseline | loss, exact | accuracy, exact | loss, sampled | accuracy, sampled "
        "| examples | what it is |\n"
     << "|---|---|---|---|---|---|---|---|\n";
  auto percent = [](double v) { return std::isfinite(v) ? fmt("%.1f%%", 100 * v) : "-"; };
  auto nats = [](double v) { return std::isfinite(v) ? fmt("%.4g", v) : "-"; };
  for (const TaskBaselines& tb : study.baselines)
    for (const headgrad::train::Baseline& b : tb.baselines)
      md << "| " << tb.task << " | " << b.name << " | " << nats(b.exact_loss) << " | "
         << percent(b.exact_accuracy) << " | " << nats(b.loss) << " | " << percent(b.accuracy)
         << " | " << tb.examples << " | " << b.description << " |\n";
  md << "\n";
}

void write_design(std::ostringstream& md, const StudyConfig& config, const Study& study) {
  write_design_tasks(md, config, study);
  write_design_models(md, config, study);
  write_design_training(md, config);
  write_design_baselines(md, study);
}

void write_how_to_read(std::ostringstream& md) {
  md << "## How to read this\n\n"
     << "- **Arms.** `fixed_width` changes only how the same width is split into heads, so a "
        "difference there is the split itself, not capacity. `fixed_head_dim` adds capacity "
        "with every head; `head_size` varies the head dimension at a fixed H; `one_layer` "
        "asks whether the effect survives without a second layer (induction heads need two "
        "layers, or a previous-token shortcut).\n"
     << "- **Each model at its own learning rate.** The best rate moves with H and width; "
        "comparing all models at one rate would measure which rate suits which model. Each "
        "model's rate is chosen on the selection split (highest mean accuracy, ties to the "
        "lower loss; lowest loss for regression) and every reported number comes from the "
        "separate report split, so the choice does not inflate the numbers. The grid "
        "sections show every rate.\n"
     << "- **Baselines.** `chance` is uniform guessing over the answer tokens. "
        "`key_agnostic` (recall tasks) predicts from the prompt's values without doing the "
        "lookup; a model at that accuracy has learnt which tokens are values but not which "
        "one the query asks for. `predict_zero` (regression) is the loss of always "
        "predicting 0. Plots draw baselines as dashed lines, at the exact value where it is "
        "known.\n"
     << "- **Intervals.** All 95%: success k/n with the Wilson interval; final loss and "
        "accuracy with the percentile bootstrap of the mean over seeds (10,000 resamples), "
        "which stays inside the runs' own range by construction; differences against the "
        "reference paired by seed: the Hodges-Lehmann shift with the exact interval of the "
        "signed-rank test (no resampling, so tied seeds cannot make it degenerate) and an "
        "exact sign test (with n = 10 its smallest p is 0.002). \"(no interval)\" means a "
        "single seed.\n"
     << "- **Multiplicity.** Holm's correction within two families: confirmatory = the "
        "count-or-size tests of the head_grid arm at each task's own budget (the question "
        "the study is built for); exploratory = every other paired test in this report. A "
        "claim rests on the Holm p of its family; exploratory results suggest, they do not "
        "establish.\n"
     << "- **Censoring.** Steps to solve and the step of the first induction head (score >= "
        "0.4) are Kaplan-Meier medians: a run that never gets there counts as censored at its "
        "step budget, not as a number. \"not reached (censored at N)\" means fewer than half "
        "of the runs got there within N steps; an upper bound \"not reached\" means the data "
        "cannot exclude a median beyond the budget.\n"
     << "- **Induction score.** Attention from a repeated token to the position after its "
        "earlier occurrence (Olsson et al. 2022), averaged over the repeated tokens whose "
        "prediction the task scores (a recall task's queries). Tokens that repeat by chance "
        "where nothing is scored (two equal values) would dilute it: with 8 pairs over 10 "
        "value ids, a perfect lookup head scores about 0.3 over every repeated token. "
        "heads.csv has both (induction, induction_all).\n\n";
}

// Embeds the task and arm's plots in plot_kinds() order; marks each as used.
void embed_plots(std::ostringstream& md, const std::string& task, const std::string& arm,
                 bool regression, const std::vector<std::string>& plots,
                 std::set<std::string>& used) {
  for (const std::string& kind : render::plot_kinds()) {
    const std::string path = "plots/" + render::plot_name(kind, task, arm) + ".png";
    if (std::find(plots.begin(), plots.end(), path) == plots.end()) continue;
    used.insert(path);
    md << "![" << kind << " " << task << " " << arm << "](" << path << ")\n\n*"
       << render::caption(kind, regression) << "*\n\n";
  }
}

// The patching protocol of `task`, for the section's opening sentence.
std::string patching_protocol(const std::string& task, std::int64_t prompts) {
  if (task == "char_lm")
    return "Olsson et al.'s probe, " + std::to_string(prompts) +
           " rows of T / 2 random characters repeated once, against the same rows with another "
           "random first half; one head's clean z patched into the corrupted run; effect = "
           "normalised mean log-probability of the second half's next characters (which only "
           "the repeat predicts), 1 = fully restored; runs count when the clean run's "
           "log-probability exceeds the corrupted run's by at least " +
           fmt("%g", kPatchingMinGap) + " nat";
  return "docs/inspect.md's recall protocol, " + std::to_string(prompts) +
         " report-split prompts per run: the query's key replaced by another key of the prompt; "
         "one head's clean z patched into the corrupted run; effect = normalised logit "
         "difference between the clean and the corrupted answer, 1 = fully restored; runs count "
         "when the clean run's logit difference exceeds the corrupted run's by at least " +
         fmt("%g", kPatchingMinGap);
}

// Causal evidence at the best lr: activation patching of each head (patched_task).
void write_patching(std::ostringstream& md, const std::string& task,
                    const std::vector<Selected>& models) {
  const RunResult* example = nullptr;
  for (const Selected& s : models)
    for (const RunResult* r : s.cell->runs)
      if (!example && !r->patching.empty()) example = r;
  if (!example) {
    if (patched_task(task))
      md << "Activation patching at the best lr: no run has it (the clean and corrupted runs "
            "gave one metric in every run: nothing was learnt that the corruption removes).\n\n";
    return;
  }
  md << "Activation patching at the best lr (" << patching_protocol(task, example->patching_prompts)
     << ", so that the normalisation is meaningful). Heads "
        "are ranked within each layer per run, then averaged (heads have no identity across "
        "seeds). Distributed = the fewest heads whose joint patching restores >= 90% (greedy "
        "by single effect), mean [lowest, highest] over runs:\n\n"
     << "| model | runs counted | heads restoring >= 90% | share of the model's heads | share "
        "- reference's, paired by seed [HL, exact 95%; sign test, Holm] | restored | effect by "
        "rank "
        "within each layer (strongest first) |\n|---|---|---|---|---|---|---|\n";
  for (const Selected& s : models) {
    md << "| " << model_label(s.cell->model) << " | " << s.patching_runs << "/"
       << s.cell->runs.size() << " | ";
    if (s.patching_runs == 0) {
      md << "- | - | - | - | - |\n";
      continue;
    }
    const double heads = static_cast<double>(s.cell->model.heads * s.cell->model.layers);
    md << fmt("%.2f", s.restoring_mean) << " [" << fmt("%.0f", s.restoring_min) << ", "
       << fmt("%.0f", s.restoring_max) << "] | " << fmt("%.0f%%", 100 * s.restoring_mean / heads)
       << " | "
       << (s.reference ? paired_text(s.share_vs_reference, "%.2f", 1) : std::string("reference"))
       << " | " << fmt("%.0f%%", 100 * s.restored_mean) << " | ";
    for (std::size_t l = 0; l < s.patching_ranked.size(); ++l) {
      md << (l ? "; " : "") << "L" << l << ":";
      for (double v : s.patching_ranked[l]) md << " " << fmt("%.2f", v);
    }
    md << " |\n";
  }
  md << "\n";
}

// char_lm's language-modelling numbers per model at its best lr: bits per character, the
// in-context-learning score and the probe's strongest induction head, at the last
// evaluation of each run.
void write_language_table(std::ostringstream& md, const std::vector<Selected>& models) {
  md << "Language modelling (report split, after training, on a larger sample than the "
        "evaluations: bits per character and ICL on "
     << kFinalBatches << " report batches, probe induction on " << kFinalProbeRows
     << " probe rows, or the last evaluation for runs cached before it; ICL = loss at positions "
        "[3T/4, T) minus [T/8, T/4), nats, negative = the later context helps; probe = the "
        "strongest head's induction score on random characters repeated once):\n\n"
     << "| model | bits per character [t 95%] | ICL score [t 95%] | probe induction, "
        "strongest head [bootstrap 95%] |\n|---|---|---|---|\n";
  for (const Selected& s : models) {
    const LanguageScores scores = language_scores(*s.cell);
    md << "| " << model_label(s.cell->model) << " | " << interval(scores.bits, "%.3f") << " | "
       << interval(scores.icl, "%.3f") << " | " << interval(scores.probe, "%.3f") << " |\n";
  }
  md << "\n";
}

// One projection's value at step 1 (last = false) or the last evaluation of a run,
// averaged over the layers ([layer][p] of `field`); NaN when the run did not record it.
double layer_mean(const RunResult& r, bool last, std::vector<std::vector<double>> EvalPoint::*field,
                  int p) {
  if (r.curve.empty()) return std::nan("");
  const auto& m = (last ? r.curve.back() : r.initial).*field;
  double sum = 0, n = 0;
  for (const auto& row : m)
    if (row.size() == 4 && std::isfinite(row[p])) sum += row[p], n += 1;
  return n > 0 ? sum / n : std::nan("");
}

// A table of a [layer][q, k, v, o] gradient measurement at the first and last evaluation,
// mean [bootstrap 95%] over each model's best-lr runs; models without it are left out.
void write_gradient_table(std::ostringstream& md, const std::vector<Selected>& models,
                          const std::string& caption,
                          std::vector<std::vector<double>> EvalPoint::*field) {
  std::ostringstream rows;
  for (const Selected& s : models) {
    std::string row = "| " + model_label(s.cell->model);
    bool any = false;
    for (int p = 0; p < 4; ++p)
      for (bool last : {false, true}) {
        std::vector<double> x;
        for (const RunResult* r : s.cell->runs) {
          const double v = layer_mean(*r, last, field, p);
          if (std::isfinite(v)) x.push_back(v);
        }
        any = any || !x.empty();
        // Cosines lie in [-1, 1]: the bootstrap interval stays there by construction.
        row += " | " + (x.empty() ? std::string("-")
                                  : interval(statistics::bootstrap_mean_interval(x), "%.3f"));
      }
    if (any) rows << row << " |\n";
  }
  if (rows.str().empty()) return;
  md << caption
     << "\n\n| model | W_q, step 1 | W_q, last | W_k, step 1 | W_k, last | W_v, step 1 "
        "| W_v, last | W_o, step 1 | W_o, last |\n|---|---|---|---|---|---|---|---|---|\n"
     << rows.str() << "\n";
}

// The gradient question at the best lr (EvalPoint's grad_cos, split_cos, split_ratio).
void write_gradients(std::ostringstream& md, const std::vector<Selected>& models) {
  write_gradient_table(
      md, models,
      "Gradients between heads (best lr; training batch of step 1 and of the last evaluation; "
      "per run averaged over layers, then mean [bootstrap 95%] over runs): the mean cosine "
      "between "
      "two heads' gradient blocks of one projection. Near 0: the heads get unrelated "
      "(complementary) updates; near 1: redundant ones.",
      &EvalPoint::grad_cos);
  write_gradient_table(
      md, models,
      "Against one head from the same weights (fixed width): this model's projection "
      "gradients cut into its H head slices, each compared with the same slice of the "
      "one-head model's gradient at the same weights and batch; mean cosine over the slices. "
      "1 = splitting into heads leaves that block's update unchanged.",
      &EvalPoint::split_cos);
  write_gradient_table(md, models,
                       "The same slices' norm ratio (this model's block over the one-head "
                       "model's), mean over the slices.",
                       &EvalPoint::split_ratio);
}

// An arm's table of models at their best rates: success, loss, accuracy, medians.
void write_arm_models(std::ostringstream& md, const std::string& task, bool regression,
                      const std::vector<Selected>& models) {
  md << "| model | params | best lr | solved k/n [Wilson 95%] | final loss [bootstrap 95%] | final "
        "accuracy [bootstrap 95%] | median steps to solve [95%] | induction head (runs) | median "
        "phase step [95%] |\n"
     << "|---|---|---|---|---|---|---|---|---|\n";
  for (const Selected& s : models) {
    const Cell& c = *s.cell;
    const auto k = std::to_string(c.runs.size());
    md << "| " << model_label(c.model) << " | " << c.params << " | " << lr_text(c.lr)
       << rate_mark(s) << " | " << c.solved << "/" << k << " "
       << interval({100 * c.success.estimate, 100 * c.success.low, 100 * c.success.high}, "%.0f%%")
       << budget_mark(s) << " | " << loss_text(c.final_loss) << " | " << percent(c.final_acc)
       << " | " << km_median_text(c.median_solve, c.task.steps) << " | ";
    if (regression && task != "char_lm")  // char_lm: induction on its probe
      md << "n/a (no tokens) | n/a |\n";
    else
      md << c.phase_changes << "/" << k << " | " << km_median_text(c.median_phase, c.task.steps)
         << " |\n";
  }
}

// Each model paired by seed against the arm's reference model.
void write_arm_pairs(std::ostringstream& md, bool regression, const std::string& reference,
                     const std::vector<Selected>& models) {
  md << "\nPaired by seed against " << reference
     << " (each at its own best lr): Hodges-Lehmann shift [exact 95%]; exact sign test, Holm p "
        "(exploratory family); pairs "
        "(model above / below / tied):\n\n"
     << "| model | final loss - ref" << (regression ? " (negative = better)" : "")
     << " | final accuracy - ref (percentage points) |\n|---|---|---|\n";
  for (const Selected& s : models)
    if (s.reference)
      md << "| " << model_label(s.cell->model) << " | "
         << paired_text(s.loss_vs_reference, "%.4g", 1) << " | "
         << paired_text(s.acc_vs_reference, "%.1f", 100) << " |\n";
}

// Pruning statistics at the best lr.
void write_arm_pruning(std::ostringstream& md, const std::string& task, bool regression,
                       const std::vector<Selected>& models) {
  md << "Pruning at the best lr (report split; r = retained share of the unpruned model's "
        "gain over "
     << (task == "char_lm" ? "the bigram model's loss (a GPT without heads sees one character)"
         : regression      ? "predict_zero's loss"
                           : "chance accuracy")
     << "; runs that learnt less than 0.1 of it are not counted). Prunable: the share of heads "
        "removable in importance order with r >= 0.9 throughout [bootstrap 95%]. Order gain: "
        "mean r between no head and every head removed, paired per run [HL, exact 95%; sign "
        "test, Holm]:\n\n"
     << "| model | runs counted | prunable heads | importance - random order | greedy - "
        "importance |\n|---|---|---|---|---|\n";
  for (const Selected& s : models) {
    md << "| " << model_label(s.cell->model) << " | " << s.prune_runs << "/" << s.cell->runs.size()
       << " | ";
    if (s.prune_runs == 0 || s.cell->model.heads * s.cell->model.layers < 2) {
      md << "- | - | - |\n";
      continue;
    }
    md << percent(s.prunable_fraction, "%.0f%%") << " | "
       << paired_text(s.importance_vs_random, "%.3f", 1) << " | "
       << paired_text(s.greedy_vs_importance, "%.3f", 1) << " |\n";
  }
  md << "\n";
}

// The whole learning-rate grid of every model.
void write_arm_grid(std::ostringstream& md, const std::vector<Selected>& models) {
  std::vector<double> lrs;
  for (const Selected& s : models)
    for (const Cell* c : s.grid)
      if (std::find(lrs.begin(), lrs.end(), c->lr) == lrs.end()) lrs.push_back(c->lr);
  std::sort(lrs.begin(), lrs.end());
  md << "Whole grid (solved k/n; mean final report loss; **bold** = selected lr):\n\n| model |";
  for (double lr : lrs) md << " lr " << lr_text(lr) << " |";
  md << "\n|---|";
  for (std::size_t i = 0; i < lrs.size(); ++i) md << "---|";
  md << "\n";
  for (const Selected& s : models) {
    md << "| " << model_label(s.cell->model) << " |";
    for (double lr : lrs) {
      const auto it =
          std::find_if(s.grid.begin(), s.grid.end(), [lr](const Cell* c) { return c->lr == lr; });
      if (it == s.grid.end()) {
        md << " - |";
        continue;
      }
      const Cell& c = **it;
      const std::string text = std::to_string(c.solved) + "/" + std::to_string(c.runs.size()) +
                               "; " + fmt("%.4g", c.final_loss.estimate);
      md << " " << (&c == s.cell ? "**" + text + "**" : text) << " |";
    }
    md << "\n";
  }
  md << "\n";
}

void write_arm(std::ostringstream& md, const StudyConfig& config, const Study& study,
               const std::string& task, const std::string& arm, const std::vector<Selected>& models,
               const std::vector<std::string>& plots, std::set<std::string>& used) {
  if (models.empty()) return;
  const bool regression = regression_task(study, task);
  const Cell& front = *models.front().cell;
  const std::size_t n = front.runs.size();
  const std::string reference = model_label(front.model);
  const std::string base = long_budget_base(config, arm);
  md << "### " << task << ", " << arm << "\n\n"
     << (base.empty()
             ? std::string()
             : "The " + base + " models trained for " + std::to_string(config.long_budget) +
                   "x the steps (" + std::to_string(front.task.steps) +
                   "), each at the rate selected at the shorter budget. ")
     << "Each model at its selected learning rate; n = " << n
     << " seeds per model; report split; paired differences are model minus " << reference
     << " (same seeds).\n\n";
  write_arm_models(md, task, regression, models);
  write_marks_footnote(md, models);
  md << "\n";
  if (task == "char_lm") write_language_table(md, models);
  if (!regression || task == "char_lm") write_final_scores(md, config, models, task == "char_lm");
  write_gradients(md, models);
  if (models.size() > 1) write_arm_pairs(md, regression, reference, models);
  md << "\n";
  write_arm_pruning(md, task, regression, models);
  write_patching(md, task, models);
  write_arm_grid(md, models);
  embed_plots(md, task, arm, regression, plots, used);
}

// The report's head: command, wall time, what was cached, the design's description and
// the link to the interactive view.
void write_report_head(std::ostringstream& md, const StudyConfig& config,
                       const Invocation& invocation, bool view) {
  md << "# heads_compare: one attention head against many\n\n"
     << "Command: `" << invocation.command << "`  \n"
     << "Wall time: " << fmt("%.1f", invocation.seconds) << " s; "
     << invocation.trained + invocation.cached << " unique runs: " << invocation.trained
     << " trained in this invocation, " << invocation.cached << " read from the cache; "
     << config.jobs << " run(s) at a time on " << config.device.str() << "; the runs' own "
     << "training and inspection time summed: " << fmt("%.0f", invocation.run_seconds) << " s.\n\n"
     << (invocation.missing > 0
             ? "**Partial study:** " + std::to_string(invocation.missing) +
                   " planned runs were not in the cache and are left out (--cached-only); "
                   "cells may have fewer seeds than planned (n is given everywhere).\n\n"
             : std::string())
     << "**Design of this run (preset `" << config.preset << "`).** "
     << (config.description.empty() ? std::string("a custom design, as set on the command line")
                                    : config.description)
     << ".\n\n";
  if (view)
    md << "**Interactive view: [view.html](view.html)** (one file, opens offline in any "
          "browser): every head's attention pattern on "
       << config.view_examples << " report-split examples, two models side by side on the "
       << "same prompt (H = 1 against the largest H to begin with), each head's scores under "
          "it; hover a token to see what it attends to. docs/inspect.md describes the "
          "controls.\n\n";
}

// What a task's results measure: its primary metric and when it counts as solved.
void write_task_intro(std::ostringstream& md, const Study& study, const TaskSetting& task) {
  if (task.name == "char_lm")
    md << "Character-level language modelling on held-out documents of "
       << (task.corpus.empty() ? headgrad::train::default_corpus() : task.corpus)
       << " (context T = " << task.length
       << "): the primary metric is the final loss, read as bits per character (loss / ln "
          "2; lower is better); the baselines above give the unigram and bigram models' "
          "values. Accuracy is the next character's top-1 accuracy; solved = report "
          "accuracy >= "
       << fmt("%g", task.threshold) << ".\n\n";
  else if (regression_task(study, task.name))
    md << "A regression task: the primary metric is the final loss (the mean summed "
          "squared error; lower is better). Accuracy is the share of scored positions whose "
          "squared error is below "
       << fmt("%g", headgrad::train::kRegressionTolerance)
       << "; success and steps to solve use it against the threshold " << fmt("%g", task.threshold)
       << ".\n\n";
  else
    md << "Primary metric: final report accuracy (higher is better); solved = report "
          "accuracy >= "
       << fmt("%g", task.threshold) << ".\n\n";
}

// The plots no results section showed.
void write_other_plots(std::ostringstream& md, const std::vector<std::string>& plots,
                       const std::set<std::string>& used) {
  if (plots.empty()) md << "No plots were drawn (gnuplot missing or failed; see stderr).\n\n";
  bool other = false;
  for (const std::string& p : plots)
    if (!used.count(p)) {
      if (!other) md << "## Other plots\n\n";
      other = true;
      md << "![" << fs::path(p).stem().string() << "](" << p << ")\n\n";
    }
}

// The run folder's other outputs, each listed when it is there.
void write_files_section(std::ostringstream& md, const StudyConfig& config, bool view) {
  const std::pair<const char*, const char*> files[] = {
      {"runs.csv", "every run's final numbers on both held-out splits"},
      {"curves.csv", "every run's evaluations over training (training window and report split)"},
      {"heads.csv",
       "every head's previous-token and induction scores and gradient norm at each evaluation"},
      {"grid.csv", "every (task, model, lr) cell with its intervals"},
      {"pruning.csv", "every run's pruning curves (importance, greedy, random mean)"},
      {"summary.json", "the numbers of this report, machine-readable"},
      {"view.html", "the interactive attention view (patterns, scores, two models side by side)"}};
  md << "## Files\n\n";
  for (const auto& [file, what] : files) {
    if (!fs::exists(fs::path(config.out_dir) / file)) continue;
    if (file == std::string("view.html") && !view)
      md << "- `view.html`: an interactive attention view written by an earlier invocation "
            "(this one had no run of its --view-seeds to show, and left it as it was).\n";
    else
      md << "- `" << file << "`: " << what << ".\n";
  }
  md << "- `plots/`: the PNGs, their gnuplot scripts (`gnuplot plots/<name>.gp` redraws one "
        "from the run folder) and data (`plots/data`).\n"
     << "- the run cache (`" << (config.cache_dir.empty() ? "cache" : config.cache_dir)
     << "/`): one JSON file per finished run; a rerun reuses it.\n";
}

}  // namespace

void write_report_md(const StudyConfig& config, const Study& study,
                     const std::vector<std::string>& plots, const Invocation& invocation,
                     bool view) {
  std::ostringstream md;
  write_report_head(md, config, invocation, view);
  write_how_to_read(md);
  write_design(md, config, study);
  write_verdicts(md, study);

  std::set<std::string> used;
  for (const TaskSetting& task : config.tasks) {
    const auto task_it = study.selected.find(task.name);
    if (task_it == study.selected.end()) continue;
    md << "## Results: " << task.name << "\n\n";
    write_task_intro(md, study, task);
    for (const std::string& arm : reported_arms(config)) {
      const auto arm_it = task_it->second.find(arm);
      if (arm_it != task_it->second.end())
        write_arm(md, config, study, task.name, arm, arm_it->second, plots, used);
    }
    write_budgets(md, config, study, task.name);
    write_grid_effects(md, study, task.name);
    write_circuits(md, study, task.name);
  }

  write_other_plots(md, plots, used);
  write_files_section(md, config, view);
  write_file_atomically(fs::path(config.out_dir) / "report.md", md.str());
}

}  // namespace heads_compare
