// attention_view: trains one GPT per head count at the same width on a sequence task and
// writes the interactive attention view (inspect::write_attention_view) of them side by
// side on the same report-split examples: one HTML file that opens offline.
//
//   attention_view --task associative_recall --heads 1,8 --out runs/view/view.html
//   attention_view --task copy --heads 1,2,4 --d-model 32 --steps 400 --out copy.html
//
// The defaults (E 64, 2 layers, 1000 steps at lr 1e-3, recall of 6 pairs) train both
// models to 100% report accuracy in about 8 s on one core.
//
// --expected FILE also writes the captured float patterns of the first two examples as
// JSON (the browser test compares the page's cells with them).
#include <CLI/CLI.hpp>
#include <headgrad/headgrad.hpp>
#include <headgrad/inspect/capture.hpp>
#include <headgrad/inspect/heads.hpp>
#include <headgrad/inspect/mechanism.hpp>
#include <headgrad/inspect/view.hpp>
#include <headgrad/nn/gpt.hpp>
#include <headgrad/optim/adam.hpp>
#include <headgrad/train/atomic_write.hpp>
#include <headgrad/train/tasks.hpp>
#include <headgrad/train/trainer.hpp>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>

#include "../common/cli_checks.hpp"

using namespace headgrad;

namespace {

struct Options {
  std::string task = "associative_recall", out = "view.html", expected;
  std::vector<std::int64_t> heads = {1, 8};
  std::int64_t d_model = 64, layers = 2, steps = 1000, length = 6, examples = 16;
  double lr = 1e-3;
  std::uint64_t seed = 0;
};

// [layer][head] of a layer-major list of per-head values.
std::vector<std::vector<double>> per_layer(const std::vector<double>& flat, std::int64_t heads) {
  std::vector<std::vector<double>> out;
  for (std::size_t i = 0; i < flat.size(); i += static_cast<std::size_t>(heads))
    out.emplace_back(flat.begin() + static_cast<std::ptrdiff_t>(i),
                     flat.begin() + static_cast<std::ptrdiff_t>(i + heads));
  return out;
}

// Each head's scores on validation batches: induction (on the scored query) and
// previous-token scores, importance, and the gradient norm of its output z on one batch.
std::vector<inspect::ViewScore> head_scores(nn::Module& model, const train::ForwardFn& forward,
                                            const train::Task& task, std::int64_t heads) {
  const auto validation = train::Split::validation;
  const auto mech = inspect::mechanism_scores(model, forward, task, validation, 4, 64);
  const auto importance = inspect::head_importance(model, forward, task, validation, 4, 64);
  inspect::Capture capture(model, {"z"});
  {
    auto scope = capture.activate();
    const train::Batch b = task.batch(validation, 0, 64);
    model.zero_grad();
    task.loss(forward(b), b).backward();
  }
  std::vector<double> z;
  for (const auto& n : inspect::head_grad_norms(model, &capture)) z.push_back(n.z);
  model.zero_grad();
  return {{"induction", "induction", mech.induction_scored},
          {"previous_token", "prev-token", mech.previous_token},
          {"importance", "importance", importance.normalized},
          {"grad_norm", "|dL/dz|", per_layer(z, heads)}};
}

inspect::ViewModel train_and_capture(const Options& o, const train::Task& task, std::int64_t heads,
                                     const train::Batch& shown) {
  nn::GPTOptions g;
  g.vocab_size = task.vocab_size();
  g.max_len = task.max_len();
  g.d_model = o.d_model;
  g.nhead = heads;
  g.num_layers = o.layers;
  Generator init(o.seed);
  nn::GPT model(g, &init);
  const train::ForwardFn forward = [&](const train::Batch& b) {
    return model.forward(b.tokens, b.key_padding_mask);
  };
  optim::AdamW opt(model.parameters(), optim::AdamWOptions().with_lr(o.lr));
  train::TrainerOptions t;
  t.steps = o.steps;
  t.batch_size = 32;
  t.eval_every = 0;
  t.progress = false;
  train::Trainer(model, forward, task, opt, t).fit();
  const auto acc = train::evaluate(model, forward, task, train::Split::validation, 4, 64).accuracy;
  const std::string name = "H = " + std::to_string(heads) + " (E " + std::to_string(o.d_model) +
                           ", d " + std::to_string(o.d_model / heads) + ") · accuracy " +
                           std::to_string(static_cast<int>(acc * 100 + 0.5)) + "%";
  std::printf("attention_view: %s\n", name.c_str());
  inspect::ViewModel view = inspect::capture_view_model(model, forward, shown, name);
  view.scores = head_scores(model, forward, task, heads);
  return view;
}

// The first two examples' float patterns, [example][layer][head][T*T], per model.
void write_expected(const std::string& path, const inspect::ViewGroup& g) {
  nlohmann::json models = nlohmann::json::array();
  const std::int64_t t = g.length, kept = std::min<std::int64_t>(2, g.examples.size());
  for (const auto& m : g.models) {
    nlohmann::json examples = nlohmann::json::array();
    for (std::int64_t e = 0; e < kept; ++e) {
      nlohmann::json layers = nlohmann::json::array();
      for (std::int64_t l = 0; l < m.layers; ++l) {
        nlohmann::json heads = nlohmann::json::array();
        for (std::int64_t h = 0; h < m.heads; ++h) {
          const auto first = m.patterns.begin() + ((e * m.layers + l) * m.heads + h) * t * t;
          heads.push_back(std::vector<float>(first, first + t * t));
        }
        layers.push_back(heads);
      }
      examples.push_back(layers);
    }
    models.push_back(
        {{"name", m.name}, {"layers", m.layers}, {"heads", m.heads}, {"patterns", examples}});
  }
  const nlohmann::json j = {
      {"groups", {{{"name", g.name}, {"T", t}, {"examples", kept}, {"models", models}}}}};
  train::write_file_atomically(path, j.dump() + "\n", "attention_view");
}

// Declares the command-line options, filling `o`.
void add_options(CLI::App& app, Options& o) {
  app.add_option("--task", o.task, "a sequence task (associative_recall, copy, sort, ...)")
      ->capture_default_str();
  app.add_option("--heads", o.heads, "head counts, one model each, at the same width")
      ->delimiter(',')
      ->check(examples::integer_in(1, 64))
      ->capture_default_str();
  app.add_option("--d-model", o.d_model, "model width E")
      ->check(examples::integer_in(1, 4096))
      ->capture_default_str();
  app.add_option("--layers", o.layers, "layers")
      ->check(examples::integer_in(1, 64))
      ->capture_default_str();
  app.add_option("--steps", o.steps, "AdamW steps per model")
      ->check(examples::integer_in(0, 1e9))
      ->capture_default_str();
  app.add_option("--length", o.length, "the task's length")
      ->check(examples::integer_in(1, 1000))
      ->capture_default_str();
  app.add_option("--examples", o.examples, "report-split examples shown")
      ->check(examples::integer_in(1, 1024))
      ->capture_default_str();
  app.add_option("--lr", o.lr, "learning rate")
      ->check(examples::real_in(0, 1, examples::Open::low))
      ->capture_default_str();
  app.add_option("--seed", o.seed, "seed of the task and the models")
      ->check(examples::unsigned_integer())
      ->capture_default_str();
  app.add_option("--out", o.out, "the HTML file to write")
      ->check(examples::output_file())
      ->capture_default_str();
  app.add_option("--expected", o.expected, "also write the first two examples' patterns as JSON")
      ->check(examples::output_file());
}

// The sequence task of the options; ValueError for a width no head count divides or a task
// that is not a sequence task.
std::unique_ptr<train::Task> checked_task(const Options& o) {
  for (const std::int64_t h : o.heads)
    if (o.d_model % h != 0)
      throw ValueError("attention_view: --d-model " + std::to_string(o.d_model) +
                       " is not divisible by --heads " + std::to_string(h));
  train::TaskOptions to;
  to.seed = o.seed;
  to.length = o.length;
  to.test_fraction = 0.15;
  auto task = train::make_task(o.task, to);
  if (task->kind() != train::TaskKind::sequence)
    throw ValueError("attention_view: --task " + o.task +
                     " is not a sequence task (a decoder-only GPT is trained)");
  return task;
}

// Trains one model per head count and gathers them, on the shown examples, into one group.
inspect::ViewGroup trained_group(const Options& o, const train::Task& task) {
  const train::Batch shown = task.batch(train::Split::test, 0, o.examples);
  inspect::ViewGroup group;
  group.name = o.task;
  group.length = shown.tokens.size(1);
  group.examples = inspect::view_examples(task, shown);
  for (const std::int64_t h : o.heads) group.models.push_back(train_and_capture(o, task, h, shown));
  group.model_b = group.models.size() - 1;
  return group;
}

// Writes the attention view of `group` to --out (and its patterns to --expected, if given).
void write_outputs(const Options& o, const inspect::ViewGroup& group) {
  inspect::AttentionView view;
  view.title = o.task + ": " + std::to_string(o.heads.size()) + " head counts at width " +
               std::to_string(o.d_model);
  view.note = "GPTs trained " + std::to_string(o.steps) + " AdamW steps each (lr " +
              std::to_string(o.lr) + ", seed " + std::to_string(o.seed) + "), shown on " +
              std::to_string(o.examples) + " report-split examples.";
  view.groups.push_back(group);
  // Temporary files of an earlier run killed mid-write; a live writer's are kept.
  const std::filesystem::path folder = std::filesystem::path(o.out).parent_path();
  train::remove_stale_temp_files(folder.empty() ? "." : folder);
  inspect::write_attention_view(o.out, view);
  if (!o.expected.empty()) write_expected(o.expected, group);
  std::printf("attention_view: wrote %s\n", o.out.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Train GPTs with different head counts and write their attention view."};
  Options o;
  add_options(app, o);
  CLI11_PARSE(app, argc, argv);
  try {
    const auto task = checked_task(o);
    write_outputs(o, trained_group(o, *task));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
