// save_checkpoint / load_checkpoint and generator states: bitwise round trips into fresh
// models (float32, float64), resumed training that matches uninterrupted training bit for
// bit (SGD, Adam, AdamW), the archive's names, and refusals (wrong shape, missing,
// unexpected or bad entries, corrupted files, bad optimizer state) that leave the model
// and the optimizer exactly as they were.
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "headgrad/headgrad.hpp"
#include "headgrad/optim/adam.hpp"
#include "headgrad/optim/sgd.hpp"
#include "headgrad/train/checkpoint.hpp"

namespace fs = std::filesystem;
using namespace headgrad;
using train::IOError;

namespace {

struct ScratchDir {
  fs::path path;
  explicit ScratchDir(const std::string& name)
      : path(fs::temp_directory_path() /
             ("headgrad_test_checkpoint_" + std::to_string(::getpid()) + "_" + name)) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string operator/(const std::string& file) const { return (path / file).string(); }
};

// Two linear layers in a ModuleList after an encoder, an int64 and a bool buffer:
// encoder.{weight,bias}, layers.0.{weight,bias}, layers.1.weight, steps, mask.
class TinyNet : public nn::Module {
 public:
  TinyNet(std::int64_t in_features, std::uint64_t seed) : Module("TinyNet") {
    Generator g(seed);
    encoder = register_module("encoder", std::make_shared<nn::Linear>(in_features, 3, true, &g));
    layers = register_module("layers", std::make_shared<nn::ModuleList<nn::Linear>>());
    layers->push_back(std::make_shared<nn::Linear>(3, 3, true, &g));
    layers->push_back(std::make_shared<nn::Linear>(3, 2, false, &g));
    register_buffer("steps", scalar_tensor(static_cast<double>(g.next_u64() % 1000), kInt64));
    Tensor mask = empty({3}, kBool);
    for (int i = 0; i < 3; ++i) mask.data<bool>()[i] = g.next_u64() % 2 == 1;
    register_buffer("mask", mask);
  }
  Tensor forward(const Tensor& x) const {
    return (*(*layers)[1])(relu((*(*layers)[0])((*encoder)(x))));
  }

  std::shared_ptr<nn::Linear> encoder;
  std::shared_ptr<nn::ModuleList<nn::Linear>> layers;
};

bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  const auto n = static_cast<std::size_t>(a.numel()) * element_size(a.dtype());
  return n == 0 || std::memcmp(a.raw_data(), b.raw_data(), n) == 0;
}

bool same_state(const nn::StateDict& a, const nn::StateDict& b) {
  if (a.keys() != b.keys()) return false;
  for (const auto& [key, t] : a)
    if (!same_bits(t, b.at(key))) return false;
  return true;
}

std::string read_bytes(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// One optimizer step on a fixed batch: loss = sum(model(x)^2).
void train_step(TinyNet& model, optim::Optimizer& opt, std::int64_t step, DType dtype) {
  Generator g(1000 + static_cast<std::uint64_t>(step));
  const Tensor x = randn({4, model.encoder->options().in_features}, dtype, &g);
  opt.zero_grad();
  const Tensor y = model.forward(x);
  (y * y).sum().backward();
  opt.step();
}

using MakeOptimizer = std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>)>;

// The message of the ValueError load_checkpoint throws; fails the test when there is none.
std::string load_error(const std::string& file, nn::Module& model, optim::Optimizer* opt) {
  try {
    train::load_checkpoint(file, model, opt);
  } catch (const ValueError& e) {
    return e.what();
  }
  FAIL("load_checkpoint did not throw a ValueError");
  return {};
}

}  // namespace

TEST_CASE("a checkpoint round trip into a fresh model is bitwise exact in float32 and float64") {
  ScratchDir dir("round_trip");
  for (DType dtype : {kFloat32, kFloat64}) {
    CAPTURE(to_string(dtype));
    TinyNet saved(4, 1), fresh(4, 2);
    saved.to(dtype);
    fresh.to(dtype);
    REQUIRE_FALSE(same_state(saved.state_dict(), fresh.state_dict()));
    nn::StateDict trainer;
    trainer.insert("step", scalar_tensor(17, kInt64));
    trainer.insert("history/loss", randn({5}, kFloat64));
    const std::string file = dir / "model.npz";
    train::save_checkpoint(file, saved, nullptr, trainer);
    const nn::StateDict back = train::load_checkpoint(file, fresh, nullptr);
    CHECK(same_state(fresh.state_dict(), saved.state_dict()));
    CHECK(same_state(back, trainer));
    CHECK(fresh.parameter("encoder.weight").dtype() == dtype);
  }
}

