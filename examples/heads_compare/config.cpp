// heads_compare's presets, the models of each arm, the run plan and each run's cache key
// (see study.hpp).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "headgrad/core/error.hpp"
#include "study.hpp"

namespace heads_compare {

namespace {

// Bump when a change to the training or inspection code makes cached results stale.
// 3: activation patching of the recall tasks; 4: z gradients from a side pass, so every
// training step takes the fused attention path (low bits of every run changed); 5: the
// gradient question's fields, RunResult::final_point and char_lm's patching
constexpr int kResultVersion = 5;

std::uint64_t fnv1a(const std::string& text) {
  std::uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char c : text) h = (h ^ c) * 0x100000001B3ull;
  return h;
}

// A task of a preset (char_lm on the default corpus).
TaskSetting setting(const char* name, std::int64_t length, std::int64_t context, std::int64_t dim,
                    std::int64_t steps, double threshold) {
  return {name, length, context, dim, steps, threshold, ""};
}

std::vector<std::uint64_t> seed_range(std::uint64_t n) {
  std::vector<std::uint64_t> seeds;
  for (std::uint64_t s = 0; s < n; ++s) seeds.push_back(s);
  return seeds;
}

}  // namespace

namespace {

// --preset smoke: every part of the study on tiny models.
StudyConfig smoke_preset() {
  StudyConfig c;
  c.tasks = {setting("associative_recall", 4, 0, 0, 40, 0.9), setting("mqar", 2, 16, 0, 40, 0.9),
             setting("nearest_neighbour", 4, 0, 4, 40, 0.9),
             setting("char_lm", 16, 0, 0, 40, 0.35)};
  c.arms = {"fixed_width", "fixed_head_dim", "head_size", "one_layer", "head_grid"};
  c.heads = {1, 2};
  c.d_model = 16;
  c.grid_heads = {1, 2};
  c.grid_head_dims = {4, 16};
  c.grid_tasks = {"associative_recall", "char_lm"};
  c.fixed_head_dim = 4;
  c.head_size_heads = 2;
  c.head_sizes = {4, 8};
  c.control_tasks = {"associative_recall"};
  c.lrs = {3e-3, 1e-2};
  c.seeds = {0, 1};
  c.eval_every = 10;
  c.eval_batches = 1;
  c.select_batches = 1;
  c.inspect_batches = 1;
  c.random_orders = 10;
  c.batch_size = 16;
  c.description =
      "smoke preset: a plumbing check of every part of the study on tiny models and few "
      "steps (the task table gives them); its numbers mean nothing";
  return c;
}

// --preset default: the reduced design that fits 10 minutes on 2 cores.
StudyConfig default_preset() {
  StudyConfig c;
  c.tasks = {setting("associative_recall", 8, 0, 0, 1000, 0.9)};
  c.arms = {"fixed_width", "fixed_head_dim"};
  c.heads = {1, 2, 4, 8};
  c.fixed_head_dim_heads = {1, 2, 4};
  c.lrs = {1e-3, 3e-3, 1e-2};
  c.seeds = {0, 1, 2};
  c.description =
      "default preset, a reduced design that fits 10 minutes on 2 cores: one task "
      "(single-query associative recall, 8 pairs), the fixed-width arm (E = 64, H = 1, 2, "
      "4, 8) and the fixed-head-dim arm (d = 16, H = 1, 2, 4; its H = 8 model, E = 128, "
      "is left out for time), 3 learning rates and 3 seeds per cell, no rates past the "
      "grid's edge and no long budget (the full preset: 6 tasks, up to 4 arms, 4 learning "
      "rates extended past the edge, 10 seeds, 3x budgets). With n = 3 per cell "
      "the intervals are wide: read it as a demonstration of the instrument, and "
      "docs/research/heads.md for the study";
  return c;
}

// --preset full: the study docs/research/heads.md cites.
StudyConfig full_preset() {
  StudyConfig c;
  // The synthetic tasks: about 2 hours on 2 cores (each task's steps from where its curves
  // flatten in trial runs); the arms that need extra models run on single-query recall
  // only. char_lm (T = 64) adds 320 runs of about 60-70 s each (two at a time on 2
  // cores); fixed_head_dim H = 8 (E = 128), the rates past the grid's edge and the 3x
  // budgets add more: several hours in all, resumable (scripts/full_study.sh).
  c.tasks = {setting("associative_recall", 8, 0, 0, 1000, 0.9),
             setting("mqar", 8, 32, 0, 1000, 0.9),
             setting("sort", 8, 0, 0, 500, 0.9),
             setting("nearest_neighbour", 16, 0, 16, 1000, 0.9),
             setting("d_retrieval", 16, 0, 4, 800, 0.9),
             setting("char_lm", 64, 0, 0, 1000, 0.35)};
  c.arms = {"fixed_width", "fixed_head_dim", "head_size", "one_layer", "head_grid"};
  // The head_grid arm (H x d at E = 64): three rates around the optimum the fixed-width
  // arm found on each task, extended past the edge like every arm.
  c.grid_tasks = {"associative_recall", "mqar", "nearest_neighbour", "char_lm"};
  for (TaskSetting& t : c.tasks)
    t.grid_lrs = t.name == "associative_recall" || t.name == "mqar"
                     ? std::vector<double>{3e-4, 1e-3, 3e-3}
                     : std::vector<double>{3e-3, 1e-2, 3e-2};
  c.head_size_heads = 4;
  c.head_sizes = {4, 8, 16, 32};
  c.control_tasks = {"associative_recall"};
  c.lrs = {3e-4, 1e-3, 3e-3, 1e-2};
  c.seeds = seed_range(10);
  c.extend_lrs = true;
  c.long_budget = 3;
  // No view.html: char_lm's 64 x 64 patterns for every model would make it tens of MB,
  // and runs restored from scripts/study_archive.py carry no view (--view-seeds 0 adds it).
  c.view_seeds.clear();
  c.description =
      "full preset: 6 tasks (5 synthetic, and char_lm: character-level language modelling "
      "on the Debian fortunes corpus, context 64); on each the fixed-width arm (E = 64, H = 1, "
      "2, 4, 8) and the fixed-head-dim arm (d = 16, H = 1, 2, 4, 8); on associative_recall "
      "also the head_size arm (E = 64, H = 4, d = 4, 8, 16, 32) and the one_layer arm "
      "(E = 64, H = 1, 2, 4, 8); 4 learning rates and 10 seeds per cell; a model whose best "
      "rate is at the grid's edge also trains one rate past it; every fixed-width model also "
      "trains at 3x its task's steps at its best rate; the head_grid arm (E = 64, H = 1, 2, 4, 8 "
      "x d = 8, 16, 64) on associative_recall, mqar, nearest_neighbour and char_lm at three "
      "rates around each task's optimum (1e-3 or 3e-3 for recall and mqar, 1e-2 for the "
      "others), its synthetic tasks' models also at 3x; no interactive view (--view-seeds "
      "adds one)";
  return c;
}

// --preset text_long: char_lm at T = 256 for 10,000 steps.
StudyConfig text_long_preset() {
  StudyConfig c;
  // char_lm long enough to form its mechanism: T = 256, the rate chosen at a tenth of the
  // budget (1000 steps, extended past the grid's edge), then 10x that (10,000 steps) at
  // the chosen rate, n = 3 on the CPU. Runs checkpoint every 1000 steps (so one at a
  // time): a sitting that ends mid-run loses at most 1000 steps of it.
  c.tasks = {setting("char_lm", 256, 0, 0, 1000, 0.35)};
  c.arms = {"fixed_width"};
  c.heads = {1, 2, 8};
  c.lrs = {3e-3, 1e-2, 3e-2};
  c.seeds = seed_range(3);
  c.extend_lrs = true;
  c.long_budget = 10;
  c.eval_every = 100;
  c.checkpoint_every = 1000;
  c.prune = false;
  c.view_seeds.clear();
  c.description =
      "text_long preset: character-level language modelling on the Debian fortunes corpus "
      "at context T = 256, the fixed-width arm (E = 64, H = 1, 2, 8), each H's rate chosen "
      "among 3e-3, 1e-2 and 3e-2 (extended one step past the edge) at 1000 steps, then "
      "10,000 steps at that rate (fixed_width_10x), 3 seeds; the induction probe and the "
      "ICL score at every evaluation (every 100 steps); no pruning";
  return c;
}

// Every preset, once: its name and its design.
constexpr std::pair<const char*, StudyConfig (*)()> kPresets[] = {{"smoke", smoke_preset},
                                                                  {"default", default_preset},
                                                                  {"full", full_preset},
                                                                  {"text_long", text_long_preset}};

}  // namespace

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  for (const auto& preset : kPresets) names.emplace_back(preset.first);
  return names;
}

