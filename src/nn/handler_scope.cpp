// Per-thread stacks of handler scopes (see nn/handler_scope.hpp). Every change to a stack
// or to a handler's list of scopes happens under one process-wide mutex; the hot path reads
// only the stack's `top`, an atomic another thread may update when it ends a scope there.
#include "headgrad/nn/handler_scope.hpp"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "headgrad/core/error.hpp"

namespace headgrad::nn {

namespace detail {

struct ScopeStack {
  std::thread::id thread;
  std::vector<ScopeEntry*> entries;  // innermost last
  std::atomic<void*> top{nullptr};   // entries.back()->as_pushed, or null
};

struct ScopeEntry {
  std::shared_ptr<ScopeStack> stack;
  std::shared_ptr<HandlerRecord> handler;
  void* as_pushed = nullptr;
  std::string name;  // the handler's, for errors
  bool active = false;
};

struct HandlerRecord {
  std::string name;
  std::vector<ScopeEntry*> scopes;  // the live ones, on any thread
};

namespace {

constexpr int kKinds = 2;

std::mutex& scope_mutex() {
  static std::mutex mutex;
  return mutex;
}

// The calling thread's stacks: owned here (and by their entries, so a scope ended after its
// thread exited still finds its stack); t_fast is the hot path's view of them.
thread_local std::shared_ptr<ScopeStack> t_stacks[kKinds];
thread_local ScopeStack* t_fast[kKinds] = {nullptr, nullptr};

std::shared_ptr<ScopeStack> this_thread_stack(HandlerKind kind) {
  const int k = static_cast<int>(kind);
  if (!t_stacks[k]) {
    t_stacks[k] = std::make_shared<ScopeStack>();
    t_stacks[k]->thread = std::this_thread::get_id();
    t_fast[k] = t_stacks[k].get();
  }
  return t_stacks[k];
}

// Takes `entry` off its stack and its handler's list, wherever it sits (mutex held).
void detach(ScopeEntry& entry) {
  if (!entry.active) return;
  auto& stack = entry.stack->entries;
  stack.erase(std::remove(stack.begin(), stack.end(), &entry), stack.end());
  entry.stack->top.store(stack.empty() ? nullptr : stack.back()->as_pushed,
                         std::memory_order_relaxed);
  auto& scopes = entry.handler->scopes;
  scopes.erase(std::remove(scopes.begin(), scopes.end(), &entry), scopes.end());
  entry.active = false;
}

}  // namespace

void* active_handler(HandlerKind kind) {
  const ScopeStack* stack = t_fast[static_cast<int>(kind)];
  return stack ? stack->top.load(std::memory_order_relaxed) : nullptr;
}

}  // namespace detail

// --- ScopedHandler --------------------------------------------------------------------

ScopedHandler::ScopedHandler(std::string name)
    : record_(std::make_shared<detail::HandlerRecord>()) {
  record_->name = std::move(name);
}

ScopedHandler::ScopedHandler(const ScopedHandler& other) : ScopedHandler(other.record_->name) {}

ScopedHandler& ScopedHandler::operator=(const ScopedHandler& other) {
  // This handler keeps its own scopes; only the contents are assigned.
  (void)other;
  return *this;
}

ScopedHandler::~ScopedHandler() {
  std::lock_guard<std::mutex> lock(detail::scope_mutex());
  while (!record_->scopes.empty()) detail::detach(*record_->scopes.back());
}

bool ScopedHandler::active_on_this_thread() const {
  std::lock_guard<std::mutex> lock(detail::scope_mutex());
  const auto here = std::this_thread::get_id();
  return std::any_of(record_->scopes.begin(), record_->scopes.end(),
                     [&](const detail::ScopeEntry* e) { return e->stack->thread == here; });
}

const std::string& ScopedHandler::handler_name() const { return record_->name; }

// --- HandlerScope ---------------------------------------------------------------------

HandlerScope::HandlerScope(HandlerKind kind, ScopedHandler* handler, void* as_pushed)
    : entry_(std::make_shared<detail::ScopeEntry>()) {
  if (handler == nullptr || as_pushed == nullptr)
    throw ValueError("HandlerScope: no handler to activate (got a null pointer)");
  entry_->stack = detail::this_thread_stack(kind);
  entry_->handler = handler->record_;
  entry_->as_pushed = as_pushed;
  entry_->name = handler->record_->name;
  std::lock_guard<std::mutex> lock(detail::scope_mutex());
  entry_->stack->entries.push_back(entry_.get());
  entry_->stack->top.store(as_pushed, std::memory_order_relaxed);
  entry_->handler->scopes.push_back(entry_.get());
  entry_->active = true;
}

HandlerScope::HandlerScope(HandlerScope&& other) noexcept : entry_(std::move(other.entry_)) {}

HandlerScope::~HandlerScope() {
  if (!entry_) return;
  std::lock_guard<std::mutex> lock(detail::scope_mutex());
  detail::detach(*entry_);
}

void HandlerScope::end() {
  if (!entry_) return;
  std::lock_guard<std::mutex> lock(detail::scope_mutex());
  detail::ScopeEntry& entry = *entry_;
  if (!entry.active) return;
  if (entry.stack->thread != std::this_thread::get_id())
    throw Error(entry.name +
                ": this scope was activated on another thread and can only end there (each "
                "thread has its own active hooks and captures); nothing was changed");
  const detail::ScopeEntry* innermost = entry.stack->entries.back();
  if (innermost != &entry)
    throw Error(entry.name + ": scopes end innermost first, but the " + innermost->name +
                " activated inside this one is still active; end that one first (nothing was "
                "changed)");
  detail::detach(entry);
}

bool HandlerScope::active() const {
  if (!entry_) return false;
  std::lock_guard<std::mutex> lock(detail::scope_mutex());
  return entry_->active;
}

}  // namespace headgrad::nn
