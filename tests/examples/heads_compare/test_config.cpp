// heads_compare's follow-up planning (config.cpp): which cached runs the circuit stage
// trains again.
#include <doctest/doctest.h>

#include <set>
#include <string>
#include <vector>

#include "study.hpp"

using namespace heads_compare;

namespace {

// A finished associative_recall run of `arm` (two layers) at `lr`, cached without a circuit.
RunResult recall_run(const std::string& arm, double lr, double val_acc, std::int64_t steps = 1000) {
  RunResult r;
  r.spec.task.name = "associative_recall";
  r.spec.task.steps = steps;
  r.spec.model = ModelShape{arm, 2, 4, 16, 64};
  r.spec.lr = lr;
  r.final_val_acc = val_acc;
  r.final_val_loss = 1 - val_acc;
  return r;
}

std::vector<std::string> arms_of(const std::vector<RunSpec>& specs) {
  std::vector<std::string> arms;
  for (const RunSpec& s : specs) arms.push_back(s.model.arm + "@" + std::to_string(s.lr));
  return arms;
}

}  // namespace

TEST_CASE("circuit_runs: best-rate runs of fixed_width, head_grid and their long arms only") {
  StudyConfig config;
  config.arms = {"fixed_width", "fixed_head_dim", "head_size", "head_grid"};
  config.long_budget = 3;
  const std::vector<RunResult> results = {
      recall_run("fixed_width", 1e-3, 0.9),         recall_run("fixed_width", 3e-3, 0.5),
      recall_run("fixed_head_dim", 1e-3, 0.9),      recall_run("head_size", 1e-3, 0.9),
      recall_run("head_grid", 3e-3, 0.8),           recall_run("head_grid", 1e-3, 0.4),
      recall_run("fixed_width_3x", 1e-3, 1.0, 3000)};
  // Each arm's best rate (highest selection accuracy); fixed_head_dim and head_size have
  // one too, but their cached runs are left as they are.
  CHECK(arms_of(circuit_runs(config, results)) ==
        std::vector<std::string>{"fixed_width@" + std::to_string(1e-3),
                                 "head_grid@" + std::to_string(3e-3),
                                 "fixed_width_3x@" + std::to_string(1e-3)});
  CHECK(circuit_stage_arm(config, "head_grid_3x"));
  CHECK_FALSE(circuit_stage_arm(config, "one_layer"));

  // A run that already carries its circuit is not trained again.
  std::vector<RunResult> recorded = results;
  recorded[0].circuit.corruption = "context";
  recorded[0].circuit.prompts = 8;
  REQUIRE(recorded[0].circuit.recorded());
  CHECK(circuit_runs(config, recorded).size() == 2);
  // Nor is anything under --cached-only.
  config.cached_only = true;
  CHECK(circuit_runs(config, results).empty());
}

TEST_CASE("circuit_runs: a task whose recorded circuits never reach the bar is left out") {
  StudyConfig config;
  config.arms = {"fixed_width", "head_grid"};
  config.seeds = {0, 1};
  // The fixed_width run is cached without a circuit; two head_grid runs recorded one.
  std::vector<RunResult> results = {recall_run("fixed_width", 1e-3, 0.9),
                                    recall_run("head_grid", 1e-3, 0.9),
                                    recall_run("head_grid", 3e-3, 0.5)};
  for (std::size_t i = 1; i < results.size(); ++i) {
    results[i].circuit.corruption = "context";
    results[i].circuit.clean = 0.5;
    results[i].circuit.corrupted = 0.0;  // a gap of 0.5 < kPatchingMinGap
  }
  CHECK(tasks_without_counted_circuits(config, results) ==
        std::set<std::string>{"associative_recall"});
  CHECK(circuit_runs(config, results).empty());
  // One circuit at the bar keeps the task.
  results[2].circuit.clean = kPatchingMinGap;
  CHECK(tasks_without_counted_circuits(config, results).empty());
  CHECK(circuit_runs(config, results).size() == 1);
  // So do fewer recorded circuits than the study's seeds.
  results[2].circuit.clean = 0.5;
  config.seeds = {0, 1, 2};
  CHECK(tasks_without_counted_circuits(config, results).empty());
  CHECK(circuit_runs(config, results).size() == 1);
}

TEST_CASE("followup_runs: a rate past the edge that another arm already trained joins this arm") {
  // The fixed_width grid 1e-3, 3e-3, 1e-2 and the head_grid's 1e-2, 3e-2 for the same
  // model (H = 4, d = 16): each arm's extension is a run the other arm holds, so it is
  // listed in this arm too (read from the cache, not trained), not left out as "planned".
  StudyConfig config;
  config.arms = {"fixed_width", "head_grid"};
  config.lrs = {1e-3, 3e-3, 1e-2};
  config.seeds = {0};
  config.extend_lrs = true;
  std::vector<RunResult> results = {
      recall_run("fixed_width", 1e-3, 0.2), recall_run("fixed_width", 3e-3, 0.5),
      recall_run("fixed_width", 1e-2, 0.9), recall_run("head_grid", 1e-2, 0.9),
      recall_run("head_grid", 3e-2, 0.8)};
  for (RunResult& r : results) r.spec.task.grid_lrs = {1e-2, 3e-2};
  CHECK(arms_of(followup_runs(config, results, 1)) ==
        std::vector<std::string>{"fixed_width@" + std::to_string(3e-2),
                                 "head_grid@" + std::to_string(3e-3)});
  // Once listed, not again.
  RunResult fixed = results[4], grid = results[1];
  fixed.spec.model.arm = "fixed_width";
  grid.spec.model.arm = "head_grid";
  results.push_back(fixed);
  results.push_back(grid);
  CHECK(followup_runs(config, results, 1).empty());
}