StudyConfig preset_config(const std::string& preset) {
  for (const auto& [name, make] : kPresets)
    if (preset == name) {
      StudyConfig c = make();
      c.preset = preset;
      return c;
    }
  std::string known;
  for (const auto& name : preset_names()) known += (known.empty() ? "" : ", ") + name;
  throw headgrad::ValueError("heads_compare: unknown --preset '" + preset + "'; known: " + known);
}

namespace {

// Whether `task` is one of `names` (empty = every task).
bool among(const std::vector<std::string>& names, const std::string& task) {
  return names.empty() || std::find(names.begin(), names.end(), task) != names.end();
}

}  // namespace

std::vector<ModelShape> models_for(const StudyConfig& config, const TaskSetting& task) {
  std::vector<ModelShape> models;
  const bool controls = among(config.control_tasks, task.name);
  for (const std::string& arm : config.arms) {
    if (arm == "fixed_width" || arm == "one_layer") {
      if (arm == "one_layer" && !controls) continue;
      for (std::int64_t h : config.heads)
        models.push_back(
            {arm, arm == "one_layer" ? 1 : config.layers, h, config.d_model / h, config.d_model});
    } else if (arm == "fixed_head_dim") {
      for (std::int64_t h :
           config.fixed_head_dim_heads.empty() ? config.heads : config.fixed_head_dim_heads)
        models.push_back({arm, config.layers, h, config.fixed_head_dim, config.fixed_head_dim * h});
    } else if (arm == "head_size") {
      if (!controls) continue;
      for (std::int64_t d : config.head_sizes)
        models.push_back({arm, config.layers, config.head_size_heads, d, config.d_model});
    } else if (arm == "head_grid") {
      if (!among(config.grid_tasks, task.name)) continue;
      for (std::int64_t h : config.grid_heads)
        for (std::int64_t d : config.grid_head_dims)
          models.push_back({arm, config.layers, h, d, config.d_model});
    } else {
      throw headgrad::ValueError(
          "heads_compare: unknown arm '" + arm +
          "'; known: fixed_width, fixed_head_dim, head_size, one_layer, head_grid");
    }
  }
  return models;
}

