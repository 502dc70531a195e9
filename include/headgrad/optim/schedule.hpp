// optim::LRSchedule: the learning rate as a pure function of the step, so a resumed run
// recomputes it from the step count alone. `step` is the 0-based index of the optimizer
// step about to be taken. With base = lr, W = warmup_steps, N = total_steps,
// floor = min_lr:
//
//   warm-up (step < W):        lr = base * (step + 1) / W        (reaches base at W - 1)
//   then, by kind:
//   constant                   lr = base
//   linear (W <= step < N)     lr = floor + (base - floor) * (N - step) / (N - W)
//   cosine (W <= step < N)     lr = floor + (base - floor) * (1 + cos(pi * p)) / 2,
//                              p = (step - W) / (N - W)
//   linear, cosine (step >= N) lr = floor
//
// So linear and cosine start their decay at exactly base (step W) and reach the floor at
// step N. W = 0 means no warm-up.
#pragma once

#include <cstdint>
#include <string>

#include "headgrad/core/options.hpp"

namespace headgrad::optim {

class Optimizer;

enum class ScheduleKind { constant, linear, cosine };

std::string to_string(ScheduleKind kind);  // "constant", "linear", "cosine"
// The kind of that name; ValueError listing the known names otherwise.
ScheduleKind schedule_kind_from_string(const std::string& name);

struct LRScheduleOptions {
  ScheduleKind kind = ScheduleKind::constant;
  double lr = 1e-3;               // base (peak) learning rate
  std::int64_t warmup_steps = 0;  // W
  std::int64_t total_steps = 0;   // N (linear and cosine; ignored by constant)
  double min_lr = 0.0;            // floor (linear and cosine)

  LRScheduleOptions() = default;
  LRScheduleOptions(ScheduleKind kind_, double lr_) : kind(kind_), lr(lr_) {}
  HEADGRAD_WITH(warmup_steps)
  HEADGRAD_WITH(total_steps)
  HEADGRAD_WITH(min_lr)
};

class LRSchedule {
 public:
  // ValueError for lr < 0, warmup_steps < 0, min_lr outside [0, lr], and, for linear and
  // cosine, total_steps < warmup_steps or total_steps < 1.
  explicit LRSchedule(const LRScheduleOptions& options);

  // Constant lr (after an optional linear warm-up of `warmup_steps`).
  static LRSchedule constant(double lr, std::int64_t warmup_steps = 0);
  // Linear warm-up, then linear decay to min_lr at total_steps.
  static LRSchedule linear(double lr, std::int64_t warmup_steps, std::int64_t total_steps,
                           double min_lr = 0.0);
  // Linear warm-up, then half a cosine down to min_lr at total_steps.
  static LRSchedule cosine(double lr, std::int64_t warmup_steps, std::int64_t total_steps,
                           double min_lr = 0.0);

  double lr_at(std::int64_t step) const;  // ValueError for step < 0
  // Sets the optimizer's lr to lr_at(step) and returns it.
  double apply(Optimizer& optimizer, std::int64_t step) const;

  const LRScheduleOptions& options() const { return options_; }
  std::string to_string() const;  // e.g. "cosine(lr=0.001, warmup=100, total=1000, min_lr=0)"

 private:
  LRScheduleOptions options_;
};

}  // namespace headgrad::optim
