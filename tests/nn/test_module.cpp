// nn::Module: dotted names, registration rules, modes, dtype conversion, state dicts
// (strict and not, all-or-nothing) and printing.
#include <doctest/doctest.h>

#include "headgrad/headgrad.hpp"
#include "helpers.hpp"

using namespace headgrad;

namespace {

class Block : public nn::Module {
 public:
  Block() : nn::Module("Block") {
    fc = register_module("fc", std::make_shared<nn::Linear>(3, 2));
    scale = register_parameter("scale", ones({2}));
    running = register_buffer("running", zeros({2}));
    register_parameter("optional_bias", Tensor());
  }
  std::shared_ptr<nn::Linear> fc;
  Tensor scale, running;
};

class Net : public nn::Module {
 public:
  Net() : nn::Module("Net") {
    blocks = register_module("blocks", std::make_shared<nn::ModuleList<Block>>());
    blocks->push_back(std::make_shared<Block>());
    blocks->push_back(std::make_shared<Block>());
    head = register_module("head", std::make_shared<nn::Linear>(2, 1, false));
  }
  std::shared_ptr<nn::ModuleList<Block>> blocks;
  std::shared_ptr<nn::Linear> head;
};

std::vector<std::string> names(const std::vector<std::pair<std::string, Tensor>>& items) {
  std::vector<std::string> out;
  for (auto& [n, t] : items) out.push_back(n);
  return out;
}

}  // namespace

TEST_CASE("parameters and buffers carry PyTorch-style dotted names in registration order") {
  Net net;
  CHECK(names(net.named_parameters()) ==
        std::vector<std::string>{"blocks.0.scale", "blocks.0.fc.weight", "blocks.0.fc.bias",
                                 "blocks.1.scale", "blocks.1.fc.weight", "blocks.1.fc.bias",
                                 "head.weight"});
  CHECK(names(net.named_buffers()) ==
        std::vector<std::string>{"blocks.0.running", "blocks.1.running"});
  CHECK(names(net.named_parameters(/*recurse=*/false)).empty());
  CHECK(net.num_parameters() == 2 * (2 + 6 + 2) + 2);
  CHECK(net.parameter("blocks.1.fc.bias").shape() == Shape{2});
  CHECK_THROWS_WITH_AS(net.parameter("blocks.2.fc.bias"), doctest::Contains("blocks.0.scale"),
                       IndexError);
  std::vector<std::string> modules;
  for (auto& [n, m] : net.named_modules()) modules.push_back(n + ":" + m->type_name());
  CHECK(modules == std::vector<std::string>{":Net", "blocks:ModuleList", "blocks.0:Block",
                                            "blocks.0.fc:Linear", "blocks.1:Block",
                                            "blocks.1.fc:Linear", "head:Linear"});
  for (const Tensor& p : net.parameters()) CHECK(p.requires_grad());
}

TEST_CASE("registering a duplicate or dotted name is refused") {
  struct Bad : nn::Module {
    explicit Bad(int which) : nn::Module("Bad") {
      register_parameter("w", ones({1}));
      if (which == 0) register_buffer("w", ones({1}));
      if (which == 1) register_parameter("a.b", ones({1}));
    }
  };
  CHECK_THROWS_WITH_AS(Bad(0), doctest::Contains("already registered"), ValueError);
  CHECK_THROWS_WITH_AS(Bad(1), doctest::Contains("no '.'"), ValueError);
}

TEST_CASE("train and eval reach every submodule and zero_grad drops gradients") {
  Net net;
  CHECK(net.is_training());
  net.eval();
  for (auto& [n, m] : net.named_modules()) CHECK(!m->is_training());
  net.train();
  for (auto& [n, m] : net.named_modules()) CHECK(m->is_training());

  Tensor x = ones({4, 3});
  net.head->forward(net.blocks->operator[](0)->fc->forward(x)).sum().backward();
  CHECK(net.head->weight.grad().defined());
  CHECK(net.blocks->operator[](0)->fc->weight.grad().defined());
  net.zero_grad();
  for (const Tensor& p : net.parameters()) CHECK(!p.grad().defined());
}

TEST_CASE("to(float64) converts parameters and buffers in place, keeping the handles") {
  Net net;
  Tensor w = net.head->weight;
  const auto before = w.to_vector<double>();
  net.to(kFloat64);
  CHECK(w.dtype() == kFloat64);
  CHECK(net.blocks->operator[](1)->running.dtype() == kFloat64);
  CHECK(w.to_vector<double>() == before);  // float32 -> float64 is exact
  CHECK(w.requires_grad());
  CHECK_THROWS_AS(net.to(kInt64), DTypeError);
}

