// heads_compare: the single-head vs multi-head study, headgrad's main job.
//
// Trains toy GPTs that differ in how attention is split into heads (fixed width, fixed
// head dimension, head size at fixed H, one layer) on synthetic tasks where the literature
// predicts which way head count matters, each over a learning-rate grid and several
// seeds; compares every model at its own best learning rate (chosen on a selection split)
// on a separate report split, with intervals; and inspects every head (mechanism scores
// through training, gradient norms, importance, pruning, patterns). Writes report.md,
// summary.json, CSV tables and PNG plots; every finished run is cached, so an interrupted
// study resumes and a larger one reuses what exists.
//
//   heads_compare                                  # the default preset, <= 10 minutes
//   heads_compare --preset smoke                   # every part on tiny models, < 1 minute
//   heads_compare --preset full --out runs/full    # the write-up's study (hours, resumable)
//   heads_compare --preset full --seeds 20         # more seeds: the first 10 are reused
#include "command.hpp"

int main(int argc, char** argv) { return heads_compare::run_command_line(argc, argv); }
