// heads_compare's presets, the models of each arm, the run plan and each run's cache key
// (see study.hpp).
#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "headgrad/core/error.hpp"
#include "study.hpp"

namespace heads_compare {

namespace {

// Bump when a change to the training or inspection code makes cached results stale.
// 3: activation patching of the recall tasks; 4: z gradients from a side pass, so every
// training step takes the fused attention path (low bits of every run changed)
constexpr int kResultVersion = 4;

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

std::vector<std::string> preset_names() { return {"smoke", "default", "full"}; }

StudyConfig preset_config(const std::string& preset) {
  StudyConfig c;
  c.preset = preset;
  if (preset == "smoke") {
    c.tasks = {setting("associative_recall", 4, 0, 0, 40, 0.9), setting("mqar", 2, 16, 0, 40, 0.9),
               setting("nearest_neighbour", 4, 0, 4, 40, 0.9),
               setting("char_lm", 16, 0, 0, 40, 0.35)};
    c.arms = {"fixed_width", "fixed_head_dim", "head_size", "one_layer"};
    c.heads = {1, 2};
    c.d_model = 16;
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
  } else if (preset == "default") {
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
        "is left out for time, here and in the full preset), 3 learning rates and 3 seeds per cell "
        "(the "
        "full preset: 6 tasks, up to 4 arms, 4 learning rates, 10 seeds). With n = 3 per cell "
        "the intervals are wide: read it as a demonstration of the instrument, and "
        "docs/research/heads.md for the study";
  } else if (preset == "full") {
    // The synthetic tasks: about 2 hours on 2 cores (each task's steps from where its curves
    // flatten in trial runs); the arms that need extra models run on single-query recall
    // only. char_lm (T = 64) adds 240 runs: 60-100 s each measured while another study
    // shared the 2 cores, so roughly one to two hours more.
    c.tasks = {setting("associative_recall", 8, 0, 0, 1000, 0.9),
               setting("mqar", 8, 32, 0, 1000, 0.9),
               setting("sort", 8, 0, 0, 500, 0.9),
               setting("nearest_neighbour", 16, 0, 16, 1000, 0.9),
               setting("d_retrieval", 16, 0, 4, 800, 0.9),
               setting("char_lm", 64, 0, 0, 1000, 0.35)};
    c.arms = {"fixed_width", "fixed_head_dim", "head_size", "one_layer"};
    c.fixed_head_dim_heads = {1, 2, 4};
    c.head_size_heads = 4;
    c.head_sizes = {4, 8, 16, 32};
    c.control_tasks = {"associative_recall"};
    c.lrs = {3e-4, 1e-3, 3e-3, 1e-2};
    c.seeds = seed_range(10);
    c.description =
        "full preset: 6 tasks (5 synthetic, and char_lm: character-level language modelling "
        "on the Debian fortunes corpus, context 64); on each the fixed-width arm (E = 64, H = 1, "
        "2, 4, 8) and the "
        "fixed-head-dim arm (d = 16, H = 1, 2, 4); on associative_recall also the head_size "
        "arm (E = 64, H = 4, d = 4, 8, 16, 32) and the one_layer arm (E = 64, H = 1, 2, 4, 8); "
        "4 learning rates and 10 seeds per cell";
  } else {
    throw headgrad::ValueError("heads_compare: unknown --preset '" + preset +
                               "'; known: smoke, default, full");
  }
  return c;
}

std::vector<ModelShape> models_for(const StudyConfig& config, const TaskSetting& task) {
  std::vector<ModelShape> models;
  const bool controls = config.control_tasks.empty() ||
                        std::find(config.control_tasks.begin(), config.control_tasks.end(),
                                  task.name) != config.control_tasks.end();
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
    } else {
      throw headgrad::ValueError("heads_compare: unknown arm '" + arm +
                                 "'; known: fixed_width, fixed_head_dim, head_size, one_layer");
    }
  }
  return models;
}

std::vector<RunSpec> plan_runs(const StudyConfig& config) {
  std::vector<RunSpec> runs;
  for (const TaskSetting& task : config.tasks)
    for (const ModelShape& model : models_for(config, task))
      for (double lr : config.lrs)
        for (std::uint64_t seed : config.seeds) runs.push_back({task, model, lr, seed});
  return runs;
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
  // The corpus names char_lm's data (the other tasks' keys stay as they were).
  if (task.name == "char_lm")
    j["task"]["corpus"] = task.corpus.empty() ? headgrad::train::kDefaultCorpus : task.corpus;
  return j.dump();
}

std::string hash_hex(const std::string& text) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(fnv1a(text)));
  return hex;
}

std::string RunSpec::key(const StudyConfig& config) const { return hash_hex(config_text(config)); }

}  // namespace heads_compare
