// nn::HandlerScope: the per-thread stack of active handlers, every one of which runs
// (editors in activation order, then read-only ones). Scopes end innermost first; ending
// one out of order or from another thread is an Error that changes nothing; a scope
// destroyed out of order takes itself off the stack wherever it sits; destroying a handler
// ends its scopes on every thread; scopes changed inside a hook apply from the next point.
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

#include "headgrad/core/error.hpp"
#include "headgrad/nn/handler_scope.hpp"
#include "headgrad/nn/hooks.hpp"
#include "helpers.hpp"

namespace hg = headgrad;
namespace nn = headgrad::nn;

namespace {

// A handler that wants nothing: only its place on the stack matters here.
class Inert final : public nn::HookHandler {
 public:
  explicit Inert(std::string name, bool read_only = false)
      : nn::HookHandler(std::move(name), read_only) {}
  bool wants(const nn::HookPoint&) const override { return false; }
  hg::Tensor apply(const nn::HookPoint&, const hg::Tensor& value) override { return value; }
};

nn::HandlerScope activate(Inert& handler) { return nn::HandlerScope(&handler); }

using Handlers = std::vector<nn::HookHandler*>;
Handlers active() { return nn::active_hook_handlers(); }

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const hg::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("every active handler runs, in activation order, until its scope ends") {
  Inert a("A"), b("B");
  CHECK(active().empty());
  auto outer = activate(a);
  CHECK(active() == Handlers{&a});
  auto inner = activate(b);
  CHECK(active() == Handlers{&a, &b});
  inner.end();
  CHECK_FALSE(inner.active());
  CHECK(active() == Handlers{&a});
  inner.end();  // ending an ended scope does nothing
  outer.end();
  CHECK(active().empty());
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
  CHECK(active() == Handlers{&a, &b});
  inner.end();
  CHECK(active() == Handlers{&a});
  outer.end();
  CHECK(active().empty());
}

TEST_CASE("a scope destroyed out of order leaves the other scopes active") {
  Inert a("A"), b("B"), c("C");
  std::optional<nn::HandlerScope> sa(activate(a)), sb(activate(b)), sc(activate(c));
  sb.reset();  // the middle one
  CHECK(active() == Handlers{&a, &c});
  sc.reset();
  CHECK(active() == Handlers{&a});  // not B, which ended first
  sa.reset();
  CHECK(active().empty());
}

TEST_CASE("a scope cannot be ended from another thread, and each thread has its own handler") {
  Inert a("A");
  auto scope = activate(a);
  std::string message;
  Handlers seen_there{&a};
  std::thread other([&] {
    seen_there = active();
    message = error_of([&] { scope.end(); });
  });
  other.join();
  CHECK(seen_there.empty());
  CHECK(message.find("activated on another thread") != std::string::npos);
  CHECK(scope.active());
  CHECK(active() == Handlers{&a});
  scope.end();
  CHECK(active().empty());
}

TEST_CASE("a scope destroyed on another thread leaves its own thread consistent") {
  Inert a("A"), b("B");
  auto outer = activate(a);
  auto inner = std::make_unique<nn::HandlerScope>(activate(b));
  std::thread other([&] { inner.reset(); });
  other.join();
  CHECK(active() == Handlers{&a});
  outer.end();
  CHECK(active().empty());
}

TEST_CASE("destroying a handler ends its scopes, and the scopes end later without harm") {
  Inert a("A");
  auto b = std::make_unique<Inert>("B");
  auto outer = activate(a);
  auto inner = activate(*b);
  CHECK(b->active_on_this_thread());
  b.reset();
  CHECK(active() == Handlers{&a});
  CHECK_FALSE(inner.active());
  inner.end();
  outer.end();
  CHECK(active().empty());
}

TEST_CASE("a moved scope is the same activation, and a copied handler is active nowhere") {
  Inert a("A");
  std::optional<nn::HandlerScope> first(activate(a));
  nn::HandlerScope moved(std::move(*first));
  first.reset();  // the moved-from scope ends nothing
  CHECK(active() == Handlers{&a});
  const Inert copy(a);
  CHECK(a.active_on_this_thread());
  CHECK_FALSE(copy.active_on_this_thread());
  moved.end();
  CHECK(active().empty());
}

TEST_CASE("read-only handlers run after the editing ones, and a handler activated twice once") {
  Inert reader("reader", /*read_only=*/true), a("A"), b("B");
  auto s1 = activate(reader);
  auto s2 = activate(a);
  auto s3 = activate(b);
  auto s4 = activate(a);
  CHECK(active() == Handlers{&a, &b, &reader});
  s4.end();
  s3.end();
  s2.end();
  CHECK(active() == Handlers{&reader});
  s1.end();
  CHECK(active().empty());
}

TEST_CASE("a hook that opens or ends scopes changes what runs from the next point on") {
  nn::HookPoint first, second;
  int b_calls = 0;
  std::optional<nn::HandlerScope> b_scope;
  class Counting final : public nn::HookHandler {
   public:
    explicit Counting(int* calls) : nn::HookHandler("B"), calls_(calls) {}
    bool wants(const nn::HookPoint&) const override { return true; }
    hg::Tensor apply(const nn::HookPoint&, const hg::Tensor& value) override {
      ++*calls_;
      return value;
    }

   private:
    int* calls_;
  } b(&b_calls);
  class Opener final : public nn::HookHandler {
   public:
    Opener(nn::HookHandler* other, std::optional<nn::HandlerScope>* scope)
        : nn::HookHandler("opener"), other_(other), scope_(scope) {}
    bool wants(const nn::HookPoint&) const override { return true; }
    hg::Tensor apply(const nn::HookPoint&, const hg::Tensor& value) override {
      if (scope_->has_value())
        scope_->reset();  // ends B's scope from inside a hook, out of order
      else
        scope_->emplace(other_);
      return value;
    }

   private:
    nn::HookHandler* other_;
    std::optional<nn::HandlerScope>* scope_;
  } opener(&b, &b_scope);
  const hg::Tensor x = hg::ones({2});
  auto scope = nn::HandlerScope(&opener);
  first(x);  // opens B's scope: B does not run at this point
  CHECK(b_calls == 0);
  CHECK(active() == Handlers{&opener, &b});
  second(x);  // B runs, then the opener ends B's scope
  CHECK(b_calls == 1);
  CHECK(active() == Handlers{&opener});
  first(x);
  CHECK(b_calls == 1);
  b_scope.reset();
  scope.end();
  CHECK(active().empty());
}
