// heads_compare's experiment: toy GPTs that differ in how their attention is split into
// heads, trained on synthetic tasks over a learning-rate grid and several seeds, then
// inspected head by head.
//
// The design (see docs/research/heads.md):
//   arms        fixed_width     E fixed, head_dim d = E / H (the parameter count does not
//                               depend on H: only the split into heads changes)
//               fixed_head_dim  d fixed, E = d * H (the model grows with H)
//               head_size       E and H fixed, d varies (query/key/value width H*d != E)
//               one_layer       as fixed_width with a single layer (the 1-layer control)
//               head_grid       E fixed, H x d factorial (query/key/value width H*d): the
//                               head count and the head size varied apart; its diagonal
//                               d = E / H is the fixed_width arm's models
//   lr grid     every (task, model) trains at every learning rate; each model is compared
//               at its own best rate, chosen on the selection split (validation)
//   splits      training batches; "selection" = Split::validation (final metrics only, for
//               choosing the learning rate and for head importance); "report" =
//               Split::test (learning curves, mechanism scores, final metrics and pruning
//               curves, the numbers the comparison reports)
//   seeds       runs with the same seed start from weights drawn from that seed and see the
//               same batches; with the same (E, d, layers) they start from identical weights
//
// Every finished run is cached on disk as one JSON file named by a hash of its full
// configuration (RunSpec::key), so an interrupted study continues where it stopped and a
// rerun with more seeds reuses what exists.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "headgrad/core/device.hpp"
#include "headgrad/distributed/process_group.hpp"
#include "headgrad/inspect/heads.hpp"
#include "headgrad/train/tasks.hpp"

