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

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

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

// An integer field from lo to hi, read strictly: "2abc" is refused, not read as 2.
// ValueError naming the field, the file and the value.
std::int64_t integer(const train::RunConfig& config, const std::string& name,
                     const std::string& path, std::int64_t lo, std::int64_t hi) {
  const std::string text = field(config, name, path);
  if (const auto value = examples::parse_integer(text, lo, hi)) return *value;
  throw ValueError("checkpoint '" + path + "': trainer/config field " + name + " is '" + text +
                   "', not an integer from " + std::to_string(lo) + " to " + std::to_string(hi) +
                   " (the file was edited or damaged: train the model again with train_toy)");
}

// The seed field, read as train_toy's --seed is: "-1" is refused, not wrapped to 2^64 - 1.
std::uint64_t seed_of(const train::RunConfig& config, const std::string& path) {
  const std::string text = field(config, "seed", path);
  if (const auto value = examples::parse_unsigned(text)) return *value;
  throw ValueError("checkpoint '" + path + "': trainer/config field seed is '" + text + "', not " +
                   examples::kUnsignedRange +
                   " (the file was edited or damaged: train the model again with train_toy)");
}

// The heads of each attention layer as the archive comment records them (save_checkpoint
// writes the weights' own layout there); nullopt when the comment is missing or not
// headgrad's.
std::optional<std::vector<std::pair<std::string, std::int64_t>>> recorded_heads(
    const std::string& comment) {
  const auto j = nlohmann::json::parse(comment, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("headgrad") || !j["headgrad"].is_object() ||
      !j["headgrad"].contains("attention") || !j["headgrad"]["attention"].is_array())
    return std::nullopt;
  std::vector<std::pair<std::string, std::int64_t>> out;
  for (const auto& layer : j["headgrad"]["attention"]) {
    if (!layer.is_object() || !layer.contains("layer") || !layer["layer"].is_string() ||
        !layer.contains("heads") || !layer["heads"].is_number_integer())
      return std::nullopt;
    out.emplace_back(layer["layer"].get<std::string>(), layer["heads"].get<std::int64_t>());
  }
  return out;
}

// Per-head weights name their heads ("layers.0.self_attn.heads.<h>.q_proj.weight"): the
// head count of layer 0, or 0 when the weights are fused (the same shapes for any count).
std::int64_t heads_in_weights(const train::NpzFile& file) {
  const std::string prefix = "layers.0.self_attn.heads.";
  std::int64_t heads = 0;
  for (const auto& [key, tensor] : file.entries) {
    if (key.rfind(prefix, 0) != 0) continue;
    const std::string rest = key.substr(prefix.size());
    if (const auto h = examples::parse_integer(rest.substr(0, rest.find('.')), 0, 1 << 20))
      heads = std::max(heads, *h + 1);
  }
  return heads;
}

// Refuses a checkpoint whose trainer/config head count is not its weights': the analysis
// would split every projection into the wrong heads. The weights' count comes from the
// archive comment or, without it, from per-head weights' names; fused weights without the
// comment cannot tell, and are refused too.
void check_heads(const train::NpzFile& file, const std::string& path, std::int64_t heads,
                 bool per_head) {
  const std::string says = "trainer/config field model.heads is " + std::to_string(heads);
  const std::string fix =
      ": the file's configuration and weights disagree (it was edited or assembled from two "
      "runs). Train the model again with train_toy, or set model.heads to the weights' count";
  if (const auto recorded = recorded_heads(file.comment)) {
    for (const auto& [layer, count] : *recorded)
      if (count != heads)
        throw ValueError("checkpoint '" + path + "': " + says + ", but its weights are those of " +
                         std::to_string(count) + " heads in " + layer +
                         " (recorded in the archive comment)" + fix + " (" + std::to_string(count) +
                         ")");
    return;
  }
  const std::int64_t in_weights = per_head ? heads_in_weights(file) : 0;
  if (in_weights > 0 && in_weights != heads)
    throw ValueError("checkpoint '" + path + "': " + says + ", but its per-head weights hold " +
                     std::to_string(in_weights) + " heads in layers.0.self_attn" + fix + " (" +
                     std::to_string(in_weights) + ")");
  if (in_weights == 0)
    throw ValueError(
        "checkpoint '" + path + "': " + says +
        ", which cannot be checked against the weights: the archive comment that records "
        "their heads is missing (numpy.savez and zip tools drop it), and fused attention "
        "weights have the same shapes for any head count. Write the checkpoint with headgrad "
        "(train_toy, or headgrad::train::save_checkpoint), which records it");
}