std::vector<RunSpec> plan_runs(const StudyConfig& config) {
  std::vector<RunSpec> runs;
  for (const TaskSetting& task : config.tasks)
    for (const ModelShape& model : models_for(config, task))
      for (double lr : lrs_for(config, task, model))
        for (std::uint64_t seed : config.seeds) runs.push_back({task, model, lr, seed});
  return runs;
}

const std::vector<double>& lrs_for(const StudyConfig& config, const TaskSetting& task,
                                   const ModelShape& model) {
  return model.arm == "head_grid" && !task.grid_lrs.empty() ? task.grid_lrs : config.lrs;
}

std::string RunSpec::name() const {
  char lr_text[32];
  std::snprintf(lr_text, sizeof lr_text, "%g", lr);
  return task.name + "-" + model.arm + "-L" + std::to_string(model.layers) + "-H" +
         std::to_string(model.heads) + "-d" + std::to_string(model.head_dim) + "-E" +
         std::to_string(model.d_model) + "-lr" + lr_text + "-s" + std::to_string(seed);
}

std::string RunSpec::config_text(const StudyConfig& c) const {
  // nlohmann::json keeps keys sorted, so the text is canonical. The arm's name is left
  // out: the same model in two arms is one run.
  nlohmann::json j = {{"version", kResultVersion},
                      {"task",
                       {{"name", task.name},
                        {"length", task.length},
                        {"context", task.context},
                        {"dim", task.dim},
                        {"steps", task.steps},
                        {"threshold", task.threshold}}},
                      {"model",
                       {{"layers", model.layers},
                        {"heads", model.heads},
                        {"head_dim", model.head_dim},
                        {"d_model", model.d_model}}},
                      {"lr", lr},
                      {"seed", seed},
                      {"batch_size", c.batch_size},
                      {"warmup_fraction", c.warmup_fraction},
                      {"weight_decay", c.weight_decay},
                      {"clip", c.clip},
                      {"eval_every", c.eval_every},
                      {"eval_batches", c.eval_batches},
                      {"select_batches", c.select_batches},
                      {"inspect_batches", c.inspect_batches},
                      {"random_orders", c.random_orders},
                      {"device", c.device.str()}};
  if (!c.prune) j["prune"] = false;  // (runs with pruning keep the keys they had)
  // The corpus names char_lm's data (the other tasks' keys stay as they were).
  if (task.name == "char_lm")
    j["task"]["corpus"] = task.corpus.empty() ? headgrad::train::default_corpus() : task.corpus;
  return j.dump();
}

