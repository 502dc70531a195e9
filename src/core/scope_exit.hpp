// Internal: the library's one idiom for putting state back (a module's training mode,
// attention gates, frozen parameters, hooks): a guard that runs a function when its scope
// ends, however it ends (return or exception), instead of a try/catch that restores and
// rethrows. The function must not throw.
//
//   const ScopeExit restore_mode([&model, was = model.is_training()] { model.train(was); });
#pragma once

#include <utility>

namespace headgrad::detail {

template <typename Restore>
class ScopeExit {
 public:
  explicit ScopeExit(Restore restore) : restore_(std::move(restore)) {}
  ~ScopeExit() { restore_(); }
  ScopeExit(const ScopeExit&) = delete;
  ScopeExit& operator=(const ScopeExit&) = delete;

 private:
  Restore restore_;
};

}  // namespace headgrad::detail
