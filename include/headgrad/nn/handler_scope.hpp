// Scoped activation of the handlers a forward pass reports to (a HookHandler at hook points,
// an AttentionObserver at attention taps): each thread keeps, per kind, a stack of active
// scopes, and the innermost one's handler is the active one on that thread.
//
// The rules, checked rather than assumed:
//   - end() ends the innermost scope of the thread that opened it. Ending an outer scope
//     while an inner one is still active, or ending it from another thread, throws Error and
//     changes nothing (every handler stays as it was).
//   - A scope destroyed without end() (a C++ scope leaving its block, an exception) removes
//     itself from its thread's stack wherever it sits, and the stack's innermost remaining
//     scope becomes active: destructors never throw and never leave a stale handler.
//   - Destroying a handler ends its live scopes on every thread, so no thread keeps a pointer
//     to it; a scope whose handler is gone has nothing left to end.
//
// Cost: the hot path (nn::hook_handler(), nn::attention_observer()) is one thread-local load
// and one relaxed atomic load; opening and ending a scope take a process-wide mutex.
#pragma once

#include <memory>
#include <string>

namespace headgrad::nn {

enum class HandlerKind { hooks, observer };

namespace detail {
struct ScopeEntry;
struct HandlerRecord;
// The handler active on this thread for `kind` (as pushed), or null.
void* active_handler(HandlerKind kind);
}  // namespace detail

// The base of every handler a scope can activate: it knows its live scopes, so that its
// destruction ends them.
class ScopedHandler {
 public:
  // `name` describes the handler in errors ("inspect::Hooks").
  explicit ScopedHandler(std::string name);
  // A copy is a new handler: it is active nowhere.
  ScopedHandler(const ScopedHandler& other);
  ScopedHandler& operator=(const ScopedHandler& other);
  // Ends every scope of this handler that is still active, on any thread.
  virtual ~ScopedHandler();

  // Whether a scope of this handler is active on the calling thread.
  bool active_on_this_thread() const;
  const std::string& handler_name() const;

 private:
  friend class HandlerScope;
  std::shared_ptr<detail::HandlerRecord> record_;
};

// One activation of a handler on the calling thread (move-only).
class HandlerScope {
 public:
  // Pushes `handler` on the calling thread's stack of `kind`; `as_pushed` is the pointer the
  // hot path hands out for it (the handler as a HookHandler or AttentionObserver).
  HandlerScope(HandlerKind kind, ScopedHandler* handler, void* as_pushed);
  HandlerScope(HandlerScope&& other) noexcept;
  HandlerScope& operator=(HandlerScope&&) = delete;
  HandlerScope(const HandlerScope&) = delete;
  HandlerScope& operator=(const HandlerScope&) = delete;
  // Ends the scope if it is still active, wherever it sits in its stack (never throws).
  ~HandlerScope();

  // Ends the scope: Error, changing nothing, unless it is the innermost active scope of its
  // kind on the thread that opened it. Ending an ended scope does nothing.
  void end();
  // Whether the scope is still on its thread's stack.
  bool active() const;

 private:
  std::shared_ptr<detail::ScopeEntry> entry_;
};

}  // namespace headgrad::nn
