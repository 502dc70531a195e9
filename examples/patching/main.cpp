// patching: which heads of a trained recall model cause its answers. Reads a checkpoint
// written by train_toy (its "trainer/config" names the task and the model), draws a batch of
// the task, and applies the interventions protocol of inspect/recall_patching.hpp:
// activation patching of each head's z (and per position, and of the residual stream),
// attribution patching, zero / mean / resample ablation, direct logit attribution and the
// fewest heads whose joint patching restores 90% of the logit difference. Writes .npy, CSV,
// summary.json and heatmap PNGs to --out (see analysis.hpp, docs/inspect.md).
//
//   train_toy --task associative_recall --heads 4 --steps 1500 --out runs/recall
//   patching --checkpoint runs/recall/checkpoint.npz --out runs/recall/patching
#include <CLI/CLI.hpp>
#include <headgrad/headgrad.hpp>
#include <headgrad/nn/gpt.hpp>
#include <headgrad/train/checkpoint.hpp>
#include <headgrad/train/npz.hpp>
#include <headgrad/train/run_config.hpp>
#include <headgrad/train/tasks.hpp>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "../common/cli_checks.hpp"
#include "analysis.hpp"

using namespace headgrad;
namespace fs = std::filesystem;

namespace {

// The field of the checkpoint's run configuration, as text; ValueError naming the file.
std::string field(const train::RunConfig& config, const std::string& name,
                  const std::string& path) {
  const train::RunConfig::Field* f = config.find(name);
  if (!f)
    throw ValueError("checkpoint '" + path + "' records no '" + name +
                     "' in its trainer/config: write it with train_toy");
  return f->value;
}

std::int64_t integer(const train::RunConfig& config, const std::string& name,
                     const std::string& path) {
  const std::string text = field(config, name, path);
  try {
    return std::stoll(text);
  } catch (const std::exception&) {
    throw ValueError("checkpoint '" + path + "': " + name + " is '" + text + "', not an integer");
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Activation patching, ablation and logit attribution of a trained recall model."};
  std::string checkpoint, out_dir;
  std::int64_t examples = 128, batch_index = 0;
  std::uint64_t seed = 0;
  int threads = 1;
  bool no_positions = false, no_ablations = false, float64 = false;
  app.add_option("--checkpoint", checkpoint, "a train_toy checkpoint (.npz) of a recall task")
      ->required();
  app.add_option("--out", out_dir, "output folder (default: <checkpoint folder>/patching)");
  app.add_option("--examples", examples, "prompts in the batch")
      ->check(examples::integer_in(2, 4096))
      ->capture_default_str();
  app.add_option("--batch-index", batch_index,
                 "which validation batch (held out from training) gives the prompts")
      ->check(examples::integer_in(0, 1e9))
      ->capture_default_str();
  app.add_option("--seed", seed, "seed of resample ablation's permutation")
      ->check(examples::unsigned_integer())
      ->capture_default_str();
  app.add_option("--threads", threads, "CPU threads")
      ->check(examples::integer_in(1, 1024))
      ->capture_default_str();
  app.add_flag("--no-positions", no_positions, "skip the per-position grids");
  app.add_flag("--float64", float64, "analyse in float64 (the weights converted after loading)");
  app.add_flag("--no-ablations", no_ablations,
               "skip ablation, attribution patching and logit attribution");
  CLI11_PARSE(app, argc, argv);

  try {
    if (!fs::is_regular_file(checkpoint))
      throw ValueError("--checkpoint '" + checkpoint + "' is not a file");
    const train::NpzFile file = train::read_npz(checkpoint);
    const Tensor* config_entry = file.entries.find(std::string(train::kTrainerPrefix) + "config");
    if (!config_entry)
      throw ValueError("checkpoint '" + checkpoint +
                       "' has no trainer/config entry: write it with train_toy");
    const train::RunConfig config =
        train::RunConfig::from_json(train::tensor_text(*config_entry, checkpoint));
    const std::string task_name = field(config, "task.name", checkpoint);
    if (task_name != "associative_recall" && task_name != "mqar")
      throw ValueError("checkpoint '" + checkpoint + "' is of task '" + task_name +
                       "'; the patching protocol is defined for associative_recall and mqar");
    if (out_dir.empty()) out_dir = (fs::path(checkpoint).parent_path() / "patching").string();
    std::error_code ec;
    fs::create_directories(out_dir, ec);
    if (ec || !fs::is_directory(out_dir))
      throw ValueError("cannot create the output folder '" + out_dir + "' (choose another --out)");
    set_num_threads(threads);

    train::TaskOptions task_options;
    task_options.seed = static_cast<std::uint64_t>(integer(config, "seed", checkpoint));
    task_options.length = integer(config, "task.length", checkpoint);
    task_options.min_length = integer(config, "task.min_length", checkpoint);
    const auto task = train::make_task(task_name, task_options);
    nn::GPTOptions o;
    o.vocab_size = task->vocab_size();
    o.max_len = task->max_len();
    o.d_model = integer(config, "model.d_model", checkpoint);
    o.num_layers = integer(config, "model.layers", checkpoint);
    o.nhead = integer(config, "model.heads", checkpoint);
    o.per_head = field(config, "model.per_head", checkpoint) == "true";
    nn::GPT model(o);
    train::apply_checkpoint(file, checkpoint, model, nullptr);
    if (float64) model.to(kFloat64);
    model.eval();

    const train::Batch batch = task->batch(train::Split::validation, batch_index, examples);
    patching_study::AnalysisOptions options;
    options.positions = !no_positions;
    options.ablations = !no_ablations;
    options.seed = seed;
    const patching_study::RecallAnalysis analysis =
        patching_study::analyse_recall(model, *task, batch, options);
    const auto written = patching_study::write_analysis(analysis, out_dir);
    std::printf(
        "patching: %s, H = %lld, %lld prompts (%lld left out): logit difference %.3f "
        "clean, %.3f corrupted; %zu head(s) restore %.0f%%\n",
        task_name.c_str(), static_cast<long long>(o.nhead),
        static_cast<long long>(analysis.examples), static_cast<long long>(analysis.dropped),
        analysis.clean_metric, analysis.corrupted_metric, analysis.restoring.heads.size(),
        100 * analysis.restoring.restored);
    for (const auto& name : written) std::printf("  %s/%s\n", out_dir.c_str(), name.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "patching: %s\n", e.what());
    return 1;
  }
  return 0;
}
