// Scoped activation of the handlers a forward pass reports to at its hook points
// (nn/hooks.hpp): each thread keeps a stack of active scopes, and every handler on it runs
// at every point it wants (inspect::Hooks that edit, inspect::Capture that records, ...).
//
// The order in which the active handlers run: those that may edit first, in the order they
// were activated, then the read-only ones (captures, caches), so that a read-only handler
// sees the tensor the forward goes on with. A handler activated twice runs once.
//
// The rules, checked rather than assumed:
//   - end() ends the innermost scope of the thread that opened it. Ending an outer scope
//     while an inner one is still active, or ending it from another thread, throws Error and
//     changes nothing (every handler stays as it was).
//   - A scope destroyed without end() (a C++ scope leaving its block, an exception) removes
//     itself from its thread's stack wherever it sits: destructors never throw and never
//     leave a stale handler.
//   - Destroying a handler ends its live scopes on every thread, so no thread keeps a pointer
//     to it; a scope whose handler is gone has nothing left to end.
//   - Activating or ending scopes inside a hook (while a forward runs the handlers) is
//     safe: the point being run keeps the handlers it started with, and the change applies
//     from the next point on.
//
// Cost: with nothing active (the default) the hot path (detail::active_handlers()) is one
// thread-local load and one relaxed atomic load; opening and ending a scope take a
// process-wide mutex.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace headgrad::nn {

class ScopedHandler;

namespace detail {
struct ScopeEntry;
struct HandlerRecord;
// The handlers active on this thread in the order they run, or null when none is.
const std::vector<ScopedHandler*>* active_handlers();
// Marks a run of the handlers on this thread (while one lasts, a scope change keeps the
// list being run alive).
class HandlerRun {
 public:
  HandlerRun();
  ~HandlerRun();
  HandlerRun(const HandlerRun&) = delete;
  HandlerRun& operator=(const HandlerRun&) = delete;
};
}  // namespace detail

// The base of every handler a scope can activate: it knows its live scopes, so that its
// destruction ends them.
class ScopedHandler {
 public:
  // `name` describes the handler in errors ("inspect::Hooks"); a `read_only` handler only
  // records what it is shown and runs after the handlers that may edit.
  explicit ScopedHandler(std::string name, bool read_only = false);
  // A copy is a new handler: it is active nowhere.
  ScopedHandler(const ScopedHandler& other);
  ScopedHandler& operator=(const ScopedHandler& other);
  // Ends every scope of this handler that is still active, on any thread.
  virtual ~ScopedHandler();

  // Whether a scope of this handler is active on the calling thread.
  bool active_on_this_thread() const;
  const std::string& handler_name() const;
  bool read_only() const { return read_only_; }

 private:
  friend class HandlerScope;
  std::shared_ptr<detail::HandlerRecord> record_;
  bool read_only_ = false;
};

// One activation of a handler on the calling thread (move-only).
class HandlerScope {
 public:
  // Pushes `handler` on the calling thread's stack.
  explicit HandlerScope(ScopedHandler* handler);
  HandlerScope(HandlerScope&& other) noexcept;
  HandlerScope& operator=(HandlerScope&&) = delete;
  HandlerScope(const HandlerScope&) = delete;
  HandlerScope& operator=(const HandlerScope&) = delete;
  // Ends the scope if it is still active, wherever it sits in its stack (never throws).
  ~HandlerScope();

  // Ends the scope: Error, changing nothing, unless it is the innermost active scope on the
  // thread that opened it. Ending an ended scope does nothing.
  void end();
  // Whether the scope is still on its thread's stack.
  bool active() const;

 private:
  std::shared_ptr<detail::ScopeEntry> entry_;
};

}  // namespace headgrad::nn