std::string long_budget_arm(const StudyConfig& config, const std::string& arm) {
  return arm + "_" + std::to_string(config.long_budget) + "x";
}

bool has_long_budget(const std::string& arm) { return arm == "fixed_width" || arm == "head_grid"; }

std::vector<std::string> reported_arms(const StudyConfig& config) {
  std::vector<std::string> arms;
  for (const std::string& arm : config.arms) {
    arms.push_back(arm);
    if (config.long_budget > 1 && has_long_budget(arm))
      arms.push_back(long_budget_arm(config, arm));
  }
  return arms;
}

std::string long_budget_base(const StudyConfig& config, const std::string& arm) {
  for (const char* base : {"fixed_width", "head_grid"})
    if (arm == long_budget_arm(config, base)) return base;
  return "";
}

double lr_past_edge(double edge, bool up) {
  // edge = m * 10^e with m in [1, 10): the 1-3-10 grid's neighbours.
  const double e = std::floor(std::log10(edge) + 1e-9);
  const double m = edge / std::pow(10.0, e);
  const bool one = m < 2;  // m is 1 (else 3)
  if (up) return one ? 3 * std::pow(10.0, e) : std::pow(10.0, e + 1);
  return one ? 3 * std::pow(10.0, e - 1) : std::pow(10.0, e);
}

namespace {

// Every seed of the study at `lr`, for `task` and `model`.
void add_seeds(const StudyConfig& config, const TaskSetting& task, const ModelShape& model,
               double lr, std::vector<RunSpec>& runs) {
  for (std::uint64_t seed : config.seeds) runs.push_back({task, model, lr, seed});
}

// Whether `lr` is the lowest (up false) or highest rate `model` trains at before the
// follow-up stages.
bool on_grid_edge(const StudyConfig& config, const RateChoice& choice, double lr, bool up) {
  const std::vector<double>& lrs = lrs_for(config, choice.task, choice.model);
  const auto [low, high] = std::minmax_element(lrs.begin(), lrs.end());
  return lrs.size() > 1 && lr == (up ? *high : *low);
}

}  // namespace

std::vector<RunSpec> followup_runs(const StudyConfig& config, const std::vector<RunResult>& results,
                                   int stage) {
  std::vector<RunSpec> runs;
  // By arm and key: a run another arm already holds (the head_grid's diagonal is the
  // fixed_width arm's models) is added to this arm too, and read from the cache, not
  // trained again; leaving it out would leave a hole in this arm's grid.
  std::set<std::string> planned;
  auto arm_key = [&](const RunSpec& r) { return r.model.arm + " " + r.key(config); };
  for (const RunResult& r : results) planned.insert(arm_key(r.spec));
  for (const RateChoice& c : choose_rates(results)) {
    if (stage == 1 && config.extend_lrs) {
      for (const bool up : {false, true})
        if ((up ? c.at_high_edge() : c.at_low_edge()) && on_grid_edge(config, c, c.best, up))
          add_seeds(config, c.task, c.model, lr_past_edge(c.best, up), runs);
    } else if (stage == 2 && config.long_budget > 1 && has_long_budget(c.model.arm) &&
               !(c.model.arm == "head_grid" && c.task.name == "char_lm")) {
      TaskSetting longer = c.task;
      longer.steps = c.task.steps * config.long_budget;
      ModelShape model = c.model;
      model.arm = long_budget_arm(config, c.model.arm);
      add_seeds(config, longer, model, c.best, runs);
    }
  }
  runs.erase(std::remove_if(runs.begin(), runs.end(),
                            [&](const RunSpec& r) { return planned.count(arm_key(r)) > 0; }),
             runs.end());
  return runs;
}