namespace heads_compare {

// One task of the study with its own sizes and training budget.
struct TaskSetting {
  std::string name;          // a train::make_task name
  std::int64_t length = 8;   // TaskOptions::length (pairs, symbols, points, inputs)
  std::int64_t context = 0;  // TaskOptions::context (mqar's sequence length; 0 = default)
  std::int64_t dim = 0;      // TaskOptions::dim (nearest_neighbour d, d_retrieval D)
  std::int64_t steps = 1000;
  double threshold = 0.9;   // report-split accuracy at which a run counts as solved
  std::string corpus = "";  // char_lm: TaskOptions::corpus (empty = the fortunes default)
  // The head_grid arm's learning rates on this task: a grid around the optimum the other
  // arms found (empty = StudyConfig::lrs).
  std::vector<double> grid_lrs = {};
};

// The shape of one model: which arm it belongs to and its sizes.
struct ModelShape {
  std::string arm;  // fixed_width, fixed_head_dim, head_size, one_layer, head_grid
  std::int64_t layers = 2;
  std::int64_t heads = 1;
  std::int64_t head_dim = 64;
  std::int64_t d_model = 64;
};

struct StudyConfig {
  std::string preset = "default";
  std::vector<TaskSetting> tasks;
  std::vector<std::string> arms = {"fixed_width", "fixed_head_dim"};
  std::vector<std::int64_t> heads = {1, 2, 4, 8};
  std::int64_t d_model = 64;                       // fixed_width, head_size and one_layer arms
  std::int64_t fixed_head_dim = 16;                // fixed_head_dim arm
  std::vector<std::int64_t> fixed_head_dim_heads;  // its head counts (empty = heads)
  std::int64_t head_size_heads = 8;                // head_size arm: H
  std::vector<std::int64_t> head_sizes = {8, 16, 32, 64};  // head_size arm: d values
  // Tasks the head_size and one_layer arms run on (empty = all tasks).
  std::vector<std::string> control_tasks;
  // head_grid arm: every H of grid_heads with every d of grid_head_dims at E = d_model, on
  // grid_tasks (empty = all tasks), at each task's grid_lrs.
  std::vector<std::int64_t> grid_heads = {1, 2, 4, 8};
  std::vector<std::int64_t> grid_head_dims = {8, 16, 64};
  std::vector<std::string> grid_tasks;
  std::int64_t layers = 2;
  std::vector<double> lrs = {1e-3, 3e-3, 1e-2};
  std::vector<std::uint64_t> seeds = {0, 1, 2};
  std::int64_t batch_size = 32;
  double warmup_fraction = 0.1;  // of a task's steps
  double weight_decay = 0.01;
  double clip = 1.0;
  std::int64_t eval_every = 25;
  std::int64_t eval_batches = 4;     // report-split batches per evaluation
  std::int64_t select_batches = 8;   // selection-split batches at the end
  std::int64_t inspect_batches = 4;  // batches for importance and pruning
  std::int64_t random_orders = 100;  // random pruning orders per run
  // Head importance and the pruning curves after training (false: left out, as the
  // text_long preset does, where they would cost more than the training at H = 8).
  bool prune = true;
  int jobs = 1;
  // Train the runs of one task and one model (all learning rates and seeds) as one
  // nn::GPTEnsemble (execute_ensemble), at most ensemble_size runs each (0 = no limit;
  // the command line sets 10 on the CPU, 0 on a GPU);
  // false (--no-ensemble): one run at a time (execute_run). Same results either way.
  bool ensemble = true;
  std::int64_t ensemble_size = 0;
  // Runs trained one at a time (ensemble false) checkpoint every this many steps into
  // <cache>/partial/<key>/ and resume from there bitwise after an interruption (cache.hpp,
  // PartialRun); 0 = no checkpoints. Not part of a run's key.
  std::int64_t checkpoint_every = 0;
  std::string out_dir;
  std::string cache_dir;  // empty = <out_dir>/cache
  headgrad::Device device = headgrad::Device::cpu();
  std::string description;   // the preset's reduced design, stated in the report
  bool cached_only = false;  // report from the cache alone: runs not in it are left out
  // The interactive view (view.html): the runs of these seeds record every head's pattern
  // on view_examples report-split examples, and the view shows each model at its best lr.
  std::vector<std::uint64_t> view_seeds = {0};
  std::int64_t view_examples = 16;
  // Follow-up stages (command.cpp runs them after the plan's runs; see followup_runs):
  // extend_lrs: a model whose best rate is the lowest or highest of the grid also trains
  // at the rate one step past that edge (lr_past_edge), once; long_budget > 1: every
  // fixed_width model, and every head_grid model of a synthetic task (not char_lm), also
  // trains at long_budget x each task's steps, at its best rate, as the arm
  // long_budget_arm(config, arm) (0 or 1 = no such runs).
  bool extend_lrs = false;
  std::int64_t long_budget = 0;
  // Set by the circuit stage (circuit_runs), not by a preset: keys of runs that must carry
  // a Circuit; a cached one without it is trained again.
  std::set<std::string> circuit_keys;
};

// The arm of `arm`'s long-budget runs: "fixed_width_3x" for long_budget 3.
std::string long_budget_arm(const StudyConfig& config, const std::string& arm = "fixed_width");
// The arm a long-budget arm extends ("fixed_width" for "fixed_width_3x"); "" for others.
std::string long_budget_base(const StudyConfig& config, const std::string& arm);
// Whether `arm`'s models train at the long budget too (fixed_width, head_grid).
bool has_long_budget(const std::string& arm);
// The study's arms in the order the report and the plots take them: each arm, followed by
// its long-budget arm where the study has one.
std::vector<std::string> reported_arms(const StudyConfig& config);
// The learning rates `model` trains at on `task` before the follow-up stages: the task's
// grid_lrs for the head_grid arm (when set), the study's lrs otherwise.
const std::vector<double>& lrs_for(const StudyConfig& config, const TaskSetting& task,
                                   const ModelShape& model);

// Presets: "smoke" (under a minute, for tests), "default" (scripts/run.sh, at most 10
// minutes on 2 cores), "full" (the write-up's study; hours). ValueError otherwise.
StudyConfig preset_config(const std::string& preset);
std::vector<std::string> preset_names();

// Every model of the study for one task, in a fixed order (arms, then heads or sizes).
std::vector<ModelShape> models_for(const StudyConfig& config, const TaskSetting& task);

// One training run: a (task, model, lr, seed) cell.
struct RunSpec {
  TaskSetting task;
  ModelShape model;
  double lr = 1e-3;
  std::uint64_t seed = 0;
  std::string name() const;  // "associative_recall-fixed_width-L2-H4-d16-E64-lr0.003-s0"
  // Everything that determines the run's result (task, model without the arm name, lr,
  // seed and the study's training and evaluation settings) as canonical JSON text.
  std::string config_text(const StudyConfig& config) const;
  // A hex hash of config_text: the cache file's name.
  std::string key(const StudyConfig& config) const;
};

struct EvalPoint {
  std::int64_t step = 0;
  double train_loss = 0, train_accuracy = 0;  // the training window since the last point
  double loss = 0, accuracy = 0;              // report split
  // [layer][head]; NaN for tasks without tokens. `induction` is inspect's
  // induction_scored (over the repeated tokens whose prediction the task scores: the
  // query of a recall task); `induction_all` counts every repeated token, chance repeats
  // included (see inspect/mechanism.hpp).
  std::vector<std::vector<double>> previous_token, induction, induction_all;
  // Per-head gradient norm of the head's output z at this step's backward ([layer][head]).
  std::vector<std::vector<double>> grad_z;
  // char_lm (language modelling): `induction` is measured on Olsson et al.'s probe
  // (train::induction_probe: T / 2 distinct random characters repeated once, its second
  // half scored, kProbeRows rows), `induction_all` on the report split's text; icl is their
  // in-context-learning score (inspect::in_context_score: the report split's loss at positions
  // [3T/4, T) minus at [T/8, T/4), nats; NaN for other tasks).
  double icl = std::numeric_limits<double>::quiet_NaN();
  // The gradient question (docs/research/heads.md), from the same side pass as grad_z:
  // each head's W_q, W_k, W_v, W_o gradient block norm [layer][head]; grad_cos [layer][p]
  // for p = q, k, v, o: the mean cosine between the layer's heads' blocks over head pairs
  // (NaN with one head); split_cos and split_ratio [layer][p] (fixed-width models with
  // H > 1): this model's gradient against the one-head model's with the same weights on
  // the same batch, cut into H slices (inspect::compare_grad_slices), the mean over the
  // slices of their cosine and norm ratio (empty otherwise). Empty in runs cached before
  // these were recorded.
  std::vector<std::vector<double>> grad_q, grad_k, grad_v, grad_o;
  std::vector<std::vector<double>> grad_cos, split_cos, split_ratio;
};

// Rows of char_lm's induction probe at each evaluation, and after training.
inline constexpr std::int64_t kProbeRows = 32;
inline constexpr std::int64_t kFinalProbeRows = 256;
// Report-split batches of RunResult::final_point.
inline constexpr std::int64_t kFinalBatches = 32;
// Whether a task is scored by its loss (lr selection, pruning, the primary metric):
// regression tasks and char_lm (bits per character = loss / ln 2).
bool scored_by_loss(const headgrad::train::Task& task);

// The circuit behind a patched task's answer, reaching layer 0 (runs of patched_task with
// two or more layers; see heads.md, "Circuits that reach layer 0"). RunResult::patching's
// recall protocol changes only the query, so a causal model's layer-0 outputs at earlier
// positions are the same in both runs; here the corruption changes the context instead:
//   recall tasks  inspect::RecallCorruption::context (the query's key and another key swap
//                 places; metric the logit difference, as RunResult::patching)
//   char_lm       the probe against another first half (RunResult::patching's runs)
// heads: each head's clean z patched into the corrupted run [layer][head] (normalised);
// paths: path patching (inspect::Patching::path_patch) from every head of an earlier layer
// (the sender) into every head of layers 1 .. L-1 (the receiver) through the receiver's
// q, k and v: [via: q, k, v][receiver][sender], receivers and senders numbered
// layer * heads + head over layers 1 .. L-1 and 0 .. L-2; NaN where the sender's layer is
// not before the receiver's. An induction circuit shows as a layer-0 head's path into a
// layer-1 head through k (K-composition). corruption empty = not recorded (a run cached
// before it was, or a task without it); heads empty = the two runs tie (nothing to patch).
struct Circuit {
  std::string corruption;  // "context" or "probe"
  std::int64_t prompts = 0;
  double clean = 0, corrupted = 0;
  std::vector<std::vector<double>> heads;
  std::vector<std::vector<std::vector<double>>> paths;
  bool recorded() const { return !corruption.empty(); }
};
// Whether a run of `spec` records a Circuit: a patched task and at least two layers.
bool records_circuit(const RunSpec& spec);

struct PruningCurve {
  std::vector<double> loss, accuracy;  // index k = heads removed
};

struct RunResult {
  RunSpec spec;
  std::int64_t params = 0, attention_params = 0;
  std::vector<EvalPoint> curve;
  // Step 1's gradient measurements (the grad_* and split_* fields of an EvalPoint; the
  // evaluations start at eval_every): the weights at initialisation. step 0 = not recorded.
  EvalPoint initial;
  // After training, on final_batches (kFinalBatches) report-split batches rather than an
  // evaluation's eval_batches: loss, accuracy, every head's mechanism scores and char_lm's
  // ICL score, its induction on kFinalProbeRows probe rows (no gradient fields). step 0 =
  // not recorded (runs cached before it was).
  EvalPoint final_point;
  double final_val_loss = 0, final_val_acc = 0;    // selection split
  double final_test_loss = 0, final_test_acc = 0;  // report split
  std::optional<std::int64_t> solved_step;  // first evaluation at >= threshold (report split)
  std::optional<std::int64_t> phase_step;   // first evaluation with an induction score >= 0.4
  std::vector<std::vector<double>> importance_raw, importance_normalized;  // [layer][head]
  PruningCurve by_importance, greedy;  // importance from the selection split
  headgrad::inspect::PruningBand random;
  std::vector<std::int64_t> head_params;  // attention parameters per head, model order
  // Attention pattern of every head on report example 0: [layer][head] (T x T row-major).
  std::vector<std::vector<std::vector<double>>> patterns;
  std::vector<std::int64_t> sample_tokens;
  // For view.html (runs of config.view_seeds on token tasks; empty otherwise): the first
  // view_examples report-split examples' tokens (examples x view_length) and every head's
  // pattern on them, [example][layer][head][query][key], stored as the page stores them
  // (inspect::encode_patterns: 16-bit steps), so a cached run gives the same view.
  std::int64_t view_length = 0;
  std::vector<std::int64_t> view_tokens;
  std::vector<float> view_patterns;
  // Activation patching after training (patched_task): each head's clean z patched into
  // the corrupted run, as the normalised metric [layer][head] (1 = restores the clean run's
  // metric); empty for other tasks or when the clean and corrupted runs tie.
  //   recall tasks (associative_recall, mqar)  inspect/recall_patching.hpp's protocol on
  //       kPatchingPrompts report-split prompts; metric the logit difference between the
  //       query's answer and another key's value
  //   char_lm  Olsson et al.'s probe (kPatchingPrompts rows of T / 2 random characters
  //       repeated once) against the same rows with a different random first half; metric
  //       the mean log-probability (nats) of the second half's next characters, which only
  //       the copy in the first half predicts (an induction mechanism)
  // restoring_heads: the fewest heads (greedy by their single effect) whose joint patching
  // restores >= 90% (restoring_fraction: what they restore; all heads when no smaller set
  // does).
  std::vector<std::vector<double>> patching;
  std::int64_t patching_prompts = 0;
  double patching_clean = 0, patching_corrupted = 0;  // the two runs' metrics
  std::int64_t restoring_heads = 0;
  double restoring_fraction = 0;
  Circuit circuit;
  double seconds = 0;          // the whole run
  double inspect_seconds = 0;  // of which importance, pruning and patterns after training
  bool cached = false;         // read from the cache, not trained in this invocation
};

// Prompts of the patching analysis (one report-split batch).
inline constexpr std::int64_t kPatchingPrompts = 128;
// The least gap between the clean and corrupted runs' metrics (logit difference, or
// char_lm's mean log-probability in nats) for a run's patching to count in the report:
// below it the normalisation divides by almost nothing (a model that does not tell the two
// answers apart, or that does not use the repeated half).
inline constexpr double kPatchingMinGap = 1.0;
// Whether the study measures activation patching on `task` (the recall tasks, char_lm).
bool patched_task(const std::string& task);
// Whether a run records the view's patterns: its seed is one of config.view_seeds (the
// task must have tokens too; regression runs record nothing).
bool records_view(const StudyConfig& config, const RunSpec& spec);

// The 64-bit FNV-1a hash of `text` as 16 hex digits: cache keys and cache checksums.
std::string hash_hex(const std::string& text);

// Every run of the study, in a fixed order (task, model, lr, seed).
std::vector<RunSpec> plan_runs(const StudyConfig& config);

// The learning rate one step past `edge` on the 1-3-10 grid (..., 1e-3, 3e-3, 1e-2, ...):
// up from 1e-2 is 3e-2, down from 3e-4 is 1e-4.
double lr_past_edge(double edge, bool up);

// A model's best learning rate among the rates its runs in `results` tried (aggregate.hpp's
// rule: highest mean selection-split accuracy, ties to the lower loss; the lowest loss for
// tasks scored by loss), and whether it sits at the edge of those rates.
struct RateChoice {
  TaskSetting task;
  ModelShape model;
  double best = 0, lowest = 0, highest = 0;
  bool at_low_edge() const { return best == lowest && lowest < highest; }
  bool at_high_edge() const { return best == highest && lowest < highest; }
};
std::vector<RateChoice> choose_rates(const std::vector<RunResult>& results);

// The runs a follow-up stage adds to `results` (the runs so far, plan order):
//   stage 1 (config.extend_lrs)  every seed at lr_past_edge for each model whose best rate
//                                is at an edge of the preset's grid (the grid's own edge:
//                                an extended rate is not extended again)
//   stage 2 (config.long_budget) every seed of each fixed_width model at the long budget,
//                                at the model's best rate after stage 1
// Empty when the stage is off. Runs already in `results` are not repeated.
// (The circuit stage, circuit_runs, trains runs again instead of adding any.)
std::vector<RunSpec> followup_runs(const StudyConfig& config, const std::vector<RunResult>& results,
                                   int stage);

// Whether the circuit stage trains `arm`'s runs again: the fixed_width and head_grid arms
// and their long-budget arms. (The grid's d = 16 column and H = 4 row ask what the
// fixed_head_dim and head_size arms ask, at the same width: their runs record a circuit when
// trained, but cached ones are not trained again for it.)
bool circuit_stage_arm(const StudyConfig& config, const std::string& arm);

// The circuit stage: the runs of `results` at their model's best rate (each arm's own
// budget, long-budget arms included) in a circuit_stage_arm that should record a Circuit
// (records_circuit) and were cached before it was recorded; trained again (training is
// deterministic, so only the circuit is new), they are what the report's circuits rest
// on. Empty under --cached-only. A task in tasks_without_counted_circuits is left out.
std::vector<RunSpec> circuit_runs(const StudyConfig& config, const std::vector<RunResult>& results);

// The tasks whose recorded circuits (at least one model's worth: as many as the study's
// seeds) all fall short of the bar the report counts a run at (a clean - corrupted gap of
// kPatchingMinGap): circuits trained again there would add rows with no run counted
// (char_lm, where no model forms an induction head).
std::set<std::string> tasks_without_counted_circuits(const StudyConfig& config,
                                                     const std::vector<RunResult>& results);

// `results` in the study's order (what aggregate expects): task (config order), arm (config
// order; the long-budget arm after the others), model (models_for order), lr, seed.
void sort_results(const StudyConfig& config, std::vector<RunResult>& results);

// The task of a run: its setting, seeded by the run's seed (so the runs of one seed share
// their examples).
std::unique_ptr<headgrad::train::Task> make_run_task(const RunSpec& spec);

// Trains and inspects one run (single-threaded; safe to call from several threads).
RunResult execute_run(const StudyConfig& config, const RunSpec& spec);

// Trains runs of one task and one model (any learning rates and seeds) as one
// nn::GPTEnsemble, then inspects each member as execute_run does; each run's result goes to
// on_run(index in specs, result) as soon as it is inspected. A run's result equals
// execute_run's bitwise on the CPU (the members train bitwise as alone), except `seconds`,
// which takes an equal share of the ensemble's training time.
void execute_ensemble(const StudyConfig& config, const std::vector<RunSpec>& specs,
                      const std::function<void(std::size_t, RunResult)>& on_run);

// Every run: read from the cache when its file is there and passes its checks (cache.hpp;
// a file that fails is named on stderr and the run trained again), otherwise executed
// (config.jobs at a time) and written to the cache as soon as it finishes. Stale temporary
// and claim files in the cache folder are removed first. `on_done` (under a lock) reports
// progress. Results come back in plan order.
//
// Over the ranks of `group` (mpirun -np N heads_compare ...): rank 0's list of runs to
// train goes to every rank, and each rank takes the next run nobody has claimed (a claim
// is a file created exclusively in the cache folder, so ranks of uneven speed share the
// work like one queue); after the last run every rank waits for all and reads every result
// back from the cache (so all ranks plan the same follow-up runs); only rank 0 reports.
// Under --cached-only the other ranks return an empty list at once.
std::vector<RunResult> execute_all(
    const StudyConfig& config, const std::vector<RunSpec>& runs,
    const std::function<void(const RunResult&, std::size_t done, std::size_t total,
                             std::size_t trained)>& on_done,
    headgrad::distributed::ProcessGroup& group);

}  // namespace heads_compare
