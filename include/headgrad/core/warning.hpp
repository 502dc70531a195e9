// Warnings: what is not an error but should be heard, such as a checkpoint saved from a
// model with another head count (PyTorch's TORCH_WARN / warnings.warn). Library code calls
// warn(); the handler decides where the message goes: by default a line on stderr,
// "headgrad warning: <message>". A program (or the tests, or a Python front end) installs
// its own handler to collect, log or raise them.
//
//   auto previous = set_warning_handler([&](const std::string& m) { seen.push_back(m); });
//   ...
//   set_warning_handler(previous);
#pragma once

#include <functional>
#include <string>
#include <utility>

namespace headgrad {

using WarningHandler = std::function<void(const std::string& message)>;

// Passes `message` to the current handler. Thread-safe: handlers run one at a time.
void warn(const std::string& message);

// Installs `handler` (an empty one restores the default, stderr) and returns the one it
// replaces (empty when that was the default).
WarningHandler set_warning_handler(WarningHandler handler);

// Installs a handler for its lifetime and restores the previous one after.
class WarningHandlerGuard {
 public:
  explicit WarningHandlerGuard(WarningHandler handler)
      : previous_(set_warning_handler(std::move(handler))) {}
  ~WarningHandlerGuard() { set_warning_handler(std::move(previous_)); }
  WarningHandlerGuard(const WarningHandlerGuard&) = delete;
  WarningHandlerGuard& operator=(const WarningHandlerGuard&) = delete;

 private:
  WarningHandler previous_;
};

}  // namespace headgrad
