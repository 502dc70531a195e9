// heads_compare's runs (see study.hpp): build a GPT, train it with the Trainer (per-head z
// gradient norms at evaluation steps), evaluate the report split and every head's
// mechanism scores at each evaluation, then the final metrics on both held-out splits,
// head importance (selection split) and the pruning curves (report split).
#include "study.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>

#include "analysis.hpp"
#include "cache.hpp"
#include "headgrad/autograd/grad_mode.hpp"
#include "headgrad/inspect/capture.hpp"
#include "headgrad/inspect/mechanism.hpp"
#include "headgrad/inspect/view.hpp"
#include "headgrad/nn/gpt.hpp"
#include "headgrad/nn/gpt_ensemble.hpp"
#include "headgrad/ops/loss.hpp"
#include "headgrad/optim/adam.hpp"
#include "headgrad/optim/ensemble_adamw.hpp"
#include "headgrad/optim/schedule.hpp"
#include "headgrad/train/ensemble_trainer.hpp"
#include "headgrad/train/tasks.hpp"
#include "headgrad/train/trainer.hpp"

namespace heads_compare {

namespace hg = headgrad;

namespace {

// Induction score at which a head counts as an induction head (the cut-off the
// TransformerLens head detectors use).
constexpr double kInductionCutoff = 0.4;
// Share of each task's example space held out for the report split (the selection split
// keeps the tasks' default validation_fraction, 0.3).
constexpr double kTestFraction = 0.15;

// The initial weights depend on the seed and the parameter shapes only: the models of
// the fixed_width arm (same E, same layers) start from identical weights for every H.
std::uint64_t init_seed(const RunSpec& spec) {
  return spec.seed * 0x9E3779B97F4A7C15ull + static_cast<std::uint64_t>(spec.model.layers);
}

PruningCurve curve_of(const std::vector<hg::inspect::PruningPoint>& points) {
  PruningCurve c;
  for (const auto& p : points) {
    c.loss.push_back(p.loss);
    c.accuracy.push_back(p.accuracy);
  }
  return c;
}

// Every head's pattern on report example 0, in eval mode (token tasks only).
void record_patterns(hg::nn::GPT& model, const hg::train::Task& task,
                     const hg::train::ForwardFn& forward, RunResult& result) {
  const hg::train::Batch sample = task.batch(hg::train::Split::test, 0, 1);
  if (!sample.tokens.defined()) return;
  const hg::inspect::ViewModel view = hg::inspect::capture_view_model(model, forward, sample, "");
  result.sample_tokens = sample.tokens.to_vector<std::int64_t>();
  const std::int64_t t = sample.tokens.size(1);
  for (std::int64_t l = 0; l < view.layers; ++l) {
    std::vector<std::vector<double>> per_head;
    for (std::int64_t h = 0; h < view.heads; ++h) {
      const auto first = view.patterns.begin() + (l * view.heads + h) * t * t;
      per_head.emplace_back(first, first + t * t);
    }
    result.patterns.push_back(std::move(per_head));
  }
}

// Every head's pattern on the first view_examples report-split examples, quantised as the
// view stores them (view.cpp writes view.html from these).
void record_view(hg::nn::GPT& model, const hg::train::Task& task, const StudyConfig& config,
                 const hg::train::ForwardFn& forward, RunResult& result) {
  const hg::train::Batch batch = task.batch(hg::train::Split::test, 0, config.view_examples);
  const hg::inspect::ViewModel view = hg::inspect::capture_view_model(model, forward, batch, "");
  result.view_length = batch.tokens.size(1);
  result.view_tokens = batch.tokens.to_vector<std::int64_t>();
  result.view_patterns = hg::inspect::decode_patterns(hg::inspect::encode_patterns(view.patterns));
}

double max_of(const std::vector<std::vector<double>>& values) {
  double best = -std::numeric_limits<double>::infinity();
  for (const auto& row : values)
    for (double v : row)
      if (!std::isnan(v)) best = std::max(best, v);
  return best;
}

// A (layer, head) grid as [layer][head].
std::vector<std::vector<double>> rows_of(const hg::inspect::PatchingGrid& grid) {
  std::vector<std::vector<double>> rows;
  for (std::int64_t l = 0; l < grid.shape[0]; ++l) {
    std::vector<double> row;
    for (std::int64_t h = 0; h < grid.shape[1]; ++h) row.push_back(grid.at(l, h));
    rows.push_back(std::move(row));
  }
  return rows;
}

// Circuit::paths: path patching from every head of layers 0 .. L-2 into every head of
// layers 1 .. L-1, through q, k and v ([via][receiver][sender]).
std::vector<std::vector<std::vector<double>>> path_grids(const hg::inspect::Patching& patching,
                                                         std::int64_t layers, std::int64_t heads) {
  std::vector<std::vector<std::vector<double>>> paths;
  for (const char* via : {"q", "k", "v"}) {
    std::vector<std::vector<double>> by_receiver;
    for (std::int64_t l = 1; l < layers; ++l)
      for (std::int64_t h = 0; h < heads; ++h) {
        const hg::inspect::PatchingGrid grid = patching.path_patching({l, h}, via);
        std::vector<double> senders;
        for (std::int64_t sl = 0; sl + 1 < layers; ++sl)
          for (std::int64_t sh = 0; sh < heads; ++sh)
            senders.push_back(sl < l ? grid.at(sl, sh) : std::nan(""));
        by_receiver.push_back(std::move(senders));
      }
    paths.push_back(std::move(by_receiver));
  }
  return paths;
}

Circuit circuit_of(const hg::inspect::Patching& patching, const std::string& corruption,
                   std::int64_t prompts, const ModelShape& model) {
  Circuit c;
  c.corruption = corruption;
  c.prompts = prompts;
  c.clean = patching.clean_metric();
  c.corrupted = patching.corrupted_metric();
  c.heads = rows_of(patching.by_head("z"));
  c.paths = path_grids(patching, model.layers, model.heads);
  return c;
}

// The recall tasks' Circuit: the context corruption on the patching batch.
void record_recall_circuit(hg::nn::GPT& model, const hg::train::Task& task, const RunSpec& spec,
                           RunResult& result) {
  const hg::train::Batch batch = task.batch(hg::train::Split::test, 0, kPatchingPrompts);
  result.circuit = Circuit{};
  result.circuit.corruption = "context";
  try {
    const patching_study::RecallPatching setup =
        patching_study::recall_patching(model, task, batch, hg::inspect::RecallCorruption::context);
    result.circuit =
        circuit_of(*setup.patching, "context", setup.prompts.clean.size(0), spec.model);
  } catch (const hg::ValueError&) {
    // the two runs tie (nothing learnt): recorded, with nothing to patch
  }
}

// Activation patching of each head's z on a report-split batch (analysis.hpp of the
// patching example); a tie between the clean and corrupted runs leaves it empty.
void record_patching(hg::nn::GPT& model, const hg::train::Task& task, RunResult& result) {
  patching_study::AnalysisOptions options;
  options.positions = false;
  options.ablations = false;
  const hg::train::Batch batch = task.batch(hg::train::Split::test, 0, kPatchingPrompts);
  try {
    const patching_study::RecallAnalysis a =
        patching_study::analyse_recall(model, task, batch, options);
    result.patching = rows_of(a.heads);
    result.patching_prompts = a.examples;
    result.patching_clean = a.clean_metric;
    result.patching_corrupted = a.corrupted_metric;
    result.restoring_heads = static_cast<std::int64_t>(a.restoring.heads.size());
    result.restoring_fraction = a.restoring.restored;
  } catch (const hg::ValueError&) {
    // the clean and corrupted prompts give one metric (nothing learnt): no patching
  }
}

// The probe's rows with their first half replaced by `other`'s first half: the second half
// no longer repeats anything (tokens (N, T), int64, CPU).
hg::Tensor with_first_half_of(const hg::Tensor& tokens, const hg::Tensor& other) {
  std::vector<std::int64_t> mixed = tokens.to_vector<std::int64_t>();
  const std::vector<std::int64_t> first = other.to_vector<std::int64_t>();
  const std::int64_t rows = tokens.size(0), t = tokens.size(1);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t i = 0; i < t / 2; ++i) mixed[r * t + i] = first[r * t + i];
  return hg::from_vector<std::int64_t>(mixed, {rows, t});
}

// A count of inspection rows (prompts, batches) for the task's context T: as given up to
// T = 64, then shrunk by 64 / T (at least 1): an attention pattern costs T^2 per row, and at
// T = 256 the full counts would take longer than the training.
std::int64_t rows_for(const hg::train::Task& task, std::int64_t rows) {
  return std::max<std::int64_t>(1, rows * 64 / std::max<std::int64_t>(64, task.max_len()));
}

// Half the length of Olsson's probe: T / 2, at most the task's distinct symbols (a half
// repeats none of them): 32 at T = 64; at T = 256 the corpus's alphabet is the limit.
std::int64_t probe_half(const hg::train::Task& task) {
  return std::min(task.max_len() / 2, task.vocab_size() - hg::train::kFirstSymbolId);
}

// char_lm's activation patching (study.hpp, RunResult::patching): the probe against the
// probe with another first half; metric the mean log-probability of the scored next
// characters (minus the cross entropy over the probe's targets).
void record_language_patching(hg::nn::GPT& model, const hg::train::Task& task, const RunSpec& spec,
                              RunResult& result) {
  const std::int64_t half = probe_half(task);
  const std::int64_t prompts = rows_for(task, kPatchingPrompts);
  const hg::train::Batch clean = hg::train::induction_probe(task, half, prompts, 1);
  const hg::train::Batch other = hg::train::induction_probe(task, half, prompts, 2);
  const hg::Device device = model.lm_head->weight.device();
  const hg::Tensor targets = clean.targets.to(device).reshape({-1});
  const hg::inspect::ModelRun run = [&model](const hg::Tensor& x) { return model.forward(x); };
  const hg::inspect::LogitsMetric metric = [targets](const hg::Tensor& logits) {
    return hg::neg(hg::cross_entropy(logits.reshape({-1, logits.size(-1)}), targets));
  };
  if (records_circuit(spec)) result.circuit.corruption = "probe";
  try {
    const hg::inspect::Patching patching(model, run, clean.tokens.to(device),
                                         with_first_half_of(clean.tokens, other.tokens).to(device),
                                         metric);
    result.patching = rows_of(patching.by_head("z"));
    // The probe's corruption changes the context (the first half): it is the circuit's too.
    if (records_circuit(spec)) result.circuit = circuit_of(patching, "probe", prompts, spec.model);
    const auto restoring = patching.fewest_heads_restoring(0.9);
    result.patching_prompts = prompts;
    result.patching_clean = patching.clean_metric();
    result.patching_corrupted = patching.corrupted_metric();
    result.restoring_heads = static_cast<std::int64_t>(restoring.heads.size());
    result.restoring_fraction = restoring.restored;
  } catch (const hg::ValueError&) {
    // the two runs give one metric (the repeat is not used): no patching
  }
}

}  // namespace