TEST_CASE("a checkpoint holds the model under PyTorch's names, then optimizer/ and trainer/") {
  ScratchDir dir("names");
  TinyNet model(4, 1);
  optim::SGD sgd(model.parameters(), optim::SGDOptions(0.1).with_momentum(0.9));
  train_step(model, sgd, 0, kFloat32);
  nn::StateDict trainer;
  trainer.insert("step", scalar_tensor(1, kInt64));
  train::save_checkpoint(dir / "c.npz", model, &sgd, trainer);
  const std::vector<std::string> expected = {"encoder.weight",
                                             "encoder.bias",
                                             "layers.0.weight",
                                             "layers.0.bias",
                                             "layers.1.weight",
                                             "steps",
                                             "mask",
                                             "optimizer/num_params",
                                             "optimizer/lr",
                                             "optimizer/momentum",
                                             "optimizer/dampening",
                                             "optimizer/weight_decay",
                                             "optimizer/nesterov",
                                             "optimizer/state.0.momentum_buffer",
                                             "optimizer/state.1.momentum_buffer",
                                             "optimizer/state.2.momentum_buffer",
                                             "optimizer/state.3.momentum_buffer",
                                             "optimizer/state.4.momentum_buffer",
                                             "trainer/step"};
  const nn::StateDict entries = train::load_npz(dir / "c.npz");
  std::vector<std::string> keys = entries.keys();
  std::vector<std::string> sorted_expected = expected;
  std::sort(keys.begin(), keys.end());
  std::sort(sorted_expected.begin(), sorted_expected.end());
  CHECK(keys == sorted_expected);
  CHECK(entries.keys().front() == "encoder.weight");
  CHECK(entries.keys().back() == "trainer/step");
  CHECK(same_bits(entries.at("optimizer/state.2.momentum_buffer"), sgd.momentum_buffer(2)));
}

TEST_CASE("resuming from a checkpoint continues training bitwise as if never interrupted") {
  ScratchDir dir("resume");
  const std::vector<std::pair<const char*, MakeOptimizer>> optimizers = {
      {"SGD nesterov",
       [](std::vector<Tensor> p) -> std::unique_ptr<optim::Optimizer> {
         return std::make_unique<optim::SGD>(
             std::move(p),
             optim::SGDOptions(0.05).with_momentum(0.9).with_nesterov(true).with_weight_decay(
                 1e-3));
       }},
      {"Adam amsgrad",
       [](std::vector<Tensor> p) -> std::unique_ptr<optim::Optimizer> {
         return std::make_unique<optim::Adam>(std::move(p),
                                              optim::AdamOptions(1e-2).with_amsgrad(true));
       }},
      {"AdamW",
       [](std::vector<Tensor> p) -> std::unique_ptr<optim::Optimizer> {
         return std::make_unique<optim::AdamW>(std::move(p), optim::AdamWOptions(1e-2));
       }},
  };
  for (const auto& [name, make] : optimizers) {
    for (DType dtype : {kFloat32, kFloat64}) {
      CAPTURE(name);
      CAPTURE(to_string(dtype));
      TinyNet model(4, 1);
      model.to(dtype);
      auto opt = make(model.parameters());
      for (std::int64_t s = 0; s < 3; ++s) train_step(model, *opt, s, dtype);
      nn::StateDict trainer;
      trainer.insert("step", scalar_tensor(3, kInt64));
      const std::string file = dir / "resume.npz";
      train::save_checkpoint(file, model, opt.get(), trainer);
      for (std::int64_t s = 3; s < 6; ++s) train_step(model, *opt, s, dtype);

      TinyNet resumed(4, 99);  // different initial weights, overwritten by the load
      resumed.to(dtype);
      auto resumed_opt = make(resumed.parameters());
      const nn::StateDict back = train::load_checkpoint(file, resumed, resumed_opt.get());
      REQUIRE(back.at("step").item<std::int64_t>() == 3);
      for (std::int64_t s = 3; s < 6; ++s) train_step(resumed, *resumed_opt, s, dtype);

      CHECK(same_state(resumed.state_dict(), model.state_dict()));
      CHECK(same_state(resumed_opt->state_dict(), opt->state_dict()));
    }
  }
}

