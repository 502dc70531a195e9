// The interventions analysis of one trained recall model (associative_recall or mqar),
// shared by the patching program and heads_compare: the protocol of
// inspect/recall_patching.hpp on a batch of the task, then activation patching per head,
// per (head, position) and per residual position, attribution patching, zero / mean /
// resample ablation, direct logit attribution and the fewest heads that restore 90%.
// write_analysis saves each grid as .npy (float64) and .csv, and heatmaps as PNG.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "headgrad/inspect/logit_attribution.hpp"
#include "headgrad/inspect/patching.hpp"
#include "headgrad/inspect/recall_patching.hpp"
#include "headgrad/nn/gpt.hpp"
#include "headgrad/train/batch.hpp"
#include "headgrad/train/tasks.hpp"

namespace patching_study {

struct AnalysisOptions {
  // Which prompts are corrupted (inspect/recall_patching.hpp): the query (layer 0 cannot
  // show an effect at earlier positions) or the context (a previous-token head's output
  // differs, so path patching can show K-composition).
  headgrad::inspect::RecallCorruption corruption = headgrad::inspect::RecallCorruption::query;
  bool positions = true;  // the (layer, head, position) and residual grids
  bool ablations = true;  // zero, mean and resample ablation, attribution, DLA
  double restore_fraction = 0.9;
  std::uint64_t seed = 0;  // resample ablation's permutation
};

struct RecallAnalysis {
  std::string task;
  headgrad::inspect::RecallCorruption corruption = headgrad::inspect::RecallCorruption::query;
  headgrad::inspect::CorruptedPrompts prompts;  // what was patched (CPU tensors)
  std::int64_t examples = 0, dropped = 0;
  double clean_metric = 0, corrupted_metric = 0;  // mean logit differences
  // inspect/mechanism.hpp's induction score at the scored positions, [layer][head], on the
  // clean prompts patched (the batch's rows kept): which heads are induction heads.
  std::vector<std::vector<double>> induction;
  headgrad::inspect::PatchingGrid heads;           // z, (layer, head)
  headgrad::inspect::PatchingGrid head_positions;  // z, (layer, head, position)
  headgrad::inspect::PatchingGrid residual;        // resid_pre, (layer, position)
  headgrad::inspect::PatchingGrid attribution;     // attribution patching of z, (layer, head)
  std::vector<headgrad::inspect::AblationTable> ablations;  // zero, mean, resample
  headgrad::inspect::LogitAttribution logit_attribution;    // DLA of every component, clean
  // Path patching into the last layer's head with the largest z patching effect, through
  // its q, k and v (senders: every head of the earlier layers); empty for one layer.
  headgrad::inspect::HeadId path_receiver;
  std::vector<headgrad::inspect::PatchingGrid> paths;  // via q, k, v
  headgrad::inspect::Patching::Restoring restoring;
};

// The protocol's two runs on `batch` (the prompts, and a Patching whose metric is the logit
// difference at the scored position); ValueError when the runs tie (nothing was learnt).
struct RecallPatching {
  headgrad::inspect::CorruptedPrompts prompts;  // CPU tensors
  headgrad::inspect::ModelRun run;              // the model with the prompts' padding mask
  headgrad::inspect::LogitsMetric metric;
  bool masked = false;  // the prompts have a padding mask
  std::unique_ptr<headgrad::inspect::Patching> patching;
};
RecallPatching recall_patching(headgrad::nn::GPT& model, const headgrad::train::Task& task,
                               const headgrad::train::Batch& batch,
                               headgrad::inspect::RecallCorruption corruption);

// `model` in eval mode; `batch` a batch of `task` (associative_recall or mqar).
RecallAnalysis analyse_recall(headgrad::nn::GPT& model, const headgrad::train::Task& task,
                              const headgrad::train::Batch& batch,
                              const AnalysisOptions& options = {});

// Writes <dir>/prompts_{clean,corrupted,position,answer,wrong}.npy, patching_heads.{npy,csv},
// patching_head_positions.*, patching_residual.*, attribution_heads.*, path_patching_{q,k,v}.*,
// ablation.csv, heads.csv, logit_attribution.csv, summary.json and the heatmaps
// patching_heads.png and patching_head_positions.png with their gnuplot data and scripts
// (.dat, .gp; when gnuplot is installed). Returns the files written.
std::vector<std::string> write_analysis(const RecallAnalysis& analysis,
                                        const std::filesystem::path& dir);

// A (layer, head) grid as a heatmap PNG through gnuplot (script and data beside it);
// false when gnuplot is missing or fails.
bool draw_heatmap(const headgrad::inspect::PatchingGrid& grid, const std::filesystem::path& png,
                  const std::string& title);

}  // namespace patching_study