bool patched_task(const std::string& task) {
  return task == "associative_recall" || task == "mqar" || task == "char_lm";
}

bool records_circuit(const RunSpec& spec) {
  return patched_task(spec.task.name) && spec.model.layers >= 2;
}

bool records_view(const StudyConfig& config, const RunSpec& spec) {
  return std::find(config.view_seeds.begin(), config.view_seeds.end(), spec.seed) !=
         config.view_seeds.end();
}

std::unique_ptr<hg::train::Task> make_run_task(const RunSpec& spec) {
  hg::train::TaskOptions task_options;
  task_options.seed = spec.seed;
  task_options.length = spec.task.length;
  task_options.context = spec.task.context;
  task_options.dim = spec.task.dim;
  task_options.test_fraction = kTestFraction;
  task_options.corpus = spec.task.corpus;
  return hg::train::make_task(spec.task.name, task_options);
}

bool scored_by_loss(const hg::train::Task& task) {
  return task.kind() == hg::train::TaskKind::regression || task.name() == "char_lm";
}

namespace {

// The run's task, refusing classification tasks (the study trains GPTs on sequence and
// regression tasks).
std::unique_ptr<hg::train::Task> checked_task(const RunSpec& spec) {
  auto task = make_run_task(spec);
  if (task->kind() == hg::train::TaskKind::classification)
    throw hg::ValueError("heads_compare: task '" + spec.task.name +
                         "' is a classification task; the study trains GPTs on sequence and "
                         "regression tasks");
  return task;
}

bool has_tokens(const hg::train::Task& task) {
  return task.kind() == hg::train::TaskKind::sequence;
}

// The run's GPT with its initial weights (init_seed), on config.device.
std::shared_ptr<hg::nn::GPT> initial_model(const StudyConfig& config, const RunSpec& spec,
                                           const hg::train::Task& task) {
  hg::nn::GPTOptions options;
  options.vocab_size = task.vocab_size();
  options.max_len = task.max_len();
  options.d_model = spec.model.d_model;
  options.nhead = spec.model.heads;
  options.num_layers = spec.model.layers;
  // PyTorch's own split when d = E / H, so those models are exactly nn.MultiheadAttention.
  options.head_dim =
      spec.model.head_dim * spec.model.heads == spec.model.d_model ? 0 : spec.model.head_dim;
  options.input_dim = task.input_dim();
  options.causal = has_tokens(task);     // regression tasks are sets: bidirectional,
  options.positions = has_tokens(task);  // no positions
  hg::Generator init(init_seed(spec));
  auto model = std::make_shared<hg::nn::GPT>(options, &init);
  model->to(config.device);
  return model;
}

void count_parameters(hg::nn::GPT& model, RunResult& result) {
  result.params = 0;
  for (const hg::Tensor& p : model.parameters()) result.params += p.numel();
  result.head_params = hg::inspect::head_parameter_counts(model);
  result.attention_params = hg::inspect::attention_parameter_count(model);
}

// The model's plain forward on a batch (moved to config.device first).
hg::train::ForwardFn forward_of(const hg::nn::GPT& model, const hg::train::Task& task,
                                const StudyConfig& config) {
  const bool tokens = has_tokens(task);
  const hg::Device device = config.device;
  return [&model, tokens, device](const hg::train::Batch& cpu_or_device) {
    const hg::train::Batch b = cpu_or_device.to(device);
    return model.forward(tokens ? b.tokens : b.inputs, b.key_padding_mask);
  };
}

// Whether step `step` (1-based) records every head's z gradient norm: the first step, the
// evaluation steps and the last.
bool records_grads(const StudyConfig& config, const RunSpec& spec, std::int64_t step) {
  return step == 1 || step % config.eval_every == 0 || step == spec.task.steps;
}

// The gradient measurements of a training step (EvalPoint's grad_* and split_* fields).
struct GradRecord {
  std::vector<std::vector<double>> z, q, k, v, o, cos, split_cos, split_ratio;
};

// Mean of the off-diagonal entries of a [head][head] cosine matrix (NaN with one head).
double mean_pair_cosine(const std::vector<std::vector<double>>& m) {
  double sum = 0, n = 0;
  for (std::size_t i = 0; i < m.size(); ++i)
    for (std::size_t j = i + 1; j < m.size(); ++j) sum += m[i][j], n += 1;
  return n > 0 ? sum / n : std::numeric_limits<double>::quiet_NaN();
}

// This fixed-width model's gradients against the one-head model's with the same weights,
// on the same batch: per layer, the mean over the H slices of cosine and norm ratio, for
// q, k, v, o.
void record_split(hg::nn::GPT& model, const hg::train::Task& task, const hg::train::Batch& b,
                  const StudyConfig& config, GradRecord& out) {
  hg::nn::GPTOptions options = model.options();
  const std::int64_t heads = options.nhead;
  options.nhead = 1;
  options.head_dim = 0;
  hg::Generator scratch(0);  // overwritten at once
  hg::nn::GPT single(options, &scratch);
  single.to(config.device);
  single.load_state_dict(model.state_dict());
  const hg::Tensor logits =
      single.forward(has_tokens(task) ? b.tokens : b.inputs, b.key_padding_mask);
  task.loss(logits, b).backward();
  const auto slices = hg::inspect::compare_grad_slices(model, single, heads);
  const std::size_t layers = slices.size() / static_cast<std::size_t>(heads);
  out.split_cos.assign(layers, std::vector<double>(4, 0.0));
  out.split_ratio.assign(layers, std::vector<double>(4, 0.0));
  for (const auto& c : slices) {
    const double cos[4] = {c.cos_q, c.cos_k, c.cos_v, c.cos_o};
    const double ratio[4] = {c.ratio_q, c.ratio_k, c.ratio_v, c.ratio_o};
    for (int p = 0; p < 4; ++p) {
      out.split_cos[c.layer][p] += cos[p] / static_cast<double>(heads);
      out.split_ratio[c.layer][p] += ratio[p] / static_cast<double>(heads);
    }
  }
}

// Every head's gradients for the training batch of a step, with the weights `model` has
// before that step's update: a side pass on a copy of the model (z captured, the task
// loss's backward), so the training step itself never takes the composed attention path
// the capture needs. The same pass in both training paths. Fixed-width models with several
// heads are also compared with the one-head model of the same weights (record_split).
GradRecord head_grads(const hg::nn::GPT& model, const hg::train::Task& task,
                      const hg::train::Batch& batch, const StudyConfig& config) {
  hg::Generator scratch(0);  // the copy's initial weights are overwritten at once
  hg::nn::GPT copy(model.options(), &scratch);
  copy.to(config.device);
  copy.load_state_dict(model.state_dict());
  hg::inspect::Capture capture(copy, {"z"});
  const hg::train::Batch b = batch.to(config.device);
  hg::Tensor logits;
  {
    auto scope = capture.activate();
    logits = copy.forward(has_tokens(task) ? b.tokens : b.inputs, b.key_padding_mask);
  }
  task.loss(logits, b).backward();
  GradRecord out;
  for (const auto& n : hg::inspect::head_grad_norms(copy, &capture)) {
    if (static_cast<std::int64_t>(out.z.size()) <= n.layer) {
      for (auto* m : {&out.z, &out.q, &out.k, &out.v, &out.o}) m->resize(n.layer + 1);
    }
    out.z[n.layer].push_back(n.z);
    out.q[n.layer].push_back(n.w_q);
    out.k[n.layer].push_back(n.w_k);
    out.v[n.layer].push_back(n.w_v);
    out.o[n.layer].push_back(n.w_o);
  }
  for (const auto& c : hg::inspect::head_grad_cosines(copy))
    out.cos.push_back({mean_pair_cosine(c.w_q), mean_pair_cosine(c.w_k), mean_pair_cosine(c.w_v),
                       mean_pair_cosine(c.w_o)});
  const auto& o = model.options();
  if (o.nhead > 1 && (o.head_dim == 0 || o.head_dim * o.nhead == o.d_model))
    record_split(copy, task, b, config, out);
  return out;
}

void fill_grads(EvalPoint& p, GradRecord grads) {
  p.grad_z = std::move(grads.z);
  p.grad_q = std::move(grads.q);
  p.grad_k = std::move(grads.k);
  p.grad_v = std::move(grads.v);
  p.grad_o = std::move(grads.o);
  p.grad_cos = std::move(grads.cos);
  p.split_cos = std::move(grads.split_cos);
  p.split_ratio = std::move(grads.split_ratio);
}

// Step 1's gradients, kept as RunResult::initial (the evaluations start later).
void record_initial(const GradRecord& grads, RunResult& result) {
  result.initial.step = 1;
  fill_grads(result.initial, grads);
}

// char_lm's evaluation extras (EvalPoint): induction on Olsson's probe, and the
// in-context-learning score on the report split.
void record_language_scores(hg::nn::GPT& model, const hg::train::ForwardFn& forward,
                            const hg::train::Task& task, const StudyConfig& config, EvalPoint& p) {
  const std::int64_t t = task.max_len();
  const hg::train::Batch probe = hg::train::induction_probe(task, probe_half(task), kProbeRows, 0);
  p.induction = hg::inspect::mechanism_scores(model, forward, probe).induction_scored;
  p.icl =
      hg::inspect::in_context_score(model, forward, task, hg::train::Split::test,
                                    config.eval_batches, config.batch_size, t / 8, t / 4, 3 * t / 4)
          .score;
}

// The evaluation point at a training step: the training window's metrics, the report
// split's loss and accuracy, every head's mechanism scores and the step's z gradients.
void record_evaluation(hg::nn::GPT& model, const hg::train::Task& task, const StudyConfig& config,
                       const RunSpec& spec, const hg::train::Metrics& train, GradRecord grads,
                       RunResult& result) {
  const hg::train::ForwardFn forward = forward_of(model, task, config);
  EvalPoint p;
  p.step = train.step;
  p.train_loss = train.loss;
  p.train_accuracy = train.accuracy;
  const hg::train::Metrics report = hg::train::evaluate(
      model, forward, task, hg::train::Split::test, config.eval_batches, config.batch_size);
  p.loss = report.loss;
  p.accuracy = report.accuracy;
  const hg::inspect::MechanismScores scores = hg::inspect::mechanism_scores(
      model, forward, task, hg::train::Split::test, config.eval_batches, config.batch_size);
  p.previous_token = scores.previous_token;
  p.induction = scores.induction_scored;
  p.induction_all = scores.induction;
  if (task.name() == "char_lm") record_language_scores(model, forward, task, config, p);
  fill_grads(p, std::move(grads));
  if (!result.solved_step && p.accuracy >= spec.task.threshold) result.solved_step = p.step;
  if (!result.phase_step && max_of(p.induction) >= kInductionCutoff) result.phase_step = p.step;
  result.curve.push_back(std::move(p));
}

// RunResult::final_point: the report split's metrics and every head's mechanism scores on
// kFinalBatches batches (char_lm: induction on kFinalProbeRows probe rows, and the ICL score).
void record_final_point(hg::nn::GPT& model, const hg::train::Task& task, const StudyConfig& config,
                        const RunSpec& spec, RunResult& result) {
  const hg::train::ForwardFn forward = forward_of(model, task, config);
  const auto report = hg::train::Split::test;
  EvalPoint& p = result.final_point;
  p.step = spec.task.steps;
  const hg::train::Metrics m = hg::train::evaluate(
      model, forward, task, report, rows_for(task, kFinalBatches), config.batch_size);
  p.loss = m.loss;
  p.accuracy = m.accuracy;
  if (!has_tokens(task)) return;
  const hg::inspect::MechanismScores scores = hg::inspect::mechanism_scores(
      model, forward, task, report, rows_for(task, kFinalBatches), config.batch_size);
  p.previous_token = scores.previous_token;
  p.induction = scores.induction_scored;
  p.induction_all = scores.induction;
  if (task.name() != "char_lm") return;
  const std::int64_t t = task.max_len();
  const hg::train::Batch probe =
      hg::train::induction_probe(task, probe_half(task), rows_for(task, kFinalProbeRows), 0);
  p.induction = hg::inspect::mechanism_scores(model, forward, probe).induction_scored;
  p.icl = hg::inspect::in_context_score(model, forward, task, report, rows_for(task, kFinalBatches),
                                        config.batch_size, t / 8, t / 4, 3 * t / 4)
              .score;
}

// Head importance (selection split) and the pruning curves (report split): by importance,
// greedy and the random band.
void record_pruning(hg::nn::GPT& model, const hg::train::Task& task, const StudyConfig& config,
                    const RunSpec& spec, const hg::train::ForwardFn& forward, RunResult& result) {
  const auto selection = hg::train::Split::validation, report = hg::train::Split::test;
  const hg::inspect::HeadImportance importance = hg::inspect::head_importance(
      model, forward, task, selection, config.inspect_batches, config.batch_size);
  result.importance_raw = importance.raw;
  result.importance_normalized = importance.normalized;
  result.by_importance = curve_of(
      hg::inspect::pruning_curve(model, forward, task, report, config.inspect_batches,
                                 config.batch_size, hg::inspect::importance_order(importance)));
  // The greedy order (about heads^2 / 2 evaluations) and the random band (orders x heads,
  // memoized by head set, averaged over many orders) use one report batch per evaluation;
  // the greedy order's curve is then scored like the importance order's.
  result.greedy = curve_of(hg::inspect::pruning_curve(
      model, forward, task, report, config.inspect_batches, config.batch_size,
      hg::inspect::greedy_order(model, forward, task, report, 1, config.batch_size)));
  result.random = hg::inspect::random_pruning_band(
      model, forward, task, report, 1, config.batch_size, config.random_orders, spec.seed + 1);
}

// After training: the final metrics on both held-out splits, head importance (selection
// split), the pruning curves (report split), the patterns, the view and the patching.
// Returns the seconds it took.
double inspect_trained(hg::nn::GPT& model, const hg::train::Task& task, const StudyConfig& config,
                       const RunSpec& spec, RunResult& result) {
  const auto start = std::chrono::steady_clock::now();
  const hg::train::ForwardFn forward = forward_of(model, task, config);
  const auto selection = hg::train::Split::validation, report = hg::train::Split::test;
  const hg::train::Metrics val = hg::train::evaluate(model, forward, task, selection,
                                                     config.select_batches, config.batch_size);
  const hg::train::Metrics test =
      hg::train::evaluate(model, forward, task, report, config.eval_batches, config.batch_size);
  result.final_val_loss = val.loss;
  result.final_val_acc = val.accuracy;
  result.final_test_loss = test.loss;
  result.final_test_acc = test.accuracy;
  const auto inspect_start = std::chrono::steady_clock::now();

  if (config.prune) record_pruning(model, task, config, spec, forward, result);
  const auto inspected = std::chrono::steady_clock::now();
  if (has_tokens(task)) record_patterns(model, task, forward, result);
  if (has_tokens(task) && records_view(config, spec))
    record_view(model, task, config, forward, result);
  if (spec.task.name == "char_lm") {
    record_language_patching(model, task, spec, result);
  } else if (patched_task(spec.task.name)) {
    record_patching(model, task, result);
    if (records_circuit(spec)) record_recall_circuit(model, task, spec, result);
  }
  record_final_point(model, task, config, spec, result);
  result.inspect_seconds = std::chrono::duration<double>(inspected - inspect_start).count();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

hg::optim::LRSchedule schedule_of(const StudyConfig& config, const RunSpec& spec) {
  const std::int64_t warmup = std::max<std::int64_t>(
      1, static_cast<std::int64_t>(config.warmup_fraction * static_cast<double>(spec.task.steps)));
  return hg::optim::LRSchedule::cosine(spec.lr, std::min(warmup, spec.task.steps), spec.task.steps,
                                       spec.lr * 0.1);
}

hg::optim::AdamWOptions adamw_of(const StudyConfig& config, const RunSpec& spec) {
  return hg::optim::AdamWOptions().with_lr(spec.lr).with_weight_decay(config.weight_decay);
}

}  // namespace

namespace {

// A resumed run's result so far, cut back to the evaluations before `step` (the first one
// the resumed trainer makes: partial.json may have been written after the checkpoint), with
// the solve and phase steps read again from what is left.
void keep_before(RunResult& result, std::int64_t step, double threshold) {
  std::erase_if(result.curve, [step](const EvalPoint& p) { return p.step >= step; });
  result.solved_step.reset();
  result.phase_step.reset();
  for (const EvalPoint& p : result.curve) {
    if (!result.solved_step && p.accuracy >= threshold) result.solved_step = p.step;
    if (!result.phase_step && max_of(p.induction) >= kInductionCutoff) result.phase_step = p.step;
  }
}

// execute_run's training and inspection; `resume`: continue from the run's checkpoint
// (config.checkpoint_every > 0) when there is one.
RunResult train_and_inspect(const StudyConfig& config, const RunSpec& spec, bool resume) {
  const auto start = std::chrono::steady_clock::now();
  const bool checkpoints = config.checkpoint_every > 0;
  const PartialRun partial(config, spec);
  RunResult result;
  if (checkpoints && resume)
    if (std::optional<RunResult> earlier = partial.load()) result = std::move(*earlier);
  result.spec = spec;
  const double earlier_seconds = result.seconds;
  const auto task = checked_task(spec);
  const auto model = initial_model(config, spec, *task);
  count_parameters(*model, result);

  GradRecord pending_grads;
  hg::optim::AdamW optimizer(model->parameters(), adamw_of(config, spec));
  hg::train::TrainerOptions trainer_options;
  trainer_options.steps = spec.task.steps;
  trainer_options.batch_size = config.batch_size;
  trainer_options.eval_every = config.eval_every;
  trainer_options.eval_batches = 1;  // the trainer's own validation look: unused here
  trainer_options.clip_grad_norm = config.clip;
  trainer_options.progress = false;
  trainer_options.device = config.device;
  if (checkpoints) {
    trainer_options.out_dir = partial.dir();
    trainer_options.checkpoint_every = config.checkpoint_every;
    trainer_options.resume = resume;
    trainer_options.config.identity("heads_compare.run", spec.config_text(config));
  }
  trainer_options.after_backward = [&](std::int64_t step) {
    if (records_grads(config, spec, step))
      pending_grads = head_grads(
          *model, *task, task->batch(hg::train::Split::train, step - 1, config.batch_size), config);
    if (step == 1) record_initial(pending_grads, result);
  };
  bool first = true;
  trainer_options.on_evaluate = [&](const hg::train::Metrics& train, const hg::train::Metrics&) {
    if (first) keep_before(result, train.step, spec.task.threshold);
    first = false;
    record_evaluation(*model, *task, config, spec, train, std::move(pending_grads), result);
    // Before the trainer's checkpoint at this step: partial.json is never behind it.
    result.seconds = earlier_seconds + seconds_since(start);
    if (checkpoints) partial.save(result);
  };
  hg::train::Trainer trainer(*model, forward_of(*model, *task, config), *task, optimizer,
                             trainer_options, schedule_of(config, spec));
  const hg::train::TrainResult trained = trainer.fit();
  if (trained.resumed_from > 0)
    std::fprintf(stderr, "heads_compare: %s resumed from its checkpoint at step %lld\n",
                 spec.name().c_str(), static_cast<long long>(trained.resumed_from));
  inspect_trained(*model, *task, config, spec, result);
  result.seconds = earlier_seconds + seconds_since(start);
  return result;
}

}  // namespace

RunResult execute_run(const StudyConfig& config, const RunSpec& spec) {
  if (config.checkpoint_every <= 0) return train_and_inspect(config, spec, false);
  try {
    return train_and_inspect(config, spec, true);
  } catch (const hg::Error& e) {
    // A checkpoint that cannot be resumed (damaged, or from another build): start over.
    std::fprintf(stderr,
                 "heads_compare: %s: its checkpoint cannot be resumed (%s); trained "
                 "from the start\n",
                 spec.name().c_str(), e.what());
    PartialRun(config, spec).remove();
    return train_and_inspect(config, spec, false);
  }
}

void execute_ensemble(const StudyConfig& config, const std::vector<RunSpec>& specs,
                      const std::function<void(std::size_t, RunResult)>& on_run) {
  if (specs.empty()) return;
  const auto start = std::chrono::steady_clock::now();
  for (const RunSpec& s : specs)
    if (s.task.name != specs[0].task.name || s.task.steps != specs[0].task.steps ||
        s.model.layers != specs[0].model.layers || s.model.heads != specs[0].model.heads ||
        s.model.head_dim != specs[0].model.head_dim || s.model.d_model != specs[0].model.d_model)
      throw hg::ValueError("heads_compare: run " + s.name() + " cannot share an ensemble with " +
                           specs[0].name() + " (one task and one model per ensemble)");
  std::vector<std::unique_ptr<hg::train::Task>> tasks;
  std::vector<RunResult> results(specs.size());
  std::vector<const hg::nn::GPT*> members;
  std::vector<std::shared_ptr<hg::nn::GPT>> initial;
  std::vector<hg::optim::AdamWOptions> hyper;
  std::vector<hg::train::EnsembleMember> plan;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    tasks.push_back(checked_task(specs[i]));
    initial.push_back(initial_model(config, specs[i], *tasks.back()));
    members.push_back(initial.back().get());
    results[i].spec = specs[i];
    count_parameters(*initial.back(), results[i]);
    hyper.push_back(adamw_of(config, specs[i]));
    plan.push_back({tasks.back().get(), schedule_of(config, specs[i]), config.clip});
  }
  hg::nn::GPTEnsemble ensemble(members);
  initial.clear();
  hg::optim::EnsembleAdamW optimizer(ensemble.parameters(), hyper);
  std::vector<GradRecord> pending(specs.size());
  std::vector<std::shared_ptr<hg::nn::GPT>> finished(specs.size());
  hg::train::EnsembleTrainerOptions options;
  options.steps = specs[0].task.steps;
  options.batch_size = config.batch_size;
  options.eval_every = config.eval_every;
  std::unique_ptr<hg::train::EnsembleTrainer> trainer;
  options.after_backward = [&](std::int64_t m, std::int64_t step, const hg::train::Batch& batch) {
    const auto i = static_cast<std::size_t>(m);
    if (records_grads(config, specs[i], step))
      pending[i] = head_grads(*trainer->member_model(m), *tasks[i], batch, config);
    if (step == 1) record_initial(pending[i], results[i]);
  };
  options.on_evaluate = [&](std::int64_t m, const hg::train::Metrics& train) {
    const auto i = static_cast<std::size_t>(m);
    record_evaluation(*trainer->member_model(m), *tasks[i], config, specs[i], train,
                      std::move(pending[i]), results[i]);
    return false;
  };
  options.on_finish = [&](std::int64_t m, std::shared_ptr<hg::nn::GPT> model,
                          const hg::train::EnsembleFinish&) {
    finished[static_cast<std::size_t>(m)] = std::move(model);
  };
  trainer = std::make_unique<hg::train::EnsembleTrainer>(ensemble, optimizer, plan, options);
  trainer->fit();
  // Each run's share of the ensemble's training, then its own inspection.
  const double training = seconds_since(start) / static_cast<double>(specs.size());
  for (std::size_t i = 0; i < specs.size(); ++i) {
    results[i].seconds =
        training + inspect_trained(*finished[i], *tasks[i], config, specs[i], results[i]);
    finished[i].reset();
    on_run(i, std::move(results[i]));
  }
}

}  // namespace heads_compare