TEST_CASE("a state dict round trip restores every value exactly") {
  manual_seed(1);
  Net a;
  manual_seed(2);
  Net b;
  CHECK(testing::max_abs_diff(a.head->weight, b.head->weight) > 0);
  auto sd = a.state_dict();
  CHECK(sd.size() == 9);  // 7 parameters + 2 buffers
  auto result = b.load_state_dict(sd);
  CHECK(result.missing_keys.empty());
  for (auto& [name, t] : a.state_dict())
    CHECK(testing::max_abs_diff(t, b.state_dict().at(name)) == 0.0);
  // The state dict holds copies: changing it does not touch the module.
  Tensor held = sd.at("head.weight");
  held.fill_(7.0);
  CHECK(a.head->weight.at({0, 0}) != 7.0);
}

TEST_CASE("load_state_dict names every missing, unexpected or mis-shaped entry and loads nothing") {
  Net net;
  const auto original = net.state_dict();
  nn::StateDict bad;
  for (auto& [name, t] : original)
    if (name != "blocks.1.scale") bad.insert(name, ones(t.shape()));
  bad.insert("head.weight", ones({3, 2}));
  bad.insert("head.bias", ones({1}));
  try {
    net.load_state_dict(bad);
    FAIL("load_state_dict accepted a bad state dict");
  } catch (const ValueError& e) {
    const std::string msg = e.what();
    CHECK(msg.find("'head.weight' has shape (3,2), the module expects (1,2)") != std::string::npos);
    CHECK(msg.find("missing keys: blocks.1.scale") != std::string::npos);
    CHECK(msg.find("unexpected keys: head.bias") != std::string::npos);
  }
  for (auto& [name, t] : original)
    CHECK(testing::max_abs_diff(t, net.state_dict().at(name)) == 0.0);

  SUBCASE("non-strict loading reports instead of refusing") {
    nn::StateDict partial;
    partial.insert("head.weight", full({1, 2}, 3.0));
    partial.insert("extra", ones({1}));
    auto r = net.load_state_dict(partial, /*strict=*/false);
    CHECK(r.missing_keys.size() == 8);
    CHECK(r.unexpected_keys == std::vector<std::string>{"extra"});
    CHECK(net.head->weight.at({0, 1}) == 3.0);
  }
}

TEST_CASE("to_string prints the module tree like PyTorch") {
  Net net;
  const std::string s = net.to_string();
  CHECK(s.find("(head): Linear(in_features=2, out_features=1, bias=False)") != std::string::npos);
  CHECK(s.find("(0): Block(") != std::string::npos);
}

TEST_CASE("clone copies a module's tensors, modes and dtype into storage of its own") {
  Generator gen(4);
  nn::GPT model(testing::tiny_gpt_options(), &gen);
  model.to(kFloat64);
  (*model.layers)[1]->eval();  // a mode that differs between submodules
  const Tensor tokens = randint(0, 11, {2, 6}, {}, &gen);
  sum(model(tokens)).backward();
  model.parameters()[0].requires_grad_(false);

  const auto copy = std::dynamic_pointer_cast<nn::GPT>(model.clone());
  REQUIRE(copy != nullptr);
  model.eval();
  copy->eval();
  CHECK(testing::max_abs_diff(copy->forward(tokens), model.forward(tokens)) == 0.0);
  const auto mine = model.named_parameters(), theirs = copy->named_parameters();
  REQUIRE(mine.size() == theirs.size());
  for (std::size_t i = 0; i < mine.size(); ++i) {
    INFO(mine[i].first);
    CHECK(theirs[i].first == mine[i].first);
    CHECK(theirs[i].second.dtype() == kFloat64);
    CHECK(theirs[i].second.requires_grad() == mine[i].second.requires_grad());
    CHECK(theirs[i].second.impl() != mine[i].second.impl());
    CHECK(theirs[i].second.raw_data() != mine[i].second.raw_data());
    CHECK(theirs[i].second.grad().defined() == mine[i].second.grad().defined());
  }
  // Training modes are copied submodule by submodule.
  model.train();
  (*model.layers)[1]->eval();
  const auto again = model.clone();
  CHECK(again->is_training());
  CHECK_FALSE((*std::dynamic_pointer_cast<nn::GPT>(again)->layers)[1]->is_training());
  // Changing the copy leaves the original alone.
  theirs[0].second.detach().fill_(7.0);
  CHECK(mine[0].second.to_vector<double>()[0] != 7.0);
}

TEST_CASE("clone rebuilds stacks and layers of every kind, and a plain Module says it cannot") {
  nn::TransformerLayerOptions lo(8, 2);
  lo.dim_feedforward = 16;
  Generator gen(5);
  const nn::TransformerEncoder encoder(lo, 3, true, &gen);
  const auto copy = std::dynamic_pointer_cast<nn::TransformerEncoder>(encoder.clone());
  REQUIRE(copy != nullptr);
  CHECK(copy->num_layers() == 3);
  CHECK(copy->norm != nullptr);
  const nn::LayerNorm norm(4, 1e-3, true, false);
  const auto norm_copy = std::dynamic_pointer_cast<nn::LayerNorm>(norm.clone());
  CHECK(norm_copy->eps() == 1e-3);
  CHECK_FALSE(norm_copy->bias.defined());
  const nn::Module plain("Plain");
  CHECK_THROWS_AS(plain.clone(), Error);
}
