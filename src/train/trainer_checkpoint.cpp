// The Trainer's checkpoints: what it records beside the model and the optimizer (step,
// generator, run configuration, elapsed time, training window), and the resume that checks
// all of it before anything changes (see train/trainer.hpp).
#include <cmath>
#include <filesystem>
#include <limits>

#include "headgrad/core/generator.hpp"
#include "headgrad/train/checkpoint.hpp"
#include "headgrad/train/npz.hpp"
#include "headgrad/train/trainer.hpp"

namespace headgrad::train {

namespace {

namespace fs = std::filesystem;

std::string checkpoint_path(const TrainerOptions& options) {
  return (fs::path(options.out_dir) / "checkpoint.npz").string();
}

// The 0-d entry `key` of the trainer's entries, or null when absent.
const Tensor* trainer_entry(const nn::StateDict& entries, const std::string& key) {
  return entries.find(std::string(kTrainerPrefix) + key);
}

// The hyperparameters of an optimizer's state dict: its 0-d entries but the parameter count.
bool is_hyperparameter(const std::string& key, const Tensor& t) {
  return t.defined() && t.dim() == 0 && key != "num_params" && key.rfind("state.", 0) != 0;
}

std::string scalar_text(const Tensor& t) {
  return t.dtype() == kInt64 ? std::to_string(t.item<std::int64_t>())
                             : RunConfig::double_text(t.to(kFloat64).item<double>());
}

// The trainer's own entries (step, generator, elapsed time, window), each checked, into
// `r`; the generator's state comes back in `restored` (loaded only once all is checked).
void read_trainer_entries(const nn::StateDict& entries, const std::string& where,
                          std::int64_t steps, Trainer::Window& window, std::int64_t& step,
                          double& elapsed_s, Generator& restored) {
  const Tensor* step_entry = trainer_entry(entries, "step");
  const Tensor* gen = trainer_entry(entries, "default_generator");
  if (!step_entry || !gen)
    throw ValueError(where +
                     "lacks trainer/step or trainer/default_generator: not a trainer "
                     "checkpoint");
  if (step_entry->dtype() != kInt64 || step_entry->dim() != 0)
    throw ValueError(where + "trainer/step must be a 0-d int64 tensor, got " +
                     step_entry->describe());
  step = step_entry->item<std::int64_t>();
  if (step < 0 || step > steps)
    throw ValueError(where + "the checkpoint is at step " + std::to_string(step) +
                     (step < 0 ? ", which is negative (the file is corrupted)"
                               : ", past this run's " + std::to_string(steps) +
                                     " steps: ask for at least that many steps to continue it"));
  set_generator_state(restored, *gen);  // validates the state completely
  if (const Tensor* e = trainer_entry(entries, "elapsed_s")) {
    if (e->dim() != 0 || !is_floating(e->dtype()) || !std::isfinite(e->item<double>()) ||
        e->item<double>() < 0)
      throw ValueError(where + "trainer/elapsed_s must be a finite 0-d number >= 0");
    elapsed_s = e->item<double>();
  }
  if (const Tensor* w = trainer_entry(entries, "window")) {
    if (w->dtype() != kFloat64 || w->shape() != Shape{4})
      throw ValueError(where + "trainer/window must be 4 float64 values, got " + w->describe());
    const std::vector<double> v = w->to_vector<double>();
    for (std::size_t i = 1; i < 4; ++i)
      if (!(v[i] >= 0 && v[i] <= 9.0e15 && v[i] == std::floor(v[i])))
        throw ValueError(where + "trainer/window holds an invalid count " + std::to_string(v[i]));
    if (!std::isfinite(v[0]) || v[3] > static_cast<double>(step))
      throw ValueError(where + "trainer/window is inconsistent with step " + std::to_string(step));
    window = {v[0], static_cast<std::int64_t>(v[1]), static_cast<std::int64_t>(v[2]),
              static_cast<std::int64_t>(v[3])};
  }
}

// The recorded configuration against this run's: every differing field is named (and
// nothing loaded); explicit settings override, and an overridden optimizer hyperparameter's
// entry in the file gives way to the current value. Notes for the progress display.
void check_configuration(nn::StateDict& entries, const std::string& where,
                         const RunConfig& current_config, const optim::Optimizer& optimizer,
                         std::vector<std::string>& overridden, std::vector<std::string>& notes) {
  const Tensor* c = trainer_entry(entries, "config");
  if (!c) {
    notes.push_back(
        "the checkpoint records no configuration (an older format): it was not "
        "checked against this run");
    return;
  }
  const RunConfig saved = RunConfig::from_json(tensor_text(*c, where + "trainer/config"));
  const ConfigComparison cmp = compare_configs(saved, current_config);
  if (!cmp.refused.empty()) {
    std::string list;
    for (const auto& line : cmp.refused) list += "\n  " + line;
    throw ValueError(where +
                     "the checkpoint belongs to another configuration; nothing was "
                     "loaded and nothing changed:" +
                     list);
  }
  overridden = cmp.overridden;
  for (const auto& line : cmp.overridden) notes.push_back("resume: " + line);
  const nn::StateDict current = optimizer.state_dict();
  for (const std::string& name : cmp.overridden_names) {
    if (name.rfind("optimizer.", 0) != 0) continue;
    const std::string key = name.substr(std::string("optimizer.").size());
    const std::string entry = std::string(kOptimizerPrefix) + key;
    if (const Tensor* now = current.find(key); now && entries.contains(entry))
      entries.insert(entry, now->clone());
  }
}

}  // namespace

// The run configuration a checkpoint records: the program's fields, then the optimizer's
// type (an identity: another optimizer has other state) and its hyperparameters and the
// trainer's own settings (settings: they may change on resume when given explicitly).
RunConfig Trainer::make_run_config(const TrainerOptions& options, const optim::Optimizer& optimizer,
                                   const std::optional<optim::LRSchedule>& schedule) {
  RunConfig config = options.config;
  config.identity("optimizer.type", optimizer.type_name());
  // With a schedule the optimizer's lr is the schedule's value at some step: the schedule
  // is the setting.
  for (const auto& [key, t] : optimizer.state_dict())
    if (is_hyperparameter(key, t) && !(schedule && key == "lr"))
      config.setting("optimizer." + key, scalar_text(t));
  if (schedule) config.setting("schedule", schedule->to_string());
  config.setting("trainer.batch_size", options.batch_size);
  config.setting("trainer.clip_grad_norm", options.clip_grad_norm);
  return config;
}

void Trainer::save(std::int64_t step, double elapsed_s, const Window& window) const {
  if (options_.out_dir.empty() || !writes_) return;
  nn::StateDict state;
  state.insert("step", scalar_tensor(static_cast<double>(step), kInt64));
  state.insert("default_generator", generator_state(default_generator()));
  state.insert("config", text_tensor(run_config_.to_json()));
  state.insert("elapsed_s", scalar_tensor(elapsed_s, kFloat64));
  Tensor w = empty({4}, TensorOptions(kFloat64));
  w.data<double>()[0] = window.loss_sum;
  w.data<double>()[1] = static_cast<double>(window.correct);
  w.data<double>()[2] = static_cast<double>(window.scored);
  w.data<double>()[3] = static_cast<double>(window.steps);
  state.insert("window", w);
  save_checkpoint(checkpoint_path(options_), model_, &optimizer_, state);
}

Trainer::Resumed Trainer::try_resume() {
  const std::string path = checkpoint_path(options_);
  Resumed r;
  std::error_code ec;
  if (!fs::exists(path, ec)) return r;
  const std::string where = "Trainer: resume from '" + path + "': ";
  NpzFile file = read_npz(path);
  Generator restored;
  read_trainer_entries(file.entries, where, options_.steps, r.window, r.step, r.elapsed_s,
                       restored);
  check_configuration(file.entries, where, run_config_, optimizer_, r.overridden, r.notes);
  // Model and optimizer: all or nothing (apply_checkpoint), then the generator.
  apply_checkpoint(file, path, model_, &optimizer_);
  default_generator() = restored;
  return r;
}

}  // namespace headgrad::train
