// Resuming a Trainer safely: a checkpoint carries its run configuration and a resume that
// disagrees is refused naming each field (unless a setting is given explicitly, which is
// logged and used); a corrupted checkpoint is refused with the model, the optimizer and
// the metrics files untouched; temporary files of an interrupted save are removed; and the
// metrics continue across a resume as one run.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>

#include "headgrad/headgrad.hpp"
#include "headgrad/nn/gpt.hpp"
#include "headgrad/optim/adam.hpp"
#include "headgrad/train/checkpoint.hpp"
#include "headgrad/train/npz.hpp"
#include "headgrad/train/run_config.hpp"
#include "headgrad/train/tasks.hpp"
#include "headgrad/train/trainer.hpp"

using namespace headgrad;
namespace fs = std::filesystem;

namespace {

fs::path scratch(const std::string& name) {
  fs::path p =
      fs::temp_directory_path() / ("headgrad_resume_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(p);
  return p;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A tiny GPT on the copy task with AdamW; `heads` and `weight_decay` vary per test.
struct Run {
  std::unique_ptr<train::Task> task;
  std::shared_ptr<nn::GPT> model;
  std::unique_ptr<optim::AdamW> optimizer;

  explicit Run(std::int64_t heads = 2, double weight_decay = 0.01) {
    manual_seed(5);
    train::TaskOptions to;
    to.seed = 3;
    to.length = 4;
    task = train::make_task("copy", to);
    nn::GPTOptions o;
    o.vocab_size = task->vocab_size();
    o.max_len = task->max_len();
    o.d_model = 16;
    o.nhead = heads;
    o.num_layers = 1;
    model = std::make_shared<nn::GPT>(o);
    optimizer = std::make_unique<optim::AdamW>(
        model->parameters(), optim::AdamWOptions().with_lr(3e-3).with_weight_decay(weight_decay));
  }

  train::TrainerOptions options(const fs::path& out, std::int64_t steps) const {
    train::TrainerOptions o;
    o.steps = steps;
    o.eval_every = 10;
    o.batch_size = 8;
    o.eval_batches = 1;
    o.progress = false;
    o.out_dir = out.string();
    o.config.identity("model.heads", model->options().nhead).identity("task.name", "copy");
    return o;
  }

  train::TrainResult fit(const train::TrainerOptions& o) {
    auto m = model;
    train::Trainer trainer(
        *model, [m](const train::Batch& b) { return m->forward(b.tokens); }, *task, *optimizer, o);
    return trainer.fit();
  }

  nn::StateDict weights() const {
    nn::StateDict out;
    for (const auto& [k, t] : model->state_dict()) out.insert(k, t.clone());
    return out;
  }
};

bool same_weights(const nn::StateDict& a, const nn::StateDict& b) {
  for (const auto& [k, t] : a) {
    const Tensor& u = b.at(k);
    if (t.shape() != u.shape() || t.dtype() != u.dtype()) return false;
    const auto n = static_cast<std::size_t>(t.numel()) * element_size(t.dtype());
    if (std::memcmp(t.raw_data(), u.raw_data(), n) != 0) return false;
  }
  return true;
}

template <typename F>
std::string value_error(F&& f) {
  try {
    f();
  } catch (const ValueError& e) {
    return e.what();
  }
  FAIL("no ValueError");
  return {};
}

// Rewrites the checkpoint at `path` with entry `key` replaced by make(the old entry).
void tamper(const fs::path& path, const std::string& key,
            const std::function<Tensor(const Tensor&)>& make) {
  nn::StateDict entries = train::load_npz(path.string());
  entries.insert(key, make(entries.at(key)));
  train::save_npz(path.string(), entries);
}

}  // namespace

TEST_CASE("RunConfig round-trips through JSON and a tensor of bytes") {
  train::RunConfig c;
  c.identity("model.heads", 8).identity("task.name", "sort").setting("optimizer.lr", 1e-3);
  c.setting("flag", true).identity("model.heads", 4);  // replaces the value in place
  c.command_line = "train_toy --heads 4";
  const train::RunConfig back =
      train::RunConfig::from_json(train::tensor_text(train::text_tensor(c.to_json()), "config"));
  REQUIRE(back.fields.size() == 4);
  CHECK(back.fields[0].name == "model.heads");
  CHECK(back.fields[0].value == "4");
  CHECK(back.find("optimizer.lr")->value == "0.001");
  CHECK(back.find("optimizer.lr")->kind == train::RunConfig::Kind::setting);
  CHECK(back.find("flag")->value == "true");
  CHECK(back.command_line == "train_toy --heads 4");
  CHECK_THROWS_AS(train::RunConfig::from_json("{\"fields\": 3}"), ValueError);
  CHECK_THROWS_AS(train::RunConfig::from_json("not json"), ValueError);
  CHECK_THROWS_AS(train::tensor_text(from_vector<std::int64_t>({65, 300}, {2}), "config"),
                  ValueError);
  CHECK_THROWS_AS(train::tensor_text(zeros({2}), "config"), ValueError);
}

TEST_CASE("compare_configs refuses identity changes and unannounced setting changes") {
  train::RunConfig saved, now;
  saved.identity("model.heads", 8).setting("optimizer.lr", 0.001).setting("clip", 1.0);
  now.identity("model.heads", 4).setting("optimizer.lr", 0.003).setting("clip", 2.0);
  now.explicit_settings = {"optimizer.lr", "model.heads"};  // an identity cannot be overridden
  const train::ConfigComparison cmp = train::compare_configs(saved, now);
  REQUIRE(cmp.refused.size() == 2);
  CHECK(cmp.refused[0].rfind("model.heads: 8 in the checkpoint, 4 now", 0) == 0);
  CHECK(cmp.refused[1].rfind("clip: 1 in the checkpoint, 2 now", 0) == 0);
  CHECK(cmp.overridden_names == std::vector<std::string>{"optimizer.lr"});
  now.identity("extra", 1);
  CHECK(train::compare_configs(saved, now).refused.size() == 3);  // "(absent)" differs too
}

TEST_CASE("a checkpoint of another head count is refused naming the field, nothing changed") {
  const fs::path out = scratch("heads");
  Run eight(8);
  eight.fit(eight.options(out, 10));
  // H = 4 at d_model 16 has the same parameter shapes as H = 8: only the record tells.
  Run four(4);
  const std::string metrics = read_file(out / "metrics.csv");
  const std::string checkpoint = read_file(out / "checkpoint.npz");
  const nn::StateDict before = four.weights();
  train::TrainerOptions o = four.options(out, 20);
  o.resume = true;
  const std::string why = value_error([&] { four.fit(o); });
  CHECK(why.find("model.heads: 8 in the checkpoint, 4 now") != std::string::npos);
  CHECK(why.find("nothing was loaded") != std::string::npos);
  CHECK(read_file(out / "metrics.csv") == metrics);
  CHECK(read_file(out / "checkpoint.npz") == checkpoint);
  CHECK(same_weights(before, four.weights()));
}

TEST_CASE("a changed setting resumes only when given explicitly, and is then used and reported") {
  const fs::path out = scratch("setting");
  Run first(2, 0.01);
  first.fit(first.options(out, 10));
  Run second(2, 0.5);
  train::TrainerOptions o = second.options(out, 20);
  o.resume = true;
  const std::string why = value_error([&] { second.fit(o); });
  CHECK(why.find("optimizer.weight_decay: 0.01") != std::string::npos);
  CHECK(why.find("give it explicitly") != std::string::npos);
  o.config.explicit_settings = {"optimizer.weight_decay"};
  const train::TrainResult r = second.fit(o);
  CHECK(r.resumed_from == 10);
  REQUIRE(r.overridden.size() == 1);
  CHECK(r.overridden[0].rfind("optimizer.weight_decay: 0.01", 0) == 0);
  CHECK(second.optimizer->state_dict().at("weight_decay").item() == 0.5);
}

TEST_CASE("corrupted trainer, model and optimizer entries are refused with nothing changed") {
  using Make = std::function<Tensor(const Tensor&)>;
  struct Case {
    std::string key;
    Make make;
    std::string words;
  };
  const std::vector<Case> cases = {
      {"trainer/step", [](const Tensor&) { return scalar_tensor(-5, TensorOptions(kInt64)); },
       "negative"},
      {"trainer/step",
       [](const Tensor&) {
         return full({}, static_cast<double>(std::int64_t{1} << 62), TensorOptions(kInt64));
       },
       "past this run's 20 steps"},
      {"trainer/step", [](const Tensor&) { return scalar_tensor(2.5, TensorOptions(kFloat64)); },
       "0-d int64"},
      {"trainer/elapsed_s",
       [](const Tensor&) { return scalar_tensor(NAN, TensorOptions(kFloat64)); }, "elapsed_s"},
      {"trainer/config",
       [](const Tensor&) {
         return from_vector<std::int64_t>({123, 999}, {2});
       },
       "not a byte"},
      {"lm_head.weight", [](const Tensor& old) { return full_like(old, NAN); },
       "'lm_head.weight' holds nan"},
      {"optimizer/state.0.exp_avg_sq", [](const Tensor& old) { return full_like(old, -1.0); },
       "expected finite values >= 0"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.key);
    CAPTURE(c.words);
    const fs::path out = scratch("corrupt");
    Run first;
    first.fit(first.options(out, 10));
    tamper(out / "checkpoint.npz", c.key, c.make);
    const std::string metrics = read_file(out / "metrics.csv");
    Run second;
    const nn::StateDict before = second.weights();
    const nn::StateDict optimizer_before = second.optimizer->state_dict();
    train::TrainerOptions o = second.options(out, 20);
    o.resume = true;
    const std::string why = value_error([&] { second.fit(o); });
    CHECK(why.find(c.words) != std::string::npos);
    CHECK(read_file(out / "metrics.csv") == metrics);
    CHECK(same_weights(before, second.weights()));
    CHECK(second.optimizer->state_dict().size() == optimizer_before.size());
  }
}

TEST_CASE("temporary files of an interrupted save are removed at the next start") {
  const fs::path out = scratch("stale");
  fs::create_directories(out);
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ::waitpid(child, nullptr, 0);  // a process that no longer runs
  const fs::path stale = out / (".checkpoint.npz.tmp-" + std::to_string(child) + "-0-1");
  const fs::path live = out / (".checkpoint.npz.tmp-" + std::to_string(::getppid()) + "-0-1");
  std::ofstream(stale) << "partial";
  std::ofstream(live) << "a write in progress";
  Run run;
  run.fit(run.options(out, 5));
  CHECK_FALSE(fs::exists(stale));
  CHECK(fs::exists(live));
}

TEST_CASE("metrics continue across a resume: the training window and elapsed time") {
  const fs::path whole = scratch("window_whole"), split = scratch("window_split");
  Run a;
  a.fit(a.options(whole, 20));
  Run b;
  b.fit(b.options(split, 15));  // stops mid-window (evaluations at 10 and 20)
  Run c;
  train::TrainerOptions o = c.options(split, 20);
  o.resume = true;
  c.fit(o);
  auto rows = [](const fs::path& p) {
    std::vector<std::vector<std::string>> out;
    std::istringstream in(read_file(p / "metrics.csv"));
    for (std::string line; std::getline(in, line);) {
      std::vector<std::string> cells;
      std::istringstream cs(line);
      for (std::string cell; std::getline(cs, cell, ',');) cells.push_back(cell);
      out.push_back(cells);
    }
    return out;
  };
  const auto w = rows(whole), s = rows(split);
  // The split run also evaluated at its end, step 15; the rest must agree row by row.
  std::vector<std::vector<std::string>> s_without_15;
  for (const auto& r : s)
    if (r[0] != "15") s_without_15.push_back(r);
  REQUIRE(s_without_15.size() == w.size());
  double last_elapsed = 0;
  for (std::size_t i = 1; i < w.size(); ++i) {
    CAPTURE(i);
    CHECK(s_without_15[i][0] == w[i][0]);  // step
    CHECK(s_without_15[i][2] == w[i][2]);  // loss: the window spans the resume
    CHECK(s_without_15[i][3] == w[i][3]);  // accuracy
    const double elapsed = std::stod(s_without_15[i][5]);
    CHECK(elapsed >= last_elapsed);  // elapsed_s does not restart
    last_elapsed = elapsed;
  }
}

TEST_CASE("an output folder that cannot hold the metrics is an IOError before training") {
  const fs::path out = scratch("folder");
  fs::create_directories(out / "metrics.jsonl");  // a folder where a file must go
  Run run;
  CHECK_THROWS_AS(run.fit(run.options(out, 5)), train::IOError);
  const fs::path file = scratch("file_in_the_way");
  std::ofstream(file) << "x";
  CHECK_THROWS_AS(run.fit(run.options(file / "sub", 5)), train::IOError);
}
