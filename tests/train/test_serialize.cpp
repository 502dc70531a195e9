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
nn::GPT small_gpt(std::int64_t d_model, std::uint64_t seed, std::int64_t heads = 2,
                  std::int64_t layers = 1) {
  nn::GPTOptions o;
  o.vocab_size = 5;
  o.max_len = 4;
  o.d_model = d_model;
  o.nhead = heads;
  o.num_layers = layers;
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

TEST_CASE("loading a file saved from a model with another head count warns, naming both") {
  const fs::path dir =
      fs::temp_directory_path() / ("headgrad_serialize_heads_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / "h1.npz").string();
  std::vector<std::string> warnings;
  WarningHandlerGuard collect([&](const std::string& m) { warnings.push_back(m); });

  nn::GPT one = small_gpt(8, 1, 1, 2), eight = small_gpt(8, 2, 8, 2);
  save(one, path);
  load(eight, path);  // equal shapes: the weights load, with a warning
  REQUIRE(warnings.size() == 1);
  const std::string& w = warnings[0];
  CHECK(w.find("load: '" + path + "'") == 0);
  CHECK(w.find("layers.0.self_attn: 1 head of dimension 8 in the file, 8 heads of dimension 1 "
               "in the model") != std::string::npos);
  CHECK(w.find("layers.1.self_attn") != std::string::npos);
  CHECK(w.find("with_warn_on_attention_mismatch(false)") != std::string::npos);
  for (const auto& [name, t] : one.state_dict()) {
    CAPTURE(name);
    CHECK(testing::max_abs_diff(t, eight.state_dict().at(name)) == 0);
  }

  warnings.clear();
  load(eight, path, train::LoadOptions().with_warn_on_attention_mismatch(false));
  nn::GPT another_one = small_gpt(8, 3, 1, 2);
  load(another_one, path);  // the same layout
  CHECK(warnings.empty());

  // Checkpoints carry the layout too; a file without one (numpy's) is not compared.
  train::save_checkpoint((dir / "ckpt.npz").string(), eight, nullptr, {});
  train::load_checkpoint((dir / "ckpt.npz").string(), one, nullptr);
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].find("load_checkpoint: '") == 0);
  CHECK(warnings[0].find("8 heads of dimension 1 in the file, 1 head of dimension 8 in the "
                         "model") != std::string::npos);
  warnings.clear();
  train::save_npz((dir / "plain.npz").string(), one.state_dict());
  load(eight, (dir / "plain.npz").string());
  CHECK(warnings.empty());

  // A file of another shape is refused as before, and the message names the layouts.
  nn::GPT shallow = small_gpt(8, 4);
  try {
    load(shallow, path);
    FAIL("load of a two-layer file into a one-layer model did not throw");
  } catch (const ValueError& e) {
    const std::string m = e.what();
    CHECK(m.find("load: '" + path + "': nothing was loaded") == 0);
    CHECK(m.find("2 attention layers in the file, 1 in the model") != std::string::npos);
  }
  CHECK(warnings.empty());
  fs::remove_all(dir);
}
