// Checkpoints: a model, its optimizer and the trainer's own state in one .npz file (see
// train/npz.hpp: written atomically, read with validation), and a Generator's state as a
// tensor so that a resumed run draws the same random numbers.
//
// Layout of the archive (every entry an array numpy.load gives back):
//   "<name>"              the model's state_dict under its own (PyTorch) names, e.g.
//                         "layers.0.self_attn.in_proj_weight", so torch's load_state_dict
//                         takes the plain entries
//   "optimizer/<key>"     the optimizer's state_dict ("optimizer/state.0.exp_avg", ...)
//   "trainer/<key>"       whatever the trainer keeps (step, generator state, ...)
// and, as the zip archive's comment (which numpy and torch ignore), the model's attention
// layout: {"headgrad": {"attention": [{"layer": "layers.0.self_attn", "heads": 8,
// "head_dim": 8}, ...]}}. headgrad::save writes the same comment. A model with H = 1 and
// one with H = 8 at the same width have the same parameter shapes, so nothing else would
// tell them apart: loading warns (headgrad::warn) when the recorded layout differs from
// the model's, and names both.
//
// Devices: tensors on a GPU are copied to the CPU to be written (the file is the same
// whatever the device), and loading copies the file's values into the model's and the
// optimizer's tensors where they are, so a checkpoint moves freely between the CPU and a
// GPU.
#pragma once

#include <string>

#include "headgrad/core/generator.hpp"
#include "headgrad/core/options.hpp"
#include "headgrad/core/tensor.hpp"
#include "headgrad/nn/module.hpp"
#include "headgrad/train/npz.hpp"

namespace headgrad::optim {
class Optimizer;
}

namespace headgrad::train {

inline constexpr const char* kOptimizerPrefix = "optimizer/";
inline constexpr const char* kTrainerPrefix = "trainer/";

// Writes the model's state_dict, the optimizer's (when not null) and `trainer_state` to
// `path`, atomically. Throws ValueError for an undefined tensor or a bad key (nothing is
// written) and IOError when the file cannot be written (a file already at `path` stays).
void save_checkpoint(const std::string& path, const nn::Module& model,
                     const optim::Optimizer* optimizer, const nn::StateDict& trainer_state);

// Reads the checkpoint at `path` into `model` and, when not null, `optimizer`, and returns
// the trainer entries (without their "trainer/" prefix). Everything is checked before
// either is changed: the model's entries against its parameters and buffers (every name
// present, none unexpected, shapes equal, floating vs integer kinds equal, floating values
// finite) and the
// optimizer's by its own load_state_dict. On any problem it throws (IOError for the file,
// ValueError listing every offending entry) and leaves the model and the optimizer as
// they were. With a null optimizer, optimizer entries in the file are ignored; with an
// optimizer, a file without optimizer entries is an error.
struct LoadOptions {
  // Warn when the file records an attention layout (attention layers, heads and head_dim
  // of each) other than the model's; the load itself goes ahead when the shapes agree.
  // Set false to load across head counts on purpose (the study's H = 1 -> H = 8 transfer).
  bool warn_on_attention_mismatch = true;
  HEADGRAD_WITH(warn_on_attention_mismatch)
};

nn::StateDict load_checkpoint(const std::string& path, nn::Module& model,
                              optim::Optimizer* optimizer, const LoadOptions& options = {});

// load_checkpoint on a file already read from `path` (read_npz), with the same checks
// and the same all-or-nothing guarantee; `path` names the file in messages. The overload
// on bare entries has no recorded layout to compare.
nn::StateDict apply_checkpoint(const NpzFile& file, const std::string& path, nn::Module& model,
                               optim::Optimizer* optimizer, const LoadOptions& options = {});
nn::StateDict apply_checkpoint(const nn::StateDict& entries, const std::string& path,
                               nn::Module& model, optim::Optimizer* optimizer);

// The archive comment save_checkpoint and headgrad::save write: the model's attention
// layout as JSON (see the top of this file); "" for a model without attention layers.
std::string attention_layout_comment(const nn::Module& model);

namespace detail {
// apply_checkpoint whose messages start with `who` ("load", "load_checkpoint", ...).
nn::StateDict apply_checkpoint_as(const std::string& who, const NpzFile& file,
                                  const std::string& path, nn::Module& model,
                                  optim::Optimizer* optimizer, const LoadOptions& options);
}  // namespace detail

// A Generator's full state as a 1-d int64 tensor: a format tag, the seed, whether a
// Box-Muller normal is cached and its bits, the number of engine words, then the words of
// the std::mt19937_64 engine's state (its textual form; 313 words with libstdc++).
Tensor generator_state(const Generator& g);

// Restores a state from generator_state (including a cached Box-Muller sample), after
// checking it completely (dtype int64, 1-d, tag, lengths, a parseable engine state);
// throws ValueError and leaves `g` unchanged otherwise. A state on a GPU is read through
// a CPU copy.
void set_generator_state(Generator& g, const Tensor& state);

}  // namespace headgrad::train
