// train::EnsembleTrainer (see train/ensemble_trainer.hpp): Trainer::fit's step for K
// members at once.
#include "headgrad/train/ensemble_trainer.hpp"

#include <algorithm>
#include <string>

#include "headgrad/autograd/grad_mode.hpp"
#include "headgrad/core/error.hpp"
#include "headgrad/core/interrupt.hpp"
#include "headgrad/ops/elementwise.hpp"
#include "headgrad/ops/shape_ops.hpp"
#include "headgrad/optim/clip.hpp"

namespace headgrad::train {

namespace {

constexpr const char* kName = "EnsembleTrainer";

Tensor stack_field(const std::vector<Batch>& batches, Tensor Batch::*field) {
  if (!(batches.front().*field).defined()) return Tensor();
  std::vector<Tensor> parts;
  for (const Batch& b : batches) parts.push_back(b.*field);
  return stack(parts, 0);
}

// The members' batches as slices of a stacked batch (on its device).
std::vector<Batch> member_batches(const Batch& stacked, std::int64_t members) {
  std::vector<Batch> out(static_cast<std::size_t>(members));
  for (Tensor Batch::*field : {&Batch::tokens, &Batch::targets, &Batch::key_padding_mask,
                               &Batch::features, &Batch::inputs, &Batch::target_mask}) {
    if (!(stacked.*field).defined()) continue;
    const std::vector<Tensor> parts = unbind(stacked.*field, 0);
    for (std::size_t k = 0; k < out.size(); ++k) out[k].*field = parts[k];
  }
  return out;
}

}  // namespace

EnsembleTrainer::EnsembleTrainer(nn::GPTEnsemble& ensemble, optim::EnsembleAdamW& optimizer,
                                 std::vector<EnsembleMember> members,
                                 EnsembleTrainerOptions options)
    : ensemble_(ensemble),
      optimizer_(optimizer),
      members_(std::move(members)),
      options_(std::move(options)) {
  const auto k = static_cast<std::int64_t>(members_.size());
  if (k != ensemble_.size() || k != optimizer_.size())
    throw ValueError(std::string(kName) + ": " + std::to_string(k) + " members given for an " +
                     "ensemble of " + std::to_string(ensemble_.size()) + " and an optimizer of " +
                     std::to_string(optimizer_.size()) +
                     " (one EnsembleMember per ensemble member)");
  if (options_.steps < 0 || options_.batch_size <= 0)
    throw ValueError(std::string(kName) + ": steps must be >= 0 and batch_size positive, got " +
                     std::to_string(options_.steps) + " and " +
                     std::to_string(options_.batch_size));
  for (std::size_t i = 0; i < members_.size(); ++i) {
    if (members_[i].task == nullptr)
      throw ValueError(std::string(kName) + ": member " + std::to_string(i) + " has no task");
    if (members_[i].task->kind() != members_[0].task->kind())
      throw ValueError(std::string(kName) + ": member " + std::to_string(i) + "'s task is " +
                       to_string(members_[i].task->kind()) + " but member 0's is " +
                       to_string(members_[0].task->kind()) + " (one kind per ensemble)");
    if (!(members_[i].clip_grad_norm >= 0.0))
      throw ValueError(std::string(kName) + ": member " + std::to_string(i) +
                       " has clip_grad_norm " + std::to_string(members_[i].clip_grad_norm) +
                       " (must be >= 0; 0 = no clipping)");
    active_.push_back(static_cast<std::int64_t>(i));
  }
  finish_.resize(members_.size());
}

std::int64_t EnsembleTrainer::member_at(std::int64_t position) const {
  if (position < 0 || position >= static_cast<std::int64_t>(active_.size()))
    throw IndexError(std::string(kName) + ": position " + std::to_string(position) +
                     " is out of range for " + std::to_string(active_.size()) + " active members");
  return active_[static_cast<std::size_t>(position)];
}

std::int64_t EnsembleTrainer::position_of(std::int64_t member) const {
  const auto it = std::find(active_.begin(), active_.end(), member);
  if (it == active_.end())
    throw ValueError(std::string(kName) + ": member " + std::to_string(member) +
                     " is not in the ensemble (it has left, or never was)");
  return static_cast<std::int64_t>(it - active_.begin());
}

std::shared_ptr<nn::GPT> EnsembleTrainer::member_model(std::int64_t member) const {
  return ensemble_.member(position_of(member));
}

Batch EnsembleTrainer::stacked_batch(const std::vector<Batch>& batches) const {
  for (std::size_t i = 1; i < batches.size(); ++i)
    if (batches[i].leading().shape() != batches[0].leading().shape())
      throw ShapeError(std::string(kName) + ": member " + std::to_string(active_[i]) +
                       "'s batch is " + shape_str(batches[i].leading().shape()) + " but member " +
                       std::to_string(active_[0]) + "'s is " +
                       shape_str(batches[0].leading().shape()) +
                       " (an ensemble's tasks must give batches of one shape)");
  Batch b;
  b.tokens = stack_field(batches, &Batch::tokens);
  b.targets = stack_field(batches, &Batch::targets);
  b.key_padding_mask = stack_field(batches, &Batch::key_padding_mask);
  b.features = stack_field(batches, &Batch::features);
  b.inputs = stack_field(batches, &Batch::inputs);
  b.target_mask = stack_field(batches, &Batch::target_mask);
  return b;
}

// Members `stopping` (original indices) leave after step `step`: handed over, then
// dropped from the model and the optimizer.
void EnsembleTrainer::leave(const std::vector<std::int64_t>& stopping, std::int64_t step) {
  std::vector<std::int64_t> keep_positions, still;
  for (std::size_t p = 0; p < active_.size(); ++p) {
    const std::int64_t m = active_[p];
    if (std::find(stopping.begin(), stopping.end(), m) == stopping.end()) {
      keep_positions.push_back(static_cast<std::int64_t>(p));
      still.push_back(m);
      continue;
    }
    EnsembleFinish& f = finish_[static_cast<std::size_t>(m)];
    f.steps_done = step;
    f.stopped_early = step < options_.steps;
    if (options_.on_finish)
      options_.on_finish(m, ensemble_.member(static_cast<std::int64_t>(p)), f);
  }
  if (!still.empty()) {
    ensemble_.keep(keep_positions);
    optimizer_.keep(keep_positions);
  }
  active_ = std::move(still);
}

void EnsembleTrainer::fit() {
  const std::int64_t eval_every = options_.eval_every > 0 ? options_.eval_every : options_.steps;
  std::vector<Window> windows(members_.size());
  ensemble_.train();
  std::int64_t step = 0;
  while (step < options_.steps && !active_.empty()) {
    const StepBatches batches = draw(step);
    backward_and_step(forward_and_score(batches, windows), batches, step);
    ++step;
    // Ctrl-C in Python: no member is handed over as finished.
    if (step < options_.steps && interrupt_requested())
      throw Interrupted(std::string(kName) + ".fit: interrupted after step " +
                        std::to_string(step) + " of " + std::to_string(options_.steps));
    std::vector<std::int64_t> stopping;
    if (step % eval_every == 0 || step == options_.steps)
      stopping = report_windows(step, eval_every, windows);
    if (step == options_.steps) stopping = active_;
    if (options_.on_step) options_.on_step(step, static_cast<std::int64_t>(active_.size()));
    if (!stopping.empty()) leave(stopping, step);
  }
  if (!active_.empty()) leave(active_, step);  // steps = 0: every member as it came
}

EnsembleTrainer::StepBatches EnsembleTrainer::draw(std::int64_t step) {
  StepBatches b;
  for (std::size_t p = 0; p < active_.size(); ++p) {
    const EnsembleMember& m = members_[static_cast<std::size_t>(active_[p])];
    if (m.schedule) optimizer_.set_lr(static_cast<std::int64_t>(p), m.schedule->lr_at(step));
    b.cpu.push_back(m.task->batch(Split::train, step, options_.batch_size));
  }
  // One copy of the stacked batch to the device; each member's batch is its slice.
  const Device device = ensemble_.device();
  b.stacked = stacked_batch(b.cpu).to(device);
  b.member = device.is_cpu() ? b.cpu
                             : member_batches(b.stacked, static_cast<std::int64_t>(active_.size()));
  return b;
}

Tensor EnsembleTrainer::forward_and_score(const StepBatches& batches,
                                          std::vector<Window>& windows) {
  const Tensor logits =
      ensemble_.forward(batches.stacked.leading(), batches.stacked.key_padding_mask);
  const std::vector<Tensor> member_logits = unbind(logits, 0);
  std::vector<Tensor> losses;
  Tensor total;
  for (std::size_t p = 0; p < active_.size(); ++p) {
    const Task& task = *members_[static_cast<std::size_t>(active_[p])].task;
    losses.push_back(task.loss(member_logits[p], batches.member[p]));
    total = total.defined() ? add(total, losses.back()) : losses.back();
  }
  // The step's losses and logits read back once (a GPU waits once, not per member).
  std::vector<double> loss_values;
  std::vector<Tensor> cpu_logits;
  {
    NoGradGuard no_grad;
    std::vector<Tensor> detached;
    for (const Tensor& l : losses) detached.push_back(l.detach());
    loss_values = stack(detached, 0).to(Device::cpu()).to(kFloat64).to_vector<double>();
    cpu_logits =
        logits.device().is_cpu() ? member_logits : unbind(logits.detach().to(Device::cpu()), 0);
  }
  for (std::size_t p = 0; p < active_.size(); ++p) {
    const Task& task = *members_[static_cast<std::size_t>(active_[p])].task;
    const auto [correct, scored] = task.count_scored(cpu_logits[p], batches.cpu[p]);
    Window& w = windows[static_cast<std::size_t>(active_[p])];
    w.loss_sum += loss_values[p];
    w.correct += correct;
    w.scored += scored;
    ++w.steps;
  }
  return total;
}

void EnsembleTrainer::backward_and_step(const Tensor& total, const StepBatches& batches,
                                        std::int64_t step) {
  optimizer_.zero_grad();
  total.backward();
  if (options_.after_backward)
    for (std::size_t p = 0; p < active_.size(); ++p)
      options_.after_backward(active_[p], step + 1, batches.cpu[p]);
  std::vector<double> clip;
  bool clips = false;
  for (std::int64_t m : active_) {
    clip.push_back(members_[static_cast<std::size_t>(m)].clip_grad_norm);
    clips = clips || clip.back() > 0;
  }
  if (clips) optim::clip_member_grad_norms_(optimizer_.params(), clip);
  optimizer_.step();
}

std::vector<std::int64_t> EnsembleTrainer::report_windows(std::int64_t step,
                                                          std::int64_t eval_every,
                                                          std::vector<Window>& windows) {
  std::vector<std::int64_t> stopping;
  for (std::int64_t m : active_) {
    Window& w = windows[static_cast<std::size_t>(m)];
    const Metrics train{
        step, w.loss_sum / static_cast<double>(w.steps),
        w.scored > 0 ? static_cast<double>(w.correct) / static_cast<double>(w.scored) : 0.0,
        w.correct, w.scored};
    finish_[static_cast<std::size_t>(m)].last_train = train;
    if (options_.on_evaluate && options_.on_evaluate(m, train)) stopping.push_back(m);
    if (step % eval_every == 0) w = Window{};
  }
  return stopping;
}

}  // namespace headgrad::train
