// Internal: restores a module's training mode when the scope ends, however it ends (the
// evaluation loops of train/ and inspect/ switch to eval mode for their passes).
#pragma once

#include "headgrad/nn/module.hpp"

namespace headgrad::nn::detail {

class TrainingModeGuard {
 public:
  explicit TrainingModeGuard(Module& module)
      : module_(module), was_training_(module.is_training()) {}
  ~TrainingModeGuard() { module_.train(was_training_); }
  TrainingModeGuard(const TrainingModeGuard&) = delete;
  TrainingModeGuard& operator=(const TrainingModeGuard&) = delete;

 private:
  Module& module_;
  bool was_training_;
};

}  // namespace headgrad::nn::detail
