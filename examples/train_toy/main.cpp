// train_toy: trains a toy transformer on a synthetic task from the command line, with a
// progress bar, periodic evaluation, metrics files, checkpoints and exact resume.
//
//   train_toy --task reverse --steps 1500 --out runs/reverse
//   train_toy --task reverse --steps 3000 --out runs/reverse --resume   (continues)
//   train_toy --task reverse --device cuda                             (on the first GPU)
//
// Sequence tasks (copy, reverse, sort, associative_recall, modular_addition) train a
// decoder-only GPT; char_classification an encoder classifier; fusion a FusionClassifier
// (--fusion-mode fusion | text_only | tabular_only for the single-modality baselines).
// --device cpu | cuda | cuda:N picks where the model trains (default cpu; a GPU needs a
// build with -DHEADGRAD_CUDA=ON, see docs/cuda.md); checkpoints resume on any device.
#include <CLI/CLI.hpp>
#include <headgrad/headgrad.hpp>
#include <headgrad/nn/classifier.hpp>
#include <headgrad/nn/fusion.hpp>
#include <headgrad/nn/gpt.hpp>
#include <headgrad/optim/adam.hpp>
#include <headgrad/optim/schedule.hpp>
#include <headgrad/train/tasks.hpp>
#include <headgrad/train/trainer.hpp>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <memory>

#include "../common/device.hpp"

using namespace headgrad;

namespace {
std::atomic<bool> g_stop{false};
void on_sigint(int) { g_stop.store(true); }
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Train a toy transformer on a synthetic task."};
  std::string task_name = "reverse", out_dir, fusion_mode = "fusion", device_text = "cpu";
  std::int64_t d_model = 64, layers = 2, heads = 4, steps = 1500, batch_size = 64, length = 8;
  std::int64_t eval_every = 250, checkpoint_every = 500, warmup = 100, min_length = 0;
  double lr = 3e-3, weight_decay = 0.01, dropout = 0.0, clip = 1.0;
  std::uint64_t seed = 0;
  int threads = 1;
  bool resume = false, per_head = false, quiet = false;
  app.add_option(
         "--task", task_name,
         "task: " +
             [] {
               std::string s;
               for (auto& n : train::task_names()) s += (s.empty() ? "" : ", ") + n;
               return s;
             }())
      ->capture_default_str();
  app.add_option("--length", length, "sequence length of the task")->capture_default_str();
  app.add_option("--min-length", min_length,
                 "shortest example (0 = every example has --length): shorter ones are padded "
                 "and masked with key_padding_mask")
      ->capture_default_str();
  app.add_option("--d-model", d_model, "model width")->capture_default_str();
  app.add_option("--layers", layers, "transformer layers")->capture_default_str();
  app.add_option("--heads", heads, "attention heads per layer")->capture_default_str();
  app.add_option("--dropout", dropout, "dropout")->capture_default_str();
  app.add_flag("--per-head", per_head, "build attention from one AttentionHead module per head");
  app.add_option("--fusion-mode", fusion_mode, "fusion task: fusion, text_only or tabular_only")
      ->check(CLI::IsMember({"fusion", "text_only", "tabular_only"}))
      ->capture_default_str();
  app.add_option("--steps", steps, "training steps")->capture_default_str();
  app.add_option("--batch-size", batch_size, "batch size")->capture_default_str();
  app.add_option("--lr", lr, "peak learning rate (AdamW)")->capture_default_str();
  app.add_option("--warmup", warmup, "linear warm-up steps, then cosine decay")
      ->capture_default_str();
  app.add_option("--weight-decay", weight_decay, "AdamW weight decay")->capture_default_str();
  app.add_option("--clip", clip, "gradient norm clipping (0 = off)")->capture_default_str();
  app.add_option("--seed", seed, "seed for data, init and dropout")->capture_default_str();
  app.add_option("--threads", threads, "OpenBLAS threads")->capture_default_str();
  examples::add_device_option(app, device_text);
  app.add_option("--eval-every", eval_every, "evaluate every N steps")->capture_default_str();
  app.add_option("--checkpoint-every", checkpoint_every,
                 "checkpoint every N steps (0 = at the end)")
      ->capture_default_str();
  app.add_option("--out", out_dir,
                 "output folder (metrics.csv, metrics.jsonl, checkpoint.npz); "
                 "default runs/<task>");
  app.add_flag("--resume", resume, "continue from <out>/checkpoint.npz");
  app.add_flag("--quiet", quiet, "no progress output");
  CLI11_PARSE(app, argc, argv);
  if (out_dir.empty()) out_dir = "runs/" + task_name;