// The command-line options (out_dir: --out, or its default once the checkpoint is read).
struct Options {
  std::string checkpoint, out_dir;
  std::int64_t examples = 128, batch_index = 0;
  std::uint64_t seed = 0;
  int threads = 1;
  bool no_positions = false, no_ablations = false, float64 = false;
  std::string corruption = "query";
};

// Declares the command-line options, filling `o`.
void add_options(CLI::App& app, Options& o) {
  app.add_option("--checkpoint", o.checkpoint, "a train_toy checkpoint (.npz) of a recall task")
      ->required();
  app.add_option("--out", o.out_dir, "output folder (default: <checkpoint folder>/patching)");
  app.add_option("--examples", o.examples, "prompts in the batch")
      ->check(examples::integer_in(2, 4096))
      ->capture_default_str();
  app.add_option("--batch-index", o.batch_index,
                 "which validation batch (held out from training) gives the prompts")
      ->check(examples::integer_in(0, 1e9))
      ->capture_default_str();
  app.add_option("--seed", o.seed, "seed of resample ablation's permutation")
      ->check(examples::unsigned_integer())
      ->capture_default_str();
  app.add_option("--threads", o.threads, "CPU threads")
      ->check(examples::integer_in(1, 1024))
      ->capture_default_str();
  app.add_option("--corruption", o.corruption,
                 "query: the query's key replaced (layer 0 cannot show an effect at earlier "
                 "positions); context: the query's key and another key swap places in the "
                 "context, so the path patching can show a layer-0 head feeding the keys")
      ->check(CLI::IsMember({"query", "context"}))
      ->capture_default_str();
  app.add_flag("--no-positions", o.no_positions, "skip the per-position grids");
  app.add_flag("--float64", o.float64, "analyse in float64 (the weights converted after loading)");
  app.add_flag("--no-ablations", o.no_ablations,
               "skip ablation, attribution patching and logit attribution");
}

// The checkpoint's trainer/config; ValueError when it has none.
train::RunConfig run_config(const train::NpzFile& file, const std::string& checkpoint) {
  const Tensor* config_entry = file.entries.find(std::string(train::kTrainerPrefix) + "config");
  if (!config_entry)
    throw ValueError("checkpoint '" + checkpoint +
                     "' has no trainer/config entry: write it with train_toy");
  return train::RunConfig::from_json(train::tensor_text(*config_entry, checkpoint));
}

// The configuration's task name; ValueError unless it is a recall task.
std::string recall_task_name(const train::RunConfig& config, const std::string& checkpoint) {
  const std::string task_name = field(config, "task.name", checkpoint);
  if (task_name != "associative_recall" && task_name != "mqar")
    throw ValueError("checkpoint '" + checkpoint + "' is of task '" + task_name +
                     "'; the patching protocol is defined for associative_recall and mqar");
  return task_name;
}

// The task `task_name` with the configuration's seed and lengths.
std::unique_ptr<train::Task> task_of(const train::RunConfig& config, const std::string& checkpoint,
                                     const std::string& task_name) {
  train::TaskOptions task_options;
  task_options.seed = seed_of(config, checkpoint);
  task_options.length = integer(config, "task.length", checkpoint, 1, 100000);
  task_options.min_length = integer(config, "task.min_length", checkpoint, 0, 100000);
  return train::make_task(task_name, task_options);
}