TEST_CASE("a wrong-shape entry is refused and the model is left untouched") {
  ScratchDir dir("wrong_shape");
  TinyNet wide(5, 1), model(4, 2);
  train::save_checkpoint(dir / "wide.npz", wide, nullptr, {});
  const nn::StateDict before = model.state_dict();
  const std::string message = load_error(dir / "wide.npz", model, nullptr);
  CHECK(message.find(dir / "wide.npz") != std::string::npos);
  CHECK(message.find("'encoder.weight' has shape (3,5), the model expects (3,4)") !=
        std::string::npos);
  CHECK(message.find("nothing was loaded") != std::string::npos);
  CHECK(same_state(model.state_dict(), before));
}

TEST_CASE("missing, unexpected and wrong-kind entries are all named and nothing is loaded") {
  ScratchDir dir("missing");
  TinyNet source(4, 1), model(4, 2);
  const std::string good = dir / "good.npz";
  train::save_checkpoint(good, source, nullptr, {});
  nn::StateDict edited;
  for (const auto& [key, t] : train::load_npz(good))
    if (key != "layers.1.weight") edited.insert(key, key == "steps" ? t.to(kFloat32) : t);
  edited.insert("extra.weight", zeros({2}));
  train::save_npz(dir / "edited.npz", edited);

  const nn::StateDict before = model.state_dict();
  const std::string message = load_error(dir / "edited.npz", model, nullptr);
  CHECK(message.find("missing model entries: layers.1.weight") != std::string::npos);
  CHECK(message.find("unexpected entries: extra.weight") != std::string::npos);
  CHECK(message.find("'steps' has dtype float32, the model holds int64") != std::string::npos);
  CHECK(same_state(model.state_dict(), before));
}

TEST_CASE("a corrupted or missing checkpoint file leaves the model and the optimizer untouched") {
  ScratchDir dir("corrupted");
  TinyNet source(4, 1), model(4, 2);
  optim::Adam source_opt(source.parameters(), optim::AdamOptions(1e-2));
  optim::Adam opt(model.parameters(), optim::AdamOptions(1e-3));
  train_step(source, source_opt, 0, kFloat32);
  train_step(model, opt, 1, kFloat32);
  const std::string file = dir / "c.npz";
  train::save_checkpoint(file, source, &source_opt, {});
  std::string bytes = read_bytes(file);
  // A bit of encoder.weight's data (the first member; its .npy header is 64 bytes).
  const std::size_t data_at = bytes.find("\x93NUMPY") + 64;
  bytes[data_at + 5] = static_cast<char>(bytes[data_at + 5] ^ 0x01);
  std::ofstream(dir / "flipped.npz", std::ios::binary) << bytes;
  std::ofstream(dir / "cut.npz", std::ios::binary) << bytes.substr(0, bytes.size() - 30);

  const nn::StateDict model_before = model.state_dict();
  const nn::StateDict opt_before = opt.state_dict();
  for (const char* name : {"flipped.npz", "cut.npz", "absent.npz"}) {
    CAPTURE(name);
    const std::string file = dir / name;
    CHECK_THROWS_WITH_AS(train::load_checkpoint(file, model, &opt), doctest::Contains(file.c_str()),
                         IOError);
    CHECK(same_state(model.state_dict(), model_before));
    CHECK(same_state(opt.state_dict(), opt_before));
  }
}

