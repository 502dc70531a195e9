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
#include <filesystem>
#include <memory>

#include "../common/cli_checks.hpp"
#include "../common/device.hpp"
#include "../common/ranks_agree.hpp"

using namespace headgrad;

namespace {

std::atomic<bool> g_stop{false};
void on_sigint(int) { g_stop.store(true); }

// Everything the command line sets, with its defaults.
struct Options {
  std::string task_name = "reverse", out_dir, fusion_mode = "fusion", device_text = "cpu", corpus;
  std::int64_t d_model = 64, layers = 2, heads = 4, steps = 1500, batch_size = 64, length = 8;
  std::int64_t eval_every = 250, checkpoint_every = 500, warmup = 100, min_length = 0;
  double lr = 3e-3, weight_decay = 0.01, dropout = 0.0, clip = 1.0;
  std::uint64_t seed = 0;
  int threads = 1;
  bool resume = false, per_head = false, quiet = false;
};

std::string task_list() {
  std::string s;
  for (auto& n : train::task_names()) s += (s.empty() ? "" : ", ") + n;
  return s;
}

// The task's and the model's options.
void add_model_options(CLI::App& app, Options& o) {
  app.add_option("--task", o.task_name, "task: " + task_list())->capture_default_str();
  app.add_option("--length", o.length, "sequence length of the task")
      ->check(examples::integer_in(1, 100000))
      ->capture_default_str();
  app.add_option("--corpus", o.corpus,
                 "char_lm's text: a UTF-8 file or folder (default the Debian fortunes "
                 "package's /usr/share/games/fortunes); --length is its context")
      ->check(examples::non_empty("name a UTF-8 file or folder, or leave --corpus out for " +
                                  train::default_corpus()));
  app.add_option("--min-length", o.min_length,
                 "shortest example (0 = every example has --length): shorter ones are padded "
                 "and masked with key_padding_mask")
      ->check(examples::integer_in(0, 100000))
      ->capture_default_str();
  app.add_option("--d-model", o.d_model, "model width")
      ->check(examples::integer_in(1, 65536))
      ->capture_default_str();
  app.add_option("--layers", o.layers, "transformer layers")
      ->check(examples::integer_in(1, 1024))
      ->capture_default_str();
  app.add_option("--heads", o.heads, "attention heads per layer (must divide --d-model)")
      ->check(examples::integer_in(1, 65536))
      ->capture_default_str();
  app.add_option("--dropout", o.dropout, "dropout")
      ->check(examples::real_in(0, 1, examples::Open::high))
      ->capture_default_str();
  app.add_flag("--per-head", o.per_head, "build attention from one AttentionHead module per head");
  app.add_option("--fusion-mode", o.fusion_mode, "fusion task: fusion, text_only or tabular_only")
      ->check(CLI::IsMember({"fusion", "text_only", "tabular_only"}))
      ->capture_default_str();
}

// The optimizer's and the schedule's options.
void add_optimizer_options(CLI::App& app, Options& o) {
  app.add_option("--steps", o.steps, "training steps")
      ->check(examples::integer_in(1, 1e9))
      ->capture_default_str();
  app.add_option("--batch-size", o.batch_size, "batch size")
      ->check(examples::integer_in(1, 1e6))
      ->capture_default_str();
  app.add_option("--lr", o.lr, "peak learning rate (AdamW)")
      ->check(examples::real_in(0, 10, examples::Open::low))
      ->capture_default_str();
  app.add_option("--warmup", o.warmup,
                 "linear warm-up steps, then cosine decay (default 100; a tenth of --steps when "
                 "--steps is below 100)")
      ->check(examples::integer_in(0, 1e9))
      ->capture_default_str();
  app.add_option("--weight-decay", o.weight_decay, "AdamW weight decay")
      ->check(examples::real_in(0, 10))
      ->capture_default_str();
  app.add_option("--clip", o.clip, "gradient norm clipping (0 = off)")
      ->check(examples::real_in(0, 1e6))
      ->capture_default_str();
  app.add_option("--seed", o.seed, "seed for data, init and dropout")
      ->check(examples::unsigned_integer())
      ->capture_default_str();
}

// Where and how the run executes, and what it writes.
void add_run_options(CLI::App& app, Options& o) {
  app.add_option("--threads", o.threads, "OpenBLAS threads")
      ->check(examples::integer_in(1, 1024))
      ->capture_default_str();
  examples::add_device_option(app, o.device_text);
  app.add_option("--eval-every", o.eval_every, "evaluate every N steps (0 = at the end)")
      ->check(examples::integer_in(0, 1e9))
      ->capture_default_str();
  app.add_option("--checkpoint-every", o.checkpoint_every,
                 "checkpoint every N steps (0 = at the end)")
      ->check(examples::integer_in(0, 1e9))
      ->capture_default_str();
  app.add_option("--out", o.out_dir,
                 "output folder (metrics.csv, metrics.jsonl, checkpoint.npz); "
                 "default runs/<task>");
  app.add_flag("--resume", o.resume, "continue from <out>/checkpoint.npz");
  app.add_flag("--quiet", o.quiet, "no progress output");
}

// Under mpirun every rank runs one configuration and resumes from one checkpoint, or none
// starts. --threads (each machine's cores), --quiet and --out (rank 0 alone writes; what
// each rank would resume from is compared instead) may differ.
void require_ranks_agree(distributed::ProcessGroup& group, const CLI::App& app, const Options& o) {
  if (group.size() <= 1) return;
  auto settings = examples::option_settings(app, {"--threads", "--quiet", "--out"});
  settings.push_back(examples::checkpoint_setting(
      o.resume, (std::filesystem::path(o.out_dir) / "checkpoint.npz").string()));
  examples::require_ranks_agree(group, "", settings);
}

// Cross-option checks, before anything is allocated; a short run's default warm-up is
// scaled down. Rank 0 creates the output folder.
void check_options(const CLI::App& app, Options& o, int rank) {
  if (app.count("--warmup") == 0 && o.warmup > o.steps) o.warmup = o.steps / 10;
  if (o.warmup > o.steps)
    throw ValueError("--warmup " + std::to_string(o.warmup) + " exceeds --steps " +
                     std::to_string(o.steps) +
                     ": lower --warmup (the cosine decay needs the "
                     "warm-up to end within the run)");
  if (o.d_model % o.heads != 0)
    throw ValueError("--heads " + std::to_string(o.heads) + " does not divide --d-model " +
                     std::to_string(o.d_model) + ": pick a head count that divides the width");
  if (o.min_length > o.length)
    throw ValueError("--min-length " + std::to_string(o.min_length) + " exceeds --length " +
                     std::to_string(o.length));
  if (rank != 0) return;
  std::error_code ec;
  std::filesystem::create_directories(o.out_dir, ec);
  if (ec || !std::filesystem::is_directory(o.out_dir))
    throw ValueError("cannot create the output folder '" + o.out_dir +
                     "': " + (ec ? ec.message() : "a file of that name is in the way") +
                     " (choose another --out)");
}

std::unique_ptr<train::Task> make_task(const Options& o, const Device& device) {
  train::TaskOptions task_options;
  task_options.seed = o.seed;
  task_options.length = o.length;
  task_options.min_length = o.min_length;
  if (!o.corpus.empty() && o.task_name != "char_lm")
    throw ValueError("--corpus is char_lm's text, but --task is " + o.task_name);
  task_options.corpus = o.corpus;
  auto task = train::make_task(o.task_name, task_options);
  if (device.is_cpu())
    examples::check_fits_in_memory(
        examples::transformer_training_bytes(
            static_cast<double>(std::max(task->vocab_size(), task->num_classes())),
            static_cast<double>(task->max_len()), static_cast<double>(o.d_model),
            4.0 * static_cast<double>(o.d_model), static_cast<double>(o.layers),
            static_cast<double>(o.heads), static_cast<double>(o.batch_size)),
        "--batch-size, --layers, --d-model or --length");
  return task;
}

struct Model {
  std::shared_ptr<nn::Module> module;
  train::ForwardFn forward;
};

// The model the task's kind calls for: a GPT for sequences (without token ids, positions
// or mask for a regression task's continuous set), an encoder classifier, or a fusion
// classifier when the task has tabular features.
Model make_model(const train::Task& task, const Options& opt) {
  auto size = [&](auto& o) {  // the options every model shares
    o.vocab_size = task.vocab_size();
    o.max_len = task.max_len();
    o.d_model = opt.d_model;
    o.num_layers = opt.layers;
    o.nhead = opt.heads;
    o.dropout = opt.dropout;
    o.per_head = opt.per_head;
  };
  if (task.kind() != train::TaskKind::classification) {
    nn::GPTOptions o;
    size(o);
    const bool regression = task.kind() == train::TaskKind::regression;
    if (regression) {
      o.input_dim = task.input_dim();
      o.causal = false;
      o.positions = false;
    }
    auto gpt = std::make_shared<nn::GPT>(o);
    if (regression) return {gpt, [gpt](const train::Batch& b) { return gpt->forward(b.inputs); }};
    return {gpt,
            [gpt](const train::Batch& b) { return gpt->forward(b.tokens, b.key_padding_mask); }};
  }
  if (task.num_features() == 0) {
    nn::EncoderClassifierOptions o;
    o.num_classes = task.num_classes();
    size(o);
    auto clf = std::make_shared<nn::EncoderClassifier>(o);
    return {clf,
            [clf](const train::Batch& b) { return clf->forward(b.tokens, b.key_padding_mask); }};
  }
  nn::FusionClassifierOptions o;
  o.num_features = task.num_features();
  o.num_classes = task.num_classes();
  size(o);
  using Mode = nn::FusionClassifierOptions::Mode;
  o.mode = opt.fusion_mode == "fusion"      ? Mode::fusion
           : opt.fusion_mode == "text_only" ? Mode::text_only
                                            : Mode::tabular_only;
  auto fusion = std::make_shared<nn::FusionClassifier>(o);
  return {fusion, [fusion](const train::Batch& b) {
            return fusion->forward(b.tokens, b.key_padding_mask, b.features);
          }};
}

// What this run is: a checkpoint of another one is refused on --resume. Settings given
// on this command line may differ from the checkpoint's (the change is logged).
void describe_run(train::TrainerOptions& options, const CLI::App& app, const Options& o, int argc,
                  char** argv) {
  options.config.identity("task.name", o.task_name)
      .identity("task.length", o.length)
      .identity("task.min_length", o.min_length)
      .identity("model.d_model", o.d_model)
      .identity("model.layers", o.layers)
      .identity("model.heads", o.heads)
      .identity("model.dropout", o.dropout)
      .identity("model.per_head", o.per_head)
      .identity("model.fusion_mode", o.fusion_mode)
      .identity("seed", o.seed);
  if (o.task_name == "char_lm")  // other tasks' checkpoints stay as they were
    options.config.identity("task.corpus", o.corpus.empty() ? train::default_corpus() : o.corpus);
  for (const auto& [flag, field] : std::vector<std::pair<std::string, std::string>>{
           {"--lr", "optimizer.lr"},
           {"--weight-decay", "optimizer.weight_decay"},
           {"--clip", "trainer.clip_grad_norm"},
           {"--batch-size", "trainer.batch_size"}})
    if (app.count(flag) > 0) options.config.explicit_settings.insert(field);
  // The schedule follows --lr, --warmup and --steps: extending a run changes it.
  if (app.count("--lr") + app.count("--warmup") + app.count("--steps") > 0)
    options.config.explicit_settings.insert("schedule");
  for (int i = 0; i < argc; ++i)
    options.config.command_line += (i ? " " : "") + std::string(argv[i]);
}

train::TrainerOptions trainer_options(const Options& o, const Device& device,
                                      distributed::ProcessGroup& group) {
  train::TrainerOptions options;
  options.steps = o.steps;
  options.batch_size = o.batch_size;
  options.eval_every = o.eval_every;
  options.checkpoint_every = o.checkpoint_every;
  options.clip_grad_norm = o.clip;
  options.out_dir = o.out_dir;
  options.resume = o.resume;
  options.progress = !o.quiet;
  options.stop_requested = &g_stop;
  options.device = device;
  options.group = &group;
  return options;
}

// Builds the task and the model, trains (data-parallel over the ranks under mpirun; rank 0
// prints and writes) and reports the last validation.
void run(const CLI::App& app, Options& o, distributed::ProcessGroup& group, int argc, char** argv) {
  const int rank = group.rank(), ranks = group.size();
  require_ranks_agree(group, app, o);
  check_options(app, o, rank);
  const Device device = examples::parse_device(o.device_text);
  set_num_threads(o.threads);
  manual_seed(o.seed);
  auto task = make_task(o, device);
  Model model = make_model(*task, o);
  // Initialized on the CPU (the same weights for a seed on every device), then moved
  // before the optimizer takes the parameters.
  model.module->to(device);
  optim::AdamW optimizer(model.module->parameters(),
                         optim::AdamWOptions().with_lr(o.lr).with_weight_decay(o.weight_decay));
  train::TrainerOptions options = trainer_options(o, device, group);
  describe_run(options, app, o, argc, argv);
  std::signal(SIGINT, on_sigint);
  if (rank == 0)
    std::fprintf(
        stderr, "train_toy: task %s, %lld parameters, %lld steps, out %s%s%s\n",
        o.task_name.c_str(), static_cast<long long>(model.module->num_parameters()),
        static_cast<long long>(o.steps), o.out_dir.c_str(),
        device.is_cpu() ? "" : (", device " + device.str()).c_str(),
        ranks > 1 ? (", data-parallel over " + std::to_string(ranks) + " ranks").c_str() : "");
  train::Trainer trainer(*model.module, model.forward, *task, optimizer, options,
                         optim::LRSchedule::cosine(o.lr, o.warmup, o.steps, o.lr * 0.1));
  const train::TrainResult r = trainer.fit();
  if (rank == 0)
    std::printf("task %s: step %lld, validation accuracy %.2f%%, loss %.4f, %.1f s%s\n",
                o.task_name.c_str(), static_cast<long long>(r.steps_done),
                100 * r.last_validation.accuracy, r.last_validation.loss, r.seconds,
                r.stopped_early ? " (stopped early; --resume continues)" : "");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Train a toy transformer on a synthetic task."};
  Options o;
  add_model_options(app, o);
  add_optimizer_options(app, o);
  add_run_options(app, o);
  CLI11_PARSE(app, argc, argv);
  if (o.out_dir.empty()) o.out_dir = "runs/" + o.task_name;
  int rank = 0, ranks = 1;
  try {
    distributed::ProcessGroup& group = distributed::world();
    rank = group.rank();
    ranks = group.size();
    run(app, o, group, argc, argv);
  } catch (const std::exception& e) {
    if (ranks > 1)
      std::fprintf(stderr, "train_toy (rank %d of %d): %s\n", rank, ranks, e.what());
    else
      std::fprintf(stderr, "train_toy: %s\n", e.what());
    return 1;
  }
  return 0;
}