// The GPT of the configuration's model fields, sized for `task`.
nn::GPTOptions model_options(const train::RunConfig& config, const std::string& checkpoint,
                             const train::Task& task) {
  nn::GPTOptions o;
  o.vocab_size = task.vocab_size();
  o.max_len = task.max_len();
  o.d_model = integer(config, "model.d_model", checkpoint, 1, 65536);
  o.num_layers = integer(config, "model.layers", checkpoint, 1, 1024);
  o.nhead = integer(config, "model.heads", checkpoint, 1, 65536);
  o.per_head = field(config, "model.per_head", checkpoint) == "true";
  return o;
}

// Sets --out's default (<checkpoint folder>/patching) and creates the folder; ValueError
// when it cannot be created.
void create_output_folder(Options& o) {
  if (o.out_dir.empty()) o.out_dir = (fs::path(o.checkpoint).parent_path() / "patching").string();
  std::error_code ec;
  fs::create_directories(o.out_dir, ec);
  if (ec || !fs::is_directory(o.out_dir))
    throw ValueError("cannot create the output folder '" + o.out_dir + "' (choose another --out)");
}

// Analyses `model` on the chosen validation batch, writes the files to --out and prints
// the result and the files written.
void analyse_and_write(const Options& o, nn::GPT& model, const train::Task& task,
                       const std::string& task_name) {
  const train::Batch batch = task.batch(train::Split::validation, o.batch_index, o.examples);
  patching_study::AnalysisOptions options;
  options.positions = !o.no_positions;
  options.ablations = !o.no_ablations;
  options.seed = o.seed;
  options.corruption = inspect::parse_recall_corruption(o.corruption);
  const patching_study::RecallAnalysis analysis =
      patching_study::analyse_recall(model, task, batch, options);
  const auto written = patching_study::write_analysis(analysis, o.out_dir);
  std::printf(
      "patching: %s, H = %lld, %lld prompts (%lld left out): logit difference %.3f "
      "clean, %.3f corrupted; %zu head(s) restore %.0f%%\n",
      task_name.c_str(), static_cast<long long>(model.options().nhead),
      static_cast<long long>(analysis.examples), static_cast<long long>(analysis.dropped),
      analysis.clean_metric, analysis.corrupted_metric, analysis.restoring.heads.size(),
      100 * analysis.restoring.restored);
  for (const auto& name : written) std::printf("  %s/%s\n", o.out_dir.c_str(), name.c_str());
}

// Loads and checks the checkpoint, then analyses its model (see the header comment).
void run_patching(Options& o) {
  if (!fs::is_regular_file(o.checkpoint))
    throw ValueError("--checkpoint '" + o.checkpoint + "' is not a file");
  const train::NpzFile file = train::read_npz(o.checkpoint);
  const train::RunConfig config = run_config(file, o.checkpoint);
  const std::string task_name = recall_task_name(config, o.checkpoint);
  set_num_threads(o.threads);

  const auto task = task_of(config, o.checkpoint, task_name);
  const nn::GPTOptions model_config = model_options(config, o.checkpoint, *task);
  check_heads(file, o.checkpoint, model_config.nhead, model_config.per_head);
  nn::GPT model(model_config);
  train::apply_checkpoint(file, o.checkpoint, model, nullptr);
  if (o.float64) model.to(kFloat64);
  model.eval();
  // Created once the checkpoint is known to be good: a refused one leaves no folder.
  create_output_folder(o);
  analyse_and_write(o, model, *task, task_name);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Activation patching, ablation and logit attribution of a trained recall model."};
  Options o;
  add_options(app, o);
  CLI11_PARSE(app, argc, argv);

  try {
    run_patching(o);
  } catch (const std::exception& e) {
    const std::string what = e.what();  // file errors already name the program
    std::fprintf(stderr, "%s%s\n",
                 what.rfind("patching: ", 0) == 0 ? "" : "patching: ", what.c_str());
    return 1;
  }
  return 0;
}
