// inspect::Hooks and Capture under misuse: hooks that add or clear hooks while the forward
// runs them, scopes ended out of order, a Hooks destroyed while its scope lives, a model
// allocated where a destroyed one was, and replacements of the wrong dtype or shape (the
// error names the hook point as the user wrote it). Run under ASan in CI.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "headgrad/core/error.hpp"
#include "headgrad/inspect/capture.hpp"
#include "headgrad/inspect/hooks.hpp"
#include "headgrad/nn/gpt.hpp"
#include "helpers.hpp"

namespace hg = headgrad;
namespace nn = headgrad::nn;
namespace inspect = headgrad::inspect;
using hg::Tensor;

namespace {

std::unique_ptr<nn::GPT> tiny_gpt(std::uint64_t seed) {
  hg::Generator gen(seed);
  auto model = std::make_unique<nn::GPT>(hg::testing::tiny_gpt_options(), &gen);
  model->eval();
  return model;
}

Tensor tokens() {
  hg::Generator gen(5);
  return hg::randint(0, 11, {2, 6}, {}, &gen);
}

template <typename E>
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "";
}

// A hook that counts its calls and leaves the value as it is.
inspect::HookFn counting(int* calls) {
  return [calls](const Tensor& v, const inspect::HookContext&) {
    ++*calls;
    return v;
  };
}

}  // namespace

TEST_CASE("a hook that clears the hooks mid-forward finishes the point it runs in, then none run") {
  const auto model = tiny_gpt(1);
  inspect::Hooks hooks(*model);
  int first = 0, second = 0, later = 0;
  hooks.add("layers.0.self_attn.z", [&](const Tensor& v, const inspect::HookContext&) {
    ++first;
    hooks.clear();
    return v;
  });
  hooks.add("layers.0.self_attn.z", counting(&second));
  hooks.add("layers.1.self_attn.z", counting(&later));
  auto scope = hooks.activate();
  (*model)(tokens());
  CHECK(first == 1);
  CHECK(second == 1);  // the point's hooks as the forward reached it
  CHECK(later == 0);   // cleared before the forward reached layer 1
  (*model)(tokens());
  CHECK(first + second + later == 2);
}

TEST_CASE("a hook that adds hooks mid-forward: its own point next time, later points at once") {
  const auto model = tiny_gpt(2);
  inspect::Hooks hooks(*model);
  int same_point = 0, later_point = 0, adder = 0;
  hooks.add("layers.0.self_attn.z", [&](const Tensor& v, const inspect::HookContext&) {
    if (adder++ == 0) {
      hooks.add("layers.0.self_attn.z", counting(&same_point));
      hooks.add("layers.1.resid_post", counting(&later_point));
    }
    return v;
  });
  auto scope = hooks.activate();
  (*model)(tokens());
  CHECK(same_point == 0);
  CHECK(later_point == 1);
  (*model)(tokens());
  CHECK(same_point == 1);
  CHECK(later_point == 2);
}

TEST_CASE("Hooks scopes ended out of order are refused and every handler stays consistent") {
  const auto model = tiny_gpt(3);
  inspect::Hooks a(*model), b(*model);
  int a_calls = 0, b_calls = 0;
  a.add("logits", counting(&a_calls));
  b.add("logits", counting(&b_calls));
  auto scope_a = a.activate();
  auto scope_b = b.activate();
  CHECK(error_of<hg::Error>([&] { scope_a.end(); }).find("inspect::Hooks: scopes end innermost") !=
        std::string::npos);
  (*model)(tokens());
  CHECK(b_calls == 1);  // both active: every active handler runs
  CHECK(a_calls == 1);
  scope_b.end();
  (*model)(tokens());
  CHECK(a_calls == 2);
  scope_a.end();
  (*model)(tokens());
  CHECK(a_calls == 2);
  CHECK(b_calls == 1);
  CHECK(nn::active_hook_handlers().empty());
}

