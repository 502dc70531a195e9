// headgrad::save / headgrad::load of a module: a round trip bit for bit, and a file of
// another model refused with the module unchanged.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>

#include "headgrad/headgrad.hpp"
#include "headgrad/nn/gpt.hpp"
#include "helpers.hpp"

using namespace headgrad;
namespace fs = std::filesystem;

namespace {
nn::GPT small_gpt(std::int64_t d_model, std::uint64_t seed) {
  nn::GPTOptions o;
  o.vocab_size = 5;
  o.max_len = 4;
  o.d_model = d_model;
  o.nhead = 2;
  o.num_layers = 1;
  Generator g(seed);
  return nn::GPT(o, &g);
}
}  // namespace

TEST_CASE("save and load round-trip a module's parameters and refuse another model's file") {
  const fs::path dir =
      fs::temp_directory_path() / ("headgrad_serialize_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / "model.npz").string();
  nn::GPT a = small_gpt(8, 1), b = small_gpt(8, 2);
  save(a, path);
  load(b, path);
  for (const auto& [name, t] : a.state_dict()) {
    CAPTURE(name);
    CHECK(testing::max_abs_diff(t, b.state_dict().at(name)) == 0);
  }
  nn::GPT wider = small_gpt(16, 3);
  const Tensor before = wider.state_dict().at("lm_head.weight").clone();
  CHECK_THROWS_AS(load(wider, path), ValueError);
  CHECK(testing::max_abs_diff(before, wider.state_dict().at("lm_head.weight")) == 0);
  CHECK_THROWS_AS(load(wider, (dir / "absent.npz").string()), train::IOError);
  // A map of named tensors saves too.
  train::save_npz((dir / "map.npz").string(), std::map<std::string, Tensor>{{"x", ones({2})}});
  CHECK(train::load_npz((dir / "map.npz").string()).contains("x"));
  fs::remove_all(dir);
}
