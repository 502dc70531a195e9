// optim::LRSchedule (see optim/schedule.hpp for the formulas).
#include "headgrad/optim/schedule.hpp"

#include <cmath>
#include <numbers>
#include <sstream>

#include "headgrad/core/error.hpp"
#include "headgrad/optim/optimizer.hpp"

namespace headgrad::optim {

std::string to_string(ScheduleKind kind) {
  switch (kind) {
    case ScheduleKind::constant:
      return "constant";
    case ScheduleKind::linear:
      return "linear";
    case ScheduleKind::cosine:
      return "cosine";
  }
  return "unknown";
}

ScheduleKind schedule_kind_from_string(const std::string& name) {
  for (ScheduleKind k : {ScheduleKind::constant, ScheduleKind::linear, ScheduleKind::cosine})
    if (to_string(k) == name) return k;
  throw ValueError("LRSchedule: unknown schedule '" + name + "' (known: constant, linear, cosine)");
}

LRSchedule::LRSchedule(const LRScheduleOptions& options) : options_(options) {
  const auto& o = options_;
  const std::string who = "LRSchedule(" + optim::to_string(o.kind) + ")";
  if (!(o.lr >= 0.0) || !std::isfinite(o.lr))
    throw ValueError(who + ": invalid lr " + std::to_string(o.lr) + " (must be finite and >= 0)");
  if (o.warmup_steps < 0)
    throw ValueError(who + ": invalid warmup_steps " + std::to_string(o.warmup_steps) +
                     " (must be >= 0)");
  if (o.kind == ScheduleKind::constant) return;
  if (!(o.min_lr >= 0.0 && o.min_lr <= o.lr))
    throw ValueError(who + ": invalid min_lr " + std::to_string(o.min_lr) +
                     " (must be in [0, lr = " + std::to_string(o.lr) + "])");
  if (o.total_steps < 1 || o.total_steps < o.warmup_steps)
    throw ValueError(who + ": invalid total_steps " + std::to_string(o.total_steps) +
                     " (must be >= 1 and >= warmup_steps = " + std::to_string(o.warmup_steps) +
                     ")");
}

LRSchedule LRSchedule::constant(double lr, std::int64_t warmup_steps) {
  return LRSchedule(LRScheduleOptions(ScheduleKind::constant, lr).with_warmup_steps(warmup_steps));
}

LRSchedule LRSchedule::linear(double lr, std::int64_t warmup_steps, std::int64_t total_steps,
                              double min_lr) {
  return LRSchedule(LRScheduleOptions(ScheduleKind::linear, lr)
                        .with_warmup_steps(warmup_steps)
                        .with_total_steps(total_steps)
                        .with_min_lr(min_lr));
}

LRSchedule LRSchedule::cosine(double lr, std::int64_t warmup_steps, std::int64_t total_steps,
                              double min_lr) {
  return LRSchedule(LRScheduleOptions(ScheduleKind::cosine, lr)
                        .with_warmup_steps(warmup_steps)
                        .with_total_steps(total_steps)
                        .with_min_lr(min_lr));
}

double LRSchedule::lr_at(std::int64_t step) const {
  if (step < 0)
    throw ValueError("LRSchedule.lr_at: invalid step " + std::to_string(step) + " (must be >= 0)");
  const auto& o = options_;
  const std::int64_t w = o.warmup_steps;
  if (step < w) return o.lr * static_cast<double>(step + 1) / static_cast<double>(w);
  if (o.kind == ScheduleKind::constant) return o.lr;
  const std::int64_t n = o.total_steps;
  if (step >= n) return o.min_lr;
  const double span = static_cast<double>(n - w);
  if (o.kind == ScheduleKind::linear)
    return o.min_lr + (o.lr - o.min_lr) * static_cast<double>(n - step) / span;
  const double progress = static_cast<double>(step - w) / span;
  return o.min_lr + (o.lr - o.min_lr) * (1.0 + std::cos(std::numbers::pi * progress)) / 2.0;
}

double LRSchedule::apply(Optimizer& optimizer, std::int64_t step) const {
  const double lr = lr_at(step);
  optimizer.set_lr(lr);
  return lr;
}

std::string LRSchedule::to_string() const {
  const auto& o = options_;
  std::ostringstream s;
  s << optim::to_string(o.kind) << "(lr=" << o.lr << ", warmup=" << o.warmup_steps;
  if (o.kind != ScheduleKind::constant) s << ", total=" << o.total_steps << ", min_lr=" << o.min_lr;
  s << ")";
  return s.str();
}

}  // namespace headgrad::optim
