// Grad mode: while disabled (inside a NoGradGuard), ops record no graph.
#pragma once

namespace headgrad {

bool is_grad_enabled();
void set_grad_enabled(bool enabled);

// RAII: disables graph recording for its scope, restoring the previous mode on exit.
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

// RAII: sets grad mode to `enabled` for its scope.
class GradModeGuard {
 public:
  explicit GradModeGuard(bool enabled);
  ~GradModeGuard();
  GradModeGuard(const GradModeGuard&) = delete;
  GradModeGuard& operator=(const GradModeGuard&) = delete;

 private:
  bool previous_;
};

}  // namespace headgrad
