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
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Train a toy transformer on a synthetic task."};
  std::string task_name = "reverse", out_dir, fusion_mode = "fusion", device_text = "cpu", corpus;
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
  app.add_option("--length", length, "sequence length of the task")
      ->check(examples::integer_in(1, 100000))
      ->capture_default_str();
  app.add_option("--corpus", corpus,
                 "char_lm's text: a UTF-8 file or folder (default the Debian fortunes "
                 "package's /usr/share/games/fortunes); --length is its context");
  app.add_option("--min-length", min_length,
                 "shortest example (0 = every example has --length): shorter ones are padded "
                 "and masked with key_padding_mask")
      ->check(examples::integer_in(0, 100000))
      ->capture_default_str();
  app.add_option("--d-model", d_model, "model width")
      ->check(examples::integer_in(1, 65536))
      ->capture_default_str();
  app.add_option("--layers", layers, "transformer layers")
      ->check(examples::integer_in(1, 1024))
      ->capture_default_str();
  app.add_option("--heads", heads, "attention heads per layer (must divide --d-model)")
      ->check(examples::integer_in(1, 65536))
      ->capture_default_str();
  app.add_option("--dropout", dropout, "dropout")
      ->check(examples::real_in(0, 1, examples::Open::high))
      ->capture_default_str();
  app.add_flag("--per-head", per_head, "build attention from one AttentionHead module per head");
  app.add_option("--fusion-mode", fusion_mode, "fusion task: fusion, text_only or tabular_only")
      ->check(CLI::IsMember({"fusion", "text_only", "tabular_only"}))
      ->capture_default_str();
  app.add_option("--steps", steps, "training steps")
      ->check(examples::integer_in(1, 1e9))
      ->capture_default_str();
  app.add_option("--batch-size", batch_size, "batch size")
      ->check(examples::integer_in(1, 1e6))
      ->capture_default_str();
  app.add_option("--lr", lr, "peak learning rate (AdamW)")
      ->check(examples::real_in(0, 10, examples::Open::low))
      ->capture_default_str();
  app.add_option("--warmup", warmup,
                 "linear warm-up steps, then cosine decay (default 100; a tenth of --steps when "
                 "--steps is below 100)")
      ->check(examples::integer_in(0, 1e9))
      ->capture_default_str();
  app.add_option("--weight-decay", weight_decay, "AdamW weight decay")
      ->check(examples::real_in(0, 10))
      ->capture_default_str();
  app.add_option("--clip", clip, "gradient norm clipping (0 = off)")
      ->check(examples::real_in(0, 1e6))
      ->capture_default_str();
  app.add_option("--seed", seed, "seed for data, init and dropout")
      ->check(examples::unsigned_integer())
      ->capture_default_str();
  app.add_option("--threads", threads, "OpenBLAS threads")
      ->check(examples::integer_in(1, 1024))
      ->capture_default_str();
  examples::add_device_option(app, device_text);
  app.add_option("--eval-every", eval_every, "evaluate every N steps (0 = at the end)")
      ->check(examples::integer_in(0, 1e9))
      ->capture_default_str();
  app.add_option("--checkpoint-every", checkpoint_every,
                 "checkpoint every N steps (0 = at the end)")
      ->check(examples::integer_in(0, 1e9))
      ->capture_default_str();
  app.add_option("--out", out_dir,
                 "output folder (metrics.csv, metrics.jsonl, checkpoint.npz); "
                 "default runs/<task>");
  app.add_flag("--resume", resume, "continue from <out>/checkpoint.npz");
  app.add_flag("--quiet", quiet, "no progress output");
  CLI11_PARSE(app, argc, argv);
  if (out_dir.empty()) out_dir = "runs/" + task_name;

  int rank = 0, ranks = 1;
  try {
    // Under mpirun: data-parallel over the ranks (rank 0 prints and writes); else one process.
    distributed::ProcessGroup& group = distributed::world();
    rank = group.rank();
    ranks = group.size();
    // Every rank runs one configuration and resumes from one checkpoint, or none starts.
    // --threads (each machine's cores), --quiet and --out (rank 0 alone writes; what each
    // rank would resume from is compared instead) may differ.
    if (ranks > 1) {
      auto settings = examples::option_settings(app, {"--threads", "--quiet", "--out"});
      settings.push_back(examples::checkpoint_setting(
          resume, (std::filesystem::path(out_dir) / "checkpoint.npz").string()));
      examples::require_ranks_agree(group, "", settings);
    }
    // Cross-option checks, before anything is allocated.
    const bool explicit_warmup = app.count("--warmup") > 0;
    if (!explicit_warmup && warmup > steps) warmup = steps / 10;  // a short run: scaled down
    if (warmup > steps)
      throw ValueError("--warmup " + std::to_string(warmup) + " exceeds --steps " +
                       std::to_string(steps) +
                       ": lower --warmup (the cosine decay needs the "
                       "warm-up to end within the run)");
    if (d_model % heads != 0)
      throw ValueError("--heads " + std::to_string(heads) + " does not divide --d-model " +
                       std::to_string(d_model) + ": pick a head count that divides the width");
    if (min_length > length)
      throw ValueError("--min-length " + std::to_string(min_length) + " exceeds --length " +
                       std::to_string(length));
    if (rank == 0) {
      std::error_code ec;
      std::filesystem::create_directories(out_dir, ec);
      if (ec || !std::filesystem::is_directory(out_dir))
        throw ValueError("cannot create the output folder '" + out_dir +
                         "': " + (ec ? ec.message() : "a file of that name is in the way") +
                         " (choose another --out)");
    }
    const Device device = examples::parse_device(device_text);
    set_num_threads(threads);
    manual_seed(seed);
    train::TaskOptions task_options;
    task_options.seed = seed;
    task_options.length = length;
    task_options.min_length = min_length;
    if (!corpus.empty() && task_name != "char_lm")
      throw ValueError("--corpus is char_lm's text, but --task is " + task_name);
    task_options.corpus = corpus;
    auto task = train::make_task(task_name, task_options);
    if (device.is_cpu())
      examples::check_fits_in_memory(
          examples::transformer_training_bytes(
              static_cast<double>(std::max(task->vocab_size(), task->num_classes())),
              static_cast<double>(task->max_len()), static_cast<double>(d_model),
              4.0 * static_cast<double>(d_model), static_cast<double>(layers),
              static_cast<double>(heads), static_cast<double>(batch_size)),
          "--batch-size, --layers, --d-model or --length");

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
    options.group = &group;
    // What this run is: a checkpoint of another one is refused on --resume. Settings given
    // on this command line may differ from the checkpoint's (the change is logged).
    options.config.identity("task.name", task_name)
        .identity("task.length", length)
        .identity("task.min_length", min_length)
        .identity("model.d_model", d_model)
        .identity("model.layers", layers)
        .identity("model.heads", heads)
        .identity("model.dropout", dropout)
        .identity("model.per_head", per_head)
        .identity("model.fusion_mode", fusion_mode)
        .identity("seed", seed);
    if (task_name == "char_lm")  // other tasks' checkpoints stay as they were
      options.config.identity("task.corpus", corpus.empty() ? train::kDefaultCorpus : corpus);
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
    std::signal(SIGINT, on_sigint);

    if (rank == 0)
      std::fprintf(
          stderr, "train_toy: task %s, %lld parameters, %lld steps, out %s%s%s\n",
          task_name.c_str(), static_cast<long long>(model->num_parameters()),
          static_cast<long long>(steps), out_dir.c_str(),
          device.is_cpu() ? "" : (", device " + device.str()).c_str(),
          ranks > 1 ? (", data-parallel over " + std::to_string(ranks) + " ranks").c_str() : "");
    train::Trainer trainer(*model, forward, *task, optimizer, options,
                           optim::LRSchedule::cosine(lr, warmup, steps, lr * 0.1));
    train::TrainResult r = trainer.fit();
    if (rank == 0)
      std::printf("task %s: step %lld, validation accuracy %.2f%%, loss %.4f, %.1f s%s\n",
                  task_name.c_str(), static_cast<long long>(r.steps_done),
                  100 * r.last_validation.accuracy, r.last_validation.loss, r.seconds,
                  r.stopped_early ? " (stopped early; --resume continues)" : "");
  } catch (const std::exception& e) {
    if (ranks > 1)
      std::fprintf(stderr, "train_toy (rank %d of %d): %s\n", rank, ranks, e.what());
    else
      std::fprintf(stderr, "train_toy: %s\n", e.what());
    return 1;
  }
  return 0;
}
