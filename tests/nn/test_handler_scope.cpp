// nn::HandlerScope: the per-thread stack of active handlers. Scopes that end innermost
// first restore the handler before them; ending one out of order or from another thread is
// an Error that changes nothing; a scope destroyed out of order takes itself off the stack
// wherever it sits; destroying a handler ends its scopes on every thread.
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

#include "headgrad/core/error.hpp"
#include "headgrad/nn/attention_observer.hpp"
#include "headgrad/nn/handler_scope.hpp"
#include "headgrad/nn/hooks.hpp"
#include "helpers.hpp"

namespace hg = headgrad;
namespace nn = headgrad::nn;

namespace {

// A handler that wants nothing: only its place on the stack matters here.
class Inert final : public nn::HookHandler {
 public:
  explicit Inert(std::string name) : nn::HookHandler(std::move(name)) {}
  bool wants(const nn::Module*, nn::HookPoint) const override { return false; }
  hg::Tensor apply(const nn::Module*, nn::HookPoint, const hg::Tensor& value) override {
    return value;
  }
};

nn::HandlerScope activate(Inert& handler) {
  return nn::HandlerScope(nn::HandlerKind::hooks, &handler,
                          static_cast<nn::HookHandler*>(&handler));
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const hg::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("scopes ended innermost first restore the handler before them") {
  Inert a("A"), b("B");
  CHECK(nn::hook_handler() == nullptr);
  auto outer = activate(a);
  CHECK(nn::hook_handler() == &a);
  auto inner = activate(b);
  CHECK(nn::hook_handler() == &b);
  inner.end();
  CHECK_FALSE(inner.active());
  CHECK(nn::hook_handler() == &a);
  inner.end();  // ending an ended scope does nothing
  outer.end();
  CHECK(nn::hook_handler() == nullptr);
}

TEST_CASE("ending an outer scope while an inner one is active is an error that changes nothing") {
  Inert a("A"), b("B");
  auto outer = activate(a);
  auto inner = activate(b);
  const std::string message = error_of([&] { outer.end(); });
  CHECK(message.find("A: scopes end innermost first") != std::string::npos);
  CHECK(message.find("the B activated inside this one is still active") != std::string::npos);
  CHECK(outer.active());
  CHECK(inner.active());
  CHECK(nn::hook_handler() == &b);
  inner.end();
  CHECK(nn::hook_handler() == &a);
  outer.end();
  CHECK(nn::hook_handler() == nullptr);
}

TEST_CASE("a scope destroyed out of order leaves the innermost remaining scope active") {
  Inert a("A"), b("B"), c("C");
  std::optional<nn::HandlerScope> sa(activate(a)), sb(activate(b)), sc(activate(c));
  sb.reset();  // the middle one
  CHECK(nn::hook_handler() == &c);
  sc.reset();
  CHECK(nn::hook_handler() == &a);  // not B, which ended first
  sa.reset();
  CHECK(nn::hook_handler() == nullptr);
}

TEST_CASE("a scope cannot be ended from another thread, and each thread has its own handler") {
  Inert a("A");
  auto scope = activate(a);
  std::string message;
  const nn::HookHandler* seen_there = &a;
  std::thread other([&] {
    seen_there = nn::hook_handler();
    message = error_of([&] { scope.end(); });
  });
  other.join();
  CHECK(seen_there == nullptr);
  CHECK(message.find("activated on another thread") != std::string::npos);
  CHECK(scope.active());
  CHECK(nn::hook_handler() == &a);
  scope.end();
  CHECK(nn::hook_handler() == nullptr);
}

TEST_CASE("a scope destroyed on another thread leaves its own thread consistent") {
  Inert a("A"), b("B");
  auto outer = activate(a);
  auto inner = std::make_unique<nn::HandlerScope>(activate(b));
  std::thread other([&] { inner.reset(); });
  other.join();
  CHECK(nn::hook_handler() == &a);
  outer.end();
  CHECK(nn::hook_handler() == nullptr);
}

TEST_CASE("destroying a handler ends its scopes, and the scopes end later without harm") {
  Inert a("A");
  auto b = std::make_unique<Inert>("B");
  auto outer = activate(a);
  auto inner = activate(*b);
  CHECK(b->active_on_this_thread());
  b.reset();
  CHECK(nn::hook_handler() == &a);
  CHECK_FALSE(inner.active());
  inner.end();
  outer.end();
  CHECK(nn::hook_handler() == nullptr);
}

TEST_CASE("a moved scope is the same activation, and a copied handler is active nowhere") {
  Inert a("A");
  std::optional<nn::HandlerScope> first(activate(a));
  nn::HandlerScope moved(std::move(*first));
  first.reset();  // the moved-from scope ends nothing
  CHECK(nn::hook_handler() == &a);
  const Inert copy(a);
  CHECK(a.active_on_this_thread());
  CHECK_FALSE(copy.active_on_this_thread());
  moved.end();
  CHECK(nn::hook_handler() == nullptr);
}

TEST_CASE("hook handlers and attention observers have separate stacks") {
  class Quiet final : public nn::AttentionObserver {
   public:
    Quiet() : nn::AttentionObserver("Quiet") {}
    bool wants(const nn::Module*, nn::AttentionTap) const override { return false; }
    void report(const nn::Module*, nn::AttentionTap, std::vector<hg::Tensor>, bool) override {}
  };
  Inert hooks("hooks");
  Quiet observer;
  auto h = activate(hooks);
  nn::HandlerScope o(nn::HandlerKind::observer, &observer,
                     static_cast<nn::AttentionObserver*>(&observer));
  CHECK(nn::hook_handler() == &hooks);
  CHECK(nn::attention_observer() == &observer);
  h.end();  // not out of order: the observer is on the other stack
  CHECK(nn::hook_handler() == nullptr);
  CHECK(nn::attention_observer() == &observer);
  o.end();
  CHECK(nn::attention_observer() == nullptr);
}
