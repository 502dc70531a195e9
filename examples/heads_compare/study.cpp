// heads_compare's runs (see study.hpp): build a GPT, train it with the Trainer while a
// capture keeps each head's z gradient for the per-step gradient norms, then measure head
// importance, the pruning curves and one sample's attention patterns.
#include "study.hpp"

#include <atomic>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <thread>

#include "headgrad/autograd/grad_mode.hpp"
#include "headgrad/inspect/capture.hpp"
#include "headgrad/nn/gpt.hpp"
#include "headgrad/optim/adam.hpp"
#include "headgrad/optim/schedule.hpp"
#include "headgrad/train/tasks.hpp"
#include "headgrad/train/trainer.hpp"

namespace heads_compare {

namespace hg = headgrad;

std::string RunSpec::name() const {
  return task + "-L" + std::to_string(layers) + "-H" + std::to_string(heads) + "-s" +
         std::to_string(seed);
}

std::vector<RunSpec> plan_runs(const StudyConfig& config) {
  std::vector<RunSpec> runs;
  for (const auto& task : config.tasks) {
    for (std::int64_t h : config.heads)
      for (std::uint64_t seed : config.seeds) runs.push_back({task, config.layers, h, seed, false});
    if (config.depth_control)
      for (auto [layers, heads] : {std::pair<std::int64_t, std::int64_t>{1, 8}, {8, 1}})
        for (std::uint64_t seed : config.seeds) runs.push_back({task, layers, heads, seed, true});
  }
  return runs;
}

namespace {

// The initial weights depend on the seed and the layer count only, not on the heads.
std::uint64_t init_seed(const RunSpec& spec) {
  return spec.seed * 0x9E3779B97F4A7C15ull + static_cast<std::uint64_t>(spec.layers);
}

// `t` on the CPU, where its values can be read.
hg::Tensor on_cpu(const hg::Tensor& t) { return t.device().is_cpu() ? t : t.to(hg::Device::cpu()); }

// Every head's pattern on validation example 0, in eval mode.
void record_patterns(hg::nn::GPT& model, const hg::train::Task& task, RunResult& result) {
  const hg::train::Batch sample = task.batch(hg::train::Split::validation, 0, 1);
  const hg::train::Batch on_device = sample.to(model.device());
  const auto layers = hg::inspect::attention_layers(model);
  hg::inspect::Capture capture(model, {hg::inspect::Tap::pattern}, false);
  const bool was_training = model.is_training();
  model.eval();
  {
    hg::NoGradGuard no_grad;
    auto scope = capture.activate();
    model.forward(on_device.tokens, on_device.key_padding_mask);
  }
  model.train(was_training);
  result.sample_tokens = sample.tokens.to_vector<std::int64_t>();
  for (const auto& layer : layers) {
    const hg::Tensor pattern =
        on_cpu(capture.get(layer.name + ".pattern")).to(hg::kFloat64);  // (1,H,T,T)
    const std::int64_t heads = pattern.size(1), t = pattern.size(2);
    result.pattern_len = t;
    const auto values = pattern.to_vector<double>();
    std::vector<std::vector<double>> per_head;
    for (std::int64_t h = 0; h < heads; ++h)
      per_head.emplace_back(values.begin() + h * t * t, values.begin() + (h + 1) * t * t);
    result.patterns.push_back(std::move(per_head));
  }
}

}  // namespace

RunResult execute_run(const StudyConfig& config, const RunSpec& spec) {
  const auto start = std::chrono::steady_clock::now();
  RunResult result;
  result.spec = spec;

  hg::train::TaskOptions task_options;
  task_options.seed = spec.seed;
  task_options.length = config.length;
  const auto task = hg::train::make_task(spec.task, task_options);
  if (task->kind() != hg::train::TaskKind::sequence)
    throw hg::ValueError("heads_compare: task '" + spec.task +
                         "' is a classification task; the study trains decoder-only models on "
                         "sequence tasks (copy, reverse, sort, associative_recall, "
                         "modular_addition)");

  hg::nn::GPTOptions options;
  options.vocab_size = task->vocab_size();
  options.max_len = task->max_len();
  options.d_model = config.d_model;
  options.nhead = spec.heads;
  options.num_layers = spec.layers;
  hg::Generator init(init_seed(spec));
  hg::nn::GPT model(options, &init);
  model.to(config.device);  // before the optimizer takes the parameters

  // z's gradient is kept during training steps for the per-step gradient norms. Batches
  // come from the trainer on the model's device, or from the inspect functions on the CPU
  // (moved here; a no-op for those already there).
  hg::inspect::Capture capture(model, {hg::inspect::Tap::z});
  const hg::train::ForwardFn forward = [&](const hg::train::Batch& cpu_or_device) {
    const hg::train::Batch b = cpu_or_device.to(config.device);
    if (!hg::is_grad_enabled()) return model.forward(b.tokens, b.key_padding_mask);
    auto scope = capture.activate();
    return model.forward(b.tokens, b.key_padding_mask);
  };

  hg::optim::AdamW optimizer(
      model.parameters(),
      hg::optim::AdamWOptions().with_lr(config.lr).with_weight_decay(config.weight_decay));
  hg::train::TrainerOptions trainer_options;
  trainer_options.steps = config.steps;
  trainer_options.batch_size = config.batch_size;
  trainer_options.eval_every = config.eval_every;
  trainer_options.eval_batches = config.eval_batches;
  trainer_options.clip_grad_norm = config.clip;
  trainer_options.progress = false;
  trainer_options.device = config.device;
  trainer_options.out_dir = (std::filesystem::path(config.out_dir) / "runs" / spec.name()).string();
  std::filesystem::create_directories(trainer_options.out_dir);
  trainer_options.after_backward = [&](std::int64_t step) {
    result.grads.push_back({step, hg::inspect::head_grad_norms(model, &capture)});
  };
  trainer_options.on_evaluate = [&](const hg::train::Metrics& train,
                                    const hg::train::Metrics& validation) {
    result.curve.push_back(
        {validation.step, train.loss, train.accuracy, validation.loss, validation.accuracy});
    if (result.steps_to_threshold < 0 && validation.accuracy >= config.threshold)
      result.steps_to_threshold = validation.step;
  };
  hg::train::Trainer trainer(
      model, forward, *task, optimizer, trainer_options,
      hg::optim::LRSchedule::cosine(config.lr, std::min(config.warmup, config.steps), config.steps,
                                    config.lr * 0.1));
  const hg::train::TrainResult trained = trainer.fit();
  result.final_loss = trained.last_validation.loss;
  result.final_accuracy = trained.last_validation.accuracy;
  capture.clear();

  const auto split = hg::train::Split::validation;
  result.importance = hg::inspect::head_importance(model, forward, *task, split,
                                                   config.inspect_batches, config.batch_size);
  result.pruning_by_importance = hg::inspect::pruning_curve(
      model, forward, *task, split, config.inspect_batches, config.batch_size,
      hg::inspect::importance_order(result.importance));
  result.pruning_random = hg::inspect::pruning_curve(
      model, forward, *task, split, config.inspect_batches, config.batch_size,
      hg::inspect::random_order(model, spec.seed + 1));
  record_patterns(model, *task, result);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

std::vector<RunResult> execute_all(
    const StudyConfig& config, const std::vector<RunSpec>& runs,
    const std::function<void(const RunResult&, std::size_t done, std::size_t total)>& on_done) {
  std::vector<RunResult> results(runs.size());
  std::atomic<std::size_t> next{0};
  std::size_t done = 0;
  std::mutex mutex;
  std::exception_ptr failure;
  auto worker = [&] {
    for (std::size_t i = next++; i < runs.size(); i = next++) {
      try {
        results[i] = execute_run(config, runs[i]);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex);
        if (!failure) failure = std::current_exception();
        next = runs.size();
        return;
      }
      std::lock_guard<std::mutex> lock(mutex);
      if (on_done) on_done(results[i], ++done, runs.size());
    }
  };
  const int jobs = std::max(1, std::min<int>(config.jobs, static_cast<int>(runs.size())));
  std::vector<std::thread> threads;
  for (int j = 1; j < jobs; ++j) threads.emplace_back(worker);
  worker();
  for (auto& t : threads) t.join();
  if (failure) std::rethrow_exception(failure);
  return results;
}

}  // namespace heads_compare