TEST_CASE("a Hooks destroyed while its scope lives stops firing and its scope ends safely") {
  const auto model = tiny_gpt(4);
  int calls = 0;
  auto hooks = std::make_unique<inspect::Hooks>(*model);
  hooks->add("layers.0.self_attn.pattern", counting(&calls));
  std::optional<inspect::Hooks::Scope> scope(hooks->activate());
  (*model)(tokens());
  hooks.reset();
  CHECK(nn::active_hook_handlers().empty());
  (*model)(tokens());
  CHECK(calls == 1);
  CHECK_FALSE(scope->active());
  scope.reset();
}

TEST_CASE("a Capture scope ended out of order is refused, and destroying the capture ends it") {
  const auto model = tiny_gpt(5);
  inspect::Capture a(*model, {"pattern"});
  auto b = std::make_unique<inspect::Capture>(*model, std::vector<std::string>{"z"});
  auto scope_a = a.activate();
  auto scope_b = b->activate();
  CHECK(error_of<hg::Error>([&] { scope_a.end(); }).find("inspect::Capture") != std::string::npos);
  CHECK(nn::active_hook_handlers() == std::vector<nn::HookHandler*>{&a, b.get()});
  b.reset();
  CHECK(nn::active_hook_handlers() == std::vector<nn::HookHandler*>{&a});
  (*model)(tokens());
  CHECK(a.contains("layers.0.self_attn.pattern"));
  scope_b.end();
  scope_a.end();
  CHECK(nn::active_hook_handlers().empty());
}

TEST_CASE("hooks and captures know a model by identity, not by the address it had") {
  auto first = tiny_gpt(6);
  const nn::Module* old_address = first.get();
  inspect::Hooks hooks(*first);
  inspect::Capture capture(*first, {"pattern"});
  int calls = 0;
  for (const std::string& name : hooks.names()) hooks.add(name, counting(&calls));
  first.reset();
  // Allocate models until one lands where the first one was (usually the first try).
  std::vector<std::unique_ptr<nn::GPT>> others;
  bool same_address = false;
  for (int i = 0; i < 16 && !same_address; ++i) {
    others.push_back(tiny_gpt(7));
    same_address = others.back().get() == old_address;
  }
  INFO("a new model reused the old address: " << same_address);
  auto hooks_scope = hooks.activate();
  auto capture_scope = capture.activate();
  for (const auto& other : others) (*other)(tokens());
  CHECK(calls == 0);
  CHECK(capture.names().empty());
}

TEST_CASE("a head hook returning another dtype names the hook point and the head") {
  const auto model = tiny_gpt(8);
  inspect::Hooks hooks(*model);
  hooks.add("layers.0.self_attn.z", 1,
            [](const Tensor& z, const inspect::HookContext&) { return z.to(hg::kFloat64); });
  auto scope = hooks.activate();
  const std::string message = error_of<hg::DTypeError>([&] { (*model)(tokens()); });
  CHECK(message.find("hook at layers.0.self_attn.z (head 1)") != std::string::npos);
  CHECK(message.find("must be float32") != std::string::npos);
}

TEST_CASE("a whole-tensor hook of the wrong shape names the point by its path") {
  const auto model = tiny_gpt(9);
  inspect::Hooks hooks(*model);
  hooks.add("layers.1.self_attn.z",
            [](const Tensor& z, const inspect::HookContext&) { return hg::select(z, 1, 0); });
  auto scope = hooks.activate();
  const std::string message = error_of<hg::ShapeError>([&] { (*model)(tokens()); });
  CHECK(message.find("hook at layers.1.self_attn.z:") != std::string::npos);
  CHECK(message.find("MultiheadAttention") == std::string::npos);
}

TEST_CASE("an empty hook function is refused when it is added, naming the point") {
  const auto model = tiny_gpt(10);
  inspect::Hooks hooks(*model);
  const std::string message =
      error_of<hg::ValueError>([&] { hooks.add("layers.0.self_attn.q", inspect::HookFn{}); });
  CHECK(message.find("'layers.0.self_attn.q' is an empty function") != std::string::npos);
  CHECK(error_of<hg::ValueError>([&] { hooks.add("layers.0.self_attn.q", 0, {}); }) != "");
}