bool circuit_stage_arm(const StudyConfig& config, const std::string& arm) {
  return has_long_budget(arm) || !long_budget_base(config, arm).empty();
}

std::set<std::string> tasks_without_counted_circuits(const StudyConfig& config,
                                                     const std::vector<RunResult>& results) {
  std::map<std::string, std::pair<std::size_t, bool>> seen;  // task: recorded, any counted
  for (const RunResult& r : results) {
    if (!r.circuit.recorded()) continue;
    auto& [recorded, counted] = seen[r.spec.task.name];
    ++recorded;
    counted = counted || r.circuit.clean - r.circuit.corrupted >= kPatchingMinGap;
  }
  std::set<std::string> tasks;
  const std::size_t enough = std::max<std::size_t>(config.seeds.size(), 1);
  for (const auto& [task, tally] : seen)
    if (tally.first >= enough && !tally.second) tasks.insert(task);
  return tasks;
}

std::vector<RunSpec> circuit_runs(const StudyConfig& config,
                                  const std::vector<RunResult>& results) {
  std::vector<RunSpec> runs;
  if (config.cached_only) return runs;
  const std::set<std::string> skipped = tasks_without_counted_circuits(config, results);
  auto wanted = [&](const RunResult& r) {
    return records_circuit(r.spec) && !r.circuit.recorded() &&
           circuit_stage_arm(config, r.spec.model.arm) && !skipped.count(r.spec.task.name);
  };
  std::set<std::string> planned;
  for (const RateChoice& c : choose_rates(results))
    for (const RunResult& r : results)
      if (r.spec.lr == c.best && r.spec.task.name == c.task.name &&
          r.spec.task.steps == c.task.steps && r.spec.model.arm == c.model.arm &&
          r.spec.model.heads == c.model.heads && r.spec.model.head_dim == c.model.head_dim &&
          r.spec.model.d_model == c.model.d_model && r.spec.model.layers == c.model.layers &&
          wanted(r) && planned.insert(r.spec.key(config)).second)
        runs.push_back(r.spec);
  return runs;
}

void sort_results(const StudyConfig& config, std::vector<RunResult>& results) {
  auto position = [&](const RunSpec& r) {
    std::size_t task = 0, arm = config.arms.size(), model = 0;
    while (task < config.tasks.size() && config.tasks[task].name != r.task.name) ++task;
    const std::string base = long_budget_base(config, r.model.arm);
    const bool long_run = !base.empty();
    const std::string arm_name = long_run ? base : r.model.arm;
    arm = static_cast<std::size_t>(std::find(config.arms.begin(), config.arms.end(), arm_name) -
                                   config.arms.begin());
    if (long_run) arm += config.arms.size();  // after every arm's own runs
    if (task < config.tasks.size()) {
      const auto models = models_for(config, config.tasks[task]);
      while (model < models.size() &&
             !(models[model].arm == arm_name && models[model].heads == r.model.heads &&
               models[model].head_dim == r.model.head_dim &&
               models[model].d_model == r.model.d_model && models[model].layers == r.model.layers))
        ++model;
    }
    return std::make_tuple(task, arm, model, r.lr, r.seed);
  };
  std::stable_sort(results.begin(), results.end(), [&](const RunResult& a, const RunResult& b) {
    return position(a.spec) < position(b.spec);
  });
}

std::string hash_hex(const std::string& text) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(fnv1a(text)));
  return hex;
}

std::string RunSpec::key(const StudyConfig& config) const { return hash_hex(config_text(config)); }

}  // namespace heads_compare