  try {
    const Device device = examples::parse_device(device_text);
    set_num_threads(threads);
    manual_seed(seed);
    train::TaskOptions task_options;
    task_options.seed = seed;
    task_options.length = length;
    task_options.min_length = min_length;
    auto task = train::make_task(task_name, task_options);

    // The options every model shares, from the command line and the task.
    auto size = [&](auto& o) {
      o.vocab_size = task->vocab_size();
      o.max_len = task->max_len();
      o.d_model = d_model;
      o.num_layers = layers;
      o.nhead = heads;
      o.dropout = dropout;
      o.per_head = per_head;
    };
    std::shared_ptr<nn::Module> model;
    train::ForwardFn forward;
    if (task->kind() == train::TaskKind::sequence) {
      nn::GPTOptions o;
      size(o);
      auto gpt = std::make_shared<nn::GPT>(o);
      forward = [gpt](const train::Batch& b) { return gpt->forward(b.tokens, b.key_padding_mask); };
      model = gpt;
    } else if (task->kind() == train::TaskKind::regression) {
      // Continuous tokens forming a set: a GPT stack without token ids, positions or mask.
      nn::GPTOptions o;
      size(o);
      o.input_dim = task->input_dim();
      o.causal = false;
      o.positions = false;
      auto gpt = std::make_shared<nn::GPT>(o);
      forward = [gpt](const train::Batch& b) { return gpt->forward(b.inputs); };
      model = gpt;
    } else if (task->num_features() == 0) {
      nn::EncoderClassifierOptions o;
      o.num_classes = task->num_classes();
      size(o);
      auto clf = std::make_shared<nn::EncoderClassifier>(o);
      forward = [clf](const train::Batch& b) { return clf->forward(b.tokens, b.key_padding_mask); };
      model = clf;
    } else {
      nn::FusionClassifierOptions o;
      o.num_features = task->num_features();
      o.num_classes = task->num_classes();
      size(o);
      using Mode = nn::FusionClassifierOptions::Mode;
      o.mode = fusion_mode == "fusion"      ? Mode::fusion
               : fusion_mode == "text_only" ? Mode::text_only
                                            : Mode::tabular_only;
      auto fusion = std::make_shared<nn::FusionClassifier>(o);
      forward = [fusion](const train::Batch& b) {
        return fusion->forward(b.tokens, b.key_padding_mask, b.features);
      };
      model = fusion;
    }

    // Initialized on the CPU (the same weights for a seed on every device), then moved
    // before the optimizer takes the parameters.
    model->to(device);
    optim::AdamW optimizer(model->parameters(),
                           optim::AdamWOptions().with_lr(lr).with_weight_decay(weight_decay));
    train::TrainerOptions options;
    options.steps = steps;
    options.batch_size = batch_size;
    options.eval_every = eval_every;
    options.checkpoint_every = checkpoint_every;
    options.clip_grad_norm = clip;
    options.out_dir = out_dir;
    options.resume = resume;
    options.progress = !quiet;
    options.stop_requested = &g_stop;
    options.device = device;
    std::signal(SIGINT, on_sigint);

    std::fprintf(stderr, "train_toy: task %s, %lld parameters, %lld steps, out %s%s\n",
                 task_name.c_str(), static_cast<long long>(model->num_parameters()),
                 static_cast<long long>(steps), out_dir.c_str(),
                 device.is_cpu() ? "" : (", device " + device.str()).c_str());
    train::Trainer trainer(*model, forward, *task, optimizer, options,
                           optim::LRSchedule::cosine(lr, warmup, steps, lr * 0.1));
    train::TrainResult r = trainer.fit();
    std::printf("task %s: step %lld, validation accuracy %.2f%%, loss %.4f, %.1f s%s\n",
                task_name.c_str(), static_cast<long long>(r.steps_done),
                100 * r.last_validation.accuracy, r.last_validation.loss, r.seconds,
                r.stopped_early ? " (stopped early; --resume continues)" : "");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "train_toy: %s\n", e.what());
    return 1;
  }
  return 0;
}
