// save(module, path) and load(module, path): a module's parameters and buffers to and
// from an .npz file, as torch::save / torch::load do for a module (the file holds the
// state_dict under PyTorch's names, so numpy.load and torch's load_state_dict read it).
//
//   headgrad::save(model, "model.npz");
//   headgrad::load(model, "model.npz");  // every entry checked before any is loaded
//
// For a whole run (optimizer, step, generator, configuration) use the trainer's
// checkpoints (train/trainer.hpp) or train::save_checkpoint / load_checkpoint.
#pragma once

#include <string>

#include "headgrad/nn/module.hpp"
#include "headgrad/train/checkpoint.hpp"

namespace headgrad {

// Writes module.state_dict() to `path` atomically (train::save_npz), with the module's
// attention layout (heads and head_dim of each attention layer) as the archive's comment.
void save(const nn::Module& module, const std::string& path);

// Reads `path` (train::load_npz: validated, hostile files refused) into the module: every
// parameter and buffer present, none unexpected, shapes equal, values finite; on any
// problem throws (IOError for the file, ValueError naming each entry) and the module is
// unchanged. Entries under "optimizer/" and "trainer/" (a trainer checkpoint) are ignored.
// When the file records an attention layout other than the module's (a state dict of an
// H = 1 model loaded into an H = 8 one: equal shapes), the load goes ahead and warns
// (headgrad::warn), naming both; options.warn_on_attention_mismatch = false silences it.
void load(nn::Module& module, const std::string& path, const train::LoadOptions& options = {});

}  // namespace headgrad
