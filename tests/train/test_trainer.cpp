// train::Trainer: learning on a task, metrics files, checkpoints, bitwise-exact resume,
// stopping on request, and the loss/accuracy of logits.
#include <doctest/doctest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "headgrad/headgrad.hpp"
#include "headgrad/nn/gpt.hpp"
#include "headgrad/optim/adam.hpp"
#include "headgrad/train/checkpoint.hpp"
#include "headgrad/train/tasks.hpp"
#include "headgrad/train/trainer.hpp"
#include "helpers.hpp"

using namespace headgrad;
namespace fs = std::filesystem;

namespace {

fs::path scratch(const std::string& name) {
  fs::path p = fs::temp_directory_path() / ("headgrad_trainer_" + name);
  fs::remove_all(p);
  return p;
}

// A tiny GPT on the copy task, AdamW, fixed seeds: everything a run depends on.
struct Setup {
  std::unique_ptr<train::Task> task;
  std::shared_ptr<nn::GPT> model;
  std::unique_ptr<optim::AdamW> optimizer;
  train::ForwardFn forward;

  explicit Setup(double dropout = 0.1) {
    manual_seed(123);
    train::TaskOptions to;
    to.seed = 7;
    to.length = 4;
    task = train::make_task("copy", to);
    nn::GPTOptions o;
    o.vocab_size = task->vocab_size();
    o.max_len = task->max_len();
    o.d_model = 16;
    o.nhead = 2;
    o.num_layers = 1;
    o.dropout = dropout;
    model = std::make_shared<nn::GPT>(o);
    optimizer =
        std::make_unique<optim::AdamW>(model->parameters(), optim::AdamWOptions().with_lr(3e-3));
    auto m = model;
    forward = [m](const train::Batch& b) { return m->forward(b.tokens, b.key_padding_mask); };
  }
  // The schedule spans `schedule_steps` whatever options.steps is, as a resumed run's must.
  train::TrainResult run(train::TrainerOptions options, std::int64_t schedule_steps = 100) {
    options.progress = false;
    options.batch_size = 16;
    options.eval_batches = 2;
    train::Trainer trainer(*model, forward, *task, *optimizer, options,
                           optim::LRSchedule::cosine(3e-3, 5, schedule_steps, 3e-4));
    return trainer.fit();
  }
};

std::vector<std::string> read_lines(const fs::path& p) {
  std::ifstream in(p);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

}  // namespace

TEST_CASE("evaluate_logits scores only targets that are not ignored") {
  train::Batch b;
  b.targets = from_vector<std::int64_t>({2, -100, 0, 1}, {2, 2});
  // Position (0,0) predicts 2 (right), (1,0) predicts 1 (wrong: 0), (1,1) predicts 1 (right).
  Tensor logits = zeros({2, 2, 3}, kFloat64);
  logits.set_at({0, 0, 2}, 5.0);
  logits.set_at({1, 0, 1}, 5.0);
  logits.set_at({1, 1, 1}, 5.0);
  train::Metrics m = train::evaluate_logits(logits, b, train::TaskKind::sequence);
  CHECK(m.scored == 3);
  CHECK(m.accuracy == doctest::Approx(2.0 / 3.0));
  const double expected =
      cross_entropy(reshape(logits, {4, 3}), reshape(b.targets, {4}), Reduction::mean).item();
  CHECK(m.loss == doctest::Approx(expected).epsilon(1e-12));
  CHECK_THROWS_AS(train::evaluate_logits(zeros({2, 3}), b, train::TaskKind::sequence), ShapeError);
}

TEST_CASE("the trainer lowers the loss and writes metrics and a checkpoint") {
  Setup s(0.0);
  const fs::path out = scratch("learns");
  train::TrainerOptions o;
  o.steps = 150;
  o.eval_every = 50;
  o.out_dir = out.string();
  const double before = s.run([] {
                           train::TrainerOptions none;
                           none.steps = 0;
                           return none;
                         }())
                            .last_validation.loss;
  train::TrainResult r = s.run(o, 150);
  CHECK(r.steps_done == 150);
  CHECK(r.last_validation.loss < 0.5 * before);
  auto csv = read_lines(out / "metrics.csv");
  REQUIRE(csv.size() == 1 + 3 * 2);  // header + (train, validation) at 50, 100, 150
  CHECK(csv[0] == "step,split,loss,accuracy,lr,elapsed_s,steps_per_s");
  CHECK(csv[6].rfind("150,validation,", 0) == 0);
  auto jsonl = read_lines(out / "metrics.jsonl");
  CHECK(jsonl.size() == 6);
  CHECK(jsonl[1].rfind("{\"step\": 50, \"split\": \"validation\"", 0) == 0);
  auto entries = train::load_npz((out / "checkpoint.npz").string());
  CHECK(entries.contains("token_embedding.weight"));
  CHECK(entries.at("trainer/step").item() == 150.0);
}

TEST_CASE("an interrupted and resumed run ends with bitwise the same weights") {
  set_num_threads(1);
  const fs::path whole = scratch("whole"), split = scratch("split");
  train::TrainerOptions o;
  o.steps = 30;
  o.eval_every = 10;
  o.checkpoint_every = 10;

  Setup uninterrupted;  // dropout 0.1: the default generator's state must be restored too
  o.out_dir = whole.string();
  uninterrupted.run(o);

  {
    Setup first;
    train::TrainerOptions part = o;
    part.steps = 20;
    part.out_dir = split.string();
    first.run(part);
  }
  manual_seed(999);  // a resumed process starts with some other generator state
  Setup second;      // fresh weights: everything must come from the checkpoint
  train::TrainerOptions rest = o;
  rest.out_dir = split.string();
  rest.resume = true;
  train::TrainResult r = second.run(rest);
  CHECK(r.resumed_from == 20);
  CHECK(r.steps_done == 30);
  for (auto& [name, t] : uninterrupted.model->state_dict()) {
    CAPTURE(name);
    CHECK(testing::max_abs_diff(t, second.model->state_dict().at(name)) == 0.0);
  }
  // The metrics read as one run: rows up to 20 from the first part, then 30.
  auto csv = read_lines(split / "metrics.csv");
  CHECK(csv.size() == 1 + 3 * 2);
  CHECK(read_lines(whole / "metrics.csv").size() == csv.size());
}

TEST_CASE("a stop request checkpoints at the current step and resume continues from it") {
  Setup s(0.0);
  const fs::path out = scratch("stop");
  std::atomic<bool> stop{true};
  train::TrainerOptions o;
  o.steps = 50;
  o.out_dir = out.string();
  o.stop_requested = &stop;
  train::TrainResult r = s.run(o);
  CHECK(r.stopped_early);
  CHECK(r.steps_done == 1);
  stop = false;
  o.resume = true;
  train::TrainResult r2 = s.run(o);
  CHECK(r2.resumed_from == 1);
  CHECK(r2.steps_done == 50);
}

TEST_CASE("the trainer refuses resume without an output folder") {
  Setup s(0.0);
  train::TrainerOptions o;
  o.resume = true;
  CHECK_THROWS_AS(train::Trainer(*s.model, s.forward, *s.task, *s.optimizer, o), ValueError);
}
