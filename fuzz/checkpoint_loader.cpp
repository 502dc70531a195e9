// Fuzz target: the trainer's resume from out_dir/checkpoint.npz (train::Trainer with
// resume on), which reads the archive, checks the trainer's entries and the run
// configuration, then loads the model and the optimizer all or nothing. Every input must
// end in a resumed run (one step, then a stop) or a headgrad error, and a refused
// checkpoint must leave the model and the optimizer exactly as they were.
//
// Seeds: with HEADGRAD_FUZZ_SEED_DIR set, initialization writes a valid checkpoint of this
// run there (the format follows the code, so the seed is made by it, not committed).
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "headgrad/core/storage.hpp"
#include "headgrad/nn/gpt.hpp"
#include "headgrad/optim/adam.hpp"
#include "headgrad/train/tasks.hpp"
#include "headgrad/train/trainer.hpp"

namespace {

using namespace headgrad;
namespace fs = std::filesystem;

struct Subject {
  std::unique_ptr<train::Task> task;
  std::shared_ptr<nn::GPT> model;
  std::unique_ptr<optim::AdamW> optimizer;
  fs::path dir = fs::temp_directory_path() / ("headgrad_fuzz_ckpt_" + std::to_string(::getpid()));
  std::atomic<bool> stop{true};

  Subject() {
    train::TaskOptions to;
    to.seed = 1;
    to.length = 3;
    task = train::make_task("copy", to);
    nn::GPTOptions options;
    options.vocab_size = task->vocab_size();
    options.max_len = task->max_len();
    options.d_model = 8;
    options.nhead = 2;
    options.num_layers = 1;
    Generator init(1);
    model = std::make_shared<nn::GPT>(options, &init);
    optimizer = std::make_unique<optim::AdamW>(model->parameters(), optim::AdamWOptions(1e-3));
    fs::create_directories(dir);
  }

  // One step of training (a stop is requested before the first), resuming when asked.
  void fit(bool resume) {
    train::TrainerOptions o;
    o.steps = std::int64_t{1} << 40;
    o.batch_size = 2;
    o.eval_batches = 1;
    o.progress = false;
    o.out_dir = dir.string();
    o.resume = resume;
    o.stop_requested = &stop;
    o.config.identity("model.heads", 2).identity("task.name", "copy");
    auto m = model;
    train::Trainer trainer(
        *model, [m](const train::Batch& b) { return m->forward(b.tokens); }, *task, *optimizer, o);
    trainer.fit();
  }

  nn::StateDict snapshot() const {
    nn::StateDict all;
    for (const auto& [k, t] : model->state_dict()) all.insert("model/" + k, t.clone());
    for (const auto& [k, t] : optimizer->state_dict()) all.insert("optimizer/" + k, t.clone());
    return all;
  }
};

bool same(const nn::StateDict& a, const nn::StateDict& b) {
  if (a.keys() != b.keys()) return false;
  for (const auto& [key, t] : a) {
    const Tensor& u = b.at(key);
    if (t.shape() != u.shape() || t.dtype() != u.dtype()) return false;
    const auto n = static_cast<std::size_t>(t.numel()) * element_size(t.dtype());
    if (n && std::memcmp(t.raw_data(), u.raw_data(), n) != 0) return false;
  }
  return true;
}

Subject& subject() {
  static Subject s;
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* dir = std::getenv("HEADGRAD_FUZZ_SEED_DIR")) {
    subject().fit(false);
    fs::copy_file(subject().dir / "checkpoint.npz", fs::path(dir) / "valid.npz",
                  fs::copy_options::overwrite_existing);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  set_max_tensor_bytes(std::size_t{64} << 20);
  Subject& s = subject();
  std::ofstream(s.dir / "checkpoint.npz", std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  const nn::StateDict before = s.snapshot();
  try {
    s.fit(true);
  } catch (const Error&) {
    if (!same(before, s.snapshot())) std::abort();  // a refused checkpoint changed the run
  }
  return 0;
}
