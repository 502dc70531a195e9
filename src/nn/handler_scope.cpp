// Per-thread stacks of handler scopes (see nn/handler_scope.hpp). Every change to a stack
// or to a handler's list of scopes happens under one process-wide mutex. The hot path reads
// only the stack's `top`: the list of handlers to run, rebuilt (never changed in place)
// whenever the stack changes. A list replaced while this thread runs handlers, or by
// another thread, is kept until the owning thread next changes its stack outside a run.
#include "headgrad/nn/handler_scope.hpp"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "headgrad/core/error.hpp"

namespace headgrad::nn {

namespace detail {

using HandlerList = std::vector<ScopedHandler*>;

struct ScopeStack {
  std::thread::id thread;
  std::vector<ScopeEntry*> entries;  // innermost last
  std::shared_ptr<const HandlerList> list;
  std::vector<std::shared_ptr<const HandlerList>> retired;
  std::atomic<const HandlerList*> top{nullptr};  // list.get(), or null when empty
};

struct ScopeEntry {
  std::shared_ptr<ScopeStack> stack;
  std::shared_ptr<HandlerRecord> handler;
  ScopedHandler* as_handler = nullptr;
  std::string name;  // the handler's, for errors
  bool active = false;
};

struct HandlerRecord {
  std::string name;
  std::vector<ScopeEntry*> scopes;  // the live ones, on any thread
};

namespace {

std::mutex& scope_mutex() {
  static std::mutex mutex;
  return mutex;
}

// The calling thread's stack: owned here (and by its entries, so a scope ended after its
// thread exited still finds its stack); t_fast is the hot path's view of it.
thread_local std::shared_ptr<ScopeStack> t_stack;
thread_local ScopeStack* t_fast = nullptr;
thread_local int t_runs = 0;  // HandlerRuns in progress on this thread

std::shared_ptr<ScopeStack> this_thread_stack() {
  if (!t_stack) {
    t_stack = std::make_shared<ScopeStack>();
    t_stack->thread = std::this_thread::get_id();
    t_fast = t_stack.get();
  }
  return t_stack;
}

// The handlers of `entries` in the order they run: editors in activation order, then the
// read-only ones; each handler once.
HandlerList run_order(const std::vector<ScopeEntry*>& entries) {
  HandlerList out;
  for (const bool read_only : {false, true})
    for (const ScopeEntry* e : entries)
      if (e->as_handler->read_only() == read_only &&
          std::find(out.begin(), out.end(), e->as_handler) == out.end())
        out.push_back(e->as_handler);
  return out;
}

// Publishes the stack's new list of handlers (mutex held).
void publish(ScopeStack& stack) {
  std::shared_ptr<const HandlerList> old = std::move(stack.list);
  if (!stack.entries.empty())
    stack.list = std::make_shared<const HandlerList>(run_order(stack.entries));
  stack.top.store(stack.list.get(), std::memory_order_relaxed);
  const bool safe_to_free = stack.thread == std::this_thread::get_id() && t_runs == 0;
  if (safe_to_free)
    stack.retired.clear();
  else if (old)
    stack.retired.push_back(std::move(old));
}

// Takes `entry` off its stack and its handler's list, wherever it sits (mutex held).
void detach(ScopeEntry& entry) {
  if (!entry.active) return;
  auto& stack = entry.stack->entries;
  stack.erase(std::remove(stack.begin(), stack.end(), &entry), stack.end());
  auto& scopes = entry.handler->scopes;
  scopes.erase(std::remove(scopes.begin(), scopes.end(), &entry), scopes.end());
  entry.active = false;
  publish(*entry.stack);
}

}  // namespace

const std::vector<ScopedHandler*>* active_handlers() {
  const ScopeStack* stack = t_fast;
  return stack ? stack->top.load(std::memory_order_relaxed) : nullptr;
}

HandlerRun::HandlerRun() { ++t_runs; }
HandlerRun::~HandlerRun() { --t_runs; }

}  // namespace detail

// --- ScopedHandler --------------------------------------------------------------------

ScopedHandler::ScopedHandler(std::string name, bool read_only)
    : record_(std::make_shared<detail::HandlerRecord>()), read_only_(read_only) {
  record_->name = std::move(name);
}

ScopedHandler::ScopedHandler(const ScopedHandler& other)
    : ScopedHandler(other.record_->name, other.read_only_) {}

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

HandlerScope::HandlerScope(ScopedHandler* handler)
    : entry_(std::make_shared<detail::ScopeEntry>()) {
  if (handler == nullptr)
    throw ValueError("HandlerScope: no handler to activate (got a null pointer)");
  entry_->stack = detail::this_thread_stack();
  entry_->handler = handler->record_;
  entry_->as_handler = handler;
  entry_->name = handler->record_->name;
  std::lock_guard<std::mutex> lock(detail::scope_mutex());
  entry_->stack->entries.push_back(entry_.get());
  entry_->handler->scopes.push_back(entry_.get());
  entry_->active = true;
  detail::publish(*entry_->stack);
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