TEST_CASE("a bad optimizer entry is refused before the model or the optimizer changes") {
  ScratchDir dir("bad_optimizer");
  TinyNet source(4, 1), model(4, 2);
  optim::Adam source_opt(source.parameters(), optim::AdamOptions(1e-2));
  optim::Adam opt(model.parameters(), optim::AdamOptions(1e-3));
  train_step(source, source_opt, 0, kFloat32);
  train_step(model, opt, 1, kFloat32);
  train::save_checkpoint(dir / "good.npz", source, &source_opt, {});
  nn::StateDict edited;
  for (const auto& [key, t] : train::load_npz(dir / "good.npz"))
    edited.insert(key, key == "optimizer/state.0.exp_avg" ? zeros({3, 5}) : t);
  train::save_npz(dir / "bad.npz", edited);

  const nn::StateDict model_before = model.state_dict();
  const nn::StateDict opt_before = opt.state_dict();
  const std::string message = load_error(dir / "bad.npz", model, &opt);
  CHECK(message.find("optimizer state") != std::string::npos);
  CHECK(message.find("state.0.exp_avg") != std::string::npos);
  CHECK(same_state(model.state_dict(), model_before));
  CHECK(same_state(opt.state_dict(), opt_before));

  SUBCASE("an optimizer but a file without optimizer entries") {
    train::save_checkpoint(dir / "model_only.npz", source, nullptr, {});
    CHECK(load_error(dir / "model_only.npz", model, &opt).find("no optimizer state") !=
          std::string::npos);
    CHECK(same_state(model.state_dict(), model_before));
    CHECK(same_state(opt.state_dict(), opt_before));
  }
  SUBCASE("no optimizer: the optimizer entries are ignored and the model loads") {
    train::load_checkpoint(dir / "good.npz", model, nullptr);
    CHECK(same_state(model.state_dict(), source.state_dict()));
  }
}

TEST_CASE("a restored generator state gives the same next numbers") {
  ScratchDir dir("generator");
  Generator g(42);
  for (int i = 0; i < 5; ++i) g.next_u64();
  (void)randn({4}, kFloat64, &g);  // an even count of normals: none cached
  const Tensor state = train::generator_state(g);
  CHECK(state.dtype() == kInt64);
  CHECK(state.dim() == 1);
  CHECK(state.numel() >= 5 + static_cast<std::int64_t>(std::mt19937_64::state_size));

  nn::StateDict trainer;
  trainer.insert("generator", state);
  TinyNet model(4, 1);
  train::save_checkpoint(dir / "g.npz", model, nullptr, trainer);
  const Tensor loaded = train::load_checkpoint(dir / "g.npz", model, nullptr).at("generator");

  for (const Tensor& s : {state, loaded}) {
    Generator original = g;
    Generator h(7);
    train::set_generator_state(h, s);
    CHECK(h.initial_seed() == 42);
    for (int i = 0; i < 100; ++i) REQUIRE(h.next_u64() == original.next_u64());
    CHECK(same_bits(randn({5, 3}, kFloat32, &h), randn({5, 3}, kFloat32, &original)));
    CHECK(same_bits(rand({7}, kFloat64, &h), rand({7}, kFloat64, &original)));
  }
}

TEST_CASE("a generator state with a cached normal sample restores that sample") {
  Generator g(5);
  g.next_normal();  // the pair's second sample is now cached
  Generator copy = g;
  const double cached = copy.next_normal();
  const Tensor state = train::generator_state(g);
  CHECK(state.data<std::int64_t>()[2] == 1);
  CHECK(state.data<std::int64_t>()[3] == std::bit_cast<std::int64_t>(cached));
  Generator h(9);
  train::set_generator_state(h, state);
  // The next normal is the cached one, then the streams continue together.
  CHECK(std::bit_cast<std::int64_t>(h.next_normal()) == std::bit_cast<std::int64_t>(cached));
  g.next_normal();
  for (int i = 0; i < 10; ++i) REQUIRE(h.next_normal() == g.next_normal());
}

TEST_CASE("set_generator_state refuses malformed states and leaves the generator as it was") {
  const Tensor good = train::generator_state(Generator(3));
  const std::int64_t n = good.numel();
  auto edited = [&](std::int64_t index, std::int64_t value) {
    Tensor t = good.clone();
    t.data<std::int64_t>()[index] = value;
    return t;
  };
  const std::vector<std::pair<const char*, Tensor>> cases = {
      {"undefined", Tensor()},
      {"float64", good.to(kFloat64)},
      {"2-d", good.reshape({1, n})},
      {"too short", good.narrow(0, 0, 4).clone()},
      {"wrong tag", edited(0, 12345)},
      {"bad cached flag", edited(2, 2)},
      {"wrong word count", edited(4, n)},
      {"missing words", good.narrow(0, 0, n - 1).clone()},
      {"position out of range", edited(n - 1, 100000)},
  };
  for (const auto& [what, state] : cases) {
    CAPTURE(what);
    Generator h(11);
    Generator h_before = h;
    CHECK_THROWS_WITH_AS(train::set_generator_state(h, state),
                         doctest::Contains("set_generator_state"), ValueError);
    for (int i = 0; i < 10; ++i) REQUIRE(h.next_u64() == h_before.next_u64());
  }
}
