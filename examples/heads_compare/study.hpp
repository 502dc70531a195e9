// heads_compare's experiment: toy GPTs that differ only in how their attention is split
// into heads (and, for the depth control, in how the heads are spread over layers),
// trained on the same data from the same initial weights, then inspected head by head.
//
// At a fixed d_model the parameters of a layer do not depend on the number of heads H
// (W_q, W_k, W_v, W_o are (E, E) whatever H): only head_dim = E / H and the softmaxes
// change. A run's initial weights are drawn from its seed alone, so runs with the same seed
// and layer count start from identical weights and see identical batches.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "headgrad/core/device.hpp"
#include "headgrad/inspect/heads.hpp"

namespace heads_compare {

struct StudyConfig {
  std::vector<std::string> tasks = {"associative_recall", "sort"};
  std::vector<std::int64_t> heads = {1, 2, 4, 8};
  std::vector<std::uint64_t> seeds = {0, 1, 2};
  std::int64_t steps = 1000;
  std::int64_t d_model = 64;
  std::int64_t layers = 2;
  std::int64_t length = 8;  // task length (pairs to recall, symbols to sort)
  std::int64_t batch_size = 32;
  double lr = 3e-3;
  std::int64_t warmup = 100;
  double weight_decay = 0.01;
  double clip = 1.0;
  std::int64_t eval_every = 50;
  std::int64_t eval_batches = 8;     // validation batches per evaluation (and at the end)
  std::int64_t inspect_batches = 4;  // validation batches for importance and pruning
  double threshold = 0.9;            // validation accuracy for "steps to threshold"
  bool depth_control = false;        // also 1 layer x 8 heads against 8 layers x 1 head
  int jobs = 1;                      // runs trained at the same time (one thread each)
  std::string out_dir;
  // Where every run trains and is inspected (models are initialized on the CPU, so a seed
  // gives the same initial weights on every device).
  headgrad::Device device = headgrad::Device::cpu();
};

// One trained model: a (task, layers, heads, seed) cell.
struct RunSpec {
  std::string task;
  std::int64_t layers = 0;
  std::int64_t heads = 0;
  std::uint64_t seed = 0;
  bool control = false;      // part of the depth control
  std::string name() const;  // "associative_recall-L2-H4-s0"
};

struct CurvePoint {
  std::int64_t step = 0;
  double train_loss = 0, train_accuracy = 0, val_loss = 0, val_accuracy = 0;
};

// One step's gradient norms of every head (inspect::HeadGradNorms, model order).
struct GradStep {
  std::int64_t step = 0;
  std::vector<headgrad::inspect::HeadGradNorms> heads;
};

struct RunResult {
  RunSpec spec;
  std::vector<CurvePoint> curve;
  std::vector<GradStep> grads;
  double final_loss = 0, final_accuracy = 0;
  std::int64_t steps_to_threshold = -1;  // first evaluated step at >= threshold, -1 never
  headgrad::inspect::HeadImportance importance;
  std::vector<headgrad::inspect::PruningPoint> pruning_by_importance, pruning_random;
  // Attention pattern of every head on validation example 0: [layer][head] (L x S
  // row-major), with L = S = pattern_len.
  std::vector<std::vector<std::vector<double>>> patterns;
  std::int64_t pattern_len = 0;
  std::vector<std::int64_t> sample_tokens;
  double seconds = 0;
};

// Every run of the study, in a fixed order.
std::vector<RunSpec> plan_runs(const StudyConfig& config);

// Trains and inspects one run (single-threaded; safe to call from several threads at once).
// Writes <out_dir>/runs/<name>/ (the trainer's metrics and checkpoint).
RunResult execute_run(const StudyConfig& config, const RunSpec& spec);

// Executes every run, config.jobs at a time; `on_done` (called under a lock) reports
// progress. Results come back in plan order, whatever the completion order.
std::vector<RunResult> execute_all(
    const StudyConfig& config, const std::vector<RunSpec>& runs,
    const std::function<void(const RunResult&, std::size_t done, std::size_t total)>& on_done);

}  // namespace heads_compare
