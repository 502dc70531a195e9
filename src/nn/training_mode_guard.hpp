// Internal: restores a module's training mode when the scope ends, however it ends (the
// evaluation loops of train/ and inspect/ switch to eval mode for their passes): the
// core/scope_exit.hpp guard with the mode as its state.
#pragma once

#include "core/scope_exit.hpp"
#include "headgrad/nn/module.hpp"

namespace headgrad::nn::detail {

// The function that puts `module` back in the mode it has now.
inline auto restore_mode_of(Module& module) {
  return [&module, was_training = module.is_training()] { module.train(was_training); };
}

class TrainingModeGuard
    : public headgrad::detail::ScopeExit<decltype(restore_mode_of(std::declval<Module&>()))> {
 public:
  explicit TrainingModeGuard(Module& module) : ScopeExit(restore_mode_of(module)) {}
};

}  // namespace headgrad::nn::detail
