// Fuzz target: train::load_checkpoint into a small GPT and its AdamW, then the trainer's
// generator state. Every input must end in a load or a headgrad error, and a refused
// checkpoint must leave the model and the optimizer exactly as they were.
//
// Seeds: with HEADGRAD_FUZZ_SEED_DIR set, initialization writes a valid checkpoint of this
// model there (the format follows the code, so the seed is made by it, not committed).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "headgrad/core/storage.hpp"
#include "headgrad/nn/gpt.hpp"
#include "headgrad/optim/adam.hpp"
#include "headgrad/train/checkpoint.hpp"
#include "memory_file.hpp"

namespace {

using namespace headgrad;

struct Subject {
  std::unique_ptr<nn::GPT> model;
  std::unique_ptr<optim::AdamW> optimizer;
  Generator generator{7};

  Subject() {
    nn::GPTOptions options;
    options.vocab_size = 8;
    options.max_len = 4;
    options.d_model = 8;
    options.nhead = 2;
    options.num_layers = 1;
    Generator init(1);
    model = std::make_unique<nn::GPT>(options, &init);
    optimizer = std::make_unique<optim::AdamW>(model->parameters(), optim::AdamWOptions(1e-3));
    // One step, so the optimizer holds state.
    Tensor loss = (*model)(zeros({1, 4}, TensorOptions(kInt64))).pow(2.0).sum();
    loss.backward();
    optimizer->step();
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
    nn::StateDict trainer;
    trainer.insert("step", scalar_tensor(1, TensorOptions(kInt64)));
    trainer.insert("generator", train::generator_state(subject().generator));
    train::save_checkpoint(std::string(dir) + "/valid.npz", *subject().model,
                           subject().optimizer.get(), trainer);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static fuzz::MemoryFile file;
  set_max_tensor_bytes(std::size_t{64} << 20);
  Subject& s = subject();
  const nn::StateDict before = s.snapshot();
  nn::StateDict trainer;
  try {
    trainer = train::load_checkpoint(file.hold(data, size), *s.model, s.optimizer.get());
  } catch (const Error&) {
    if (!same(before, s.snapshot())) std::abort();  // a refused checkpoint changed the model
    return 0;
  }
  if (const Tensor* state = trainer.find("generator")) {
    Generator g(3);
    try {
      train::set_generator_state(g, *state);
    } catch (const Error&) {
    }
  }
  return 0;
}
