// warn() and the warning handler (headgrad/core/warning.hpp).
#include "headgrad/core/warning.hpp"

#include <cstdio>
#include <mutex>
#include <utility>

namespace headgrad {

namespace {

std::recursive_mutex& handler_mutex() {  // recursive: a handler may warn itself
  static std::recursive_mutex m;
  return m;
}

WarningHandler& current_handler() {
  static WarningHandler handler;
  return handler;
}

}  // namespace

void warn(const std::string& message) {
  std::lock_guard lock(handler_mutex());
  if (const WarningHandler& handler = current_handler()) {
    handler(message);
  } else {
    std::fprintf(stderr, "headgrad warning: %s\n", message.c_str());
    std::fflush(stderr);
  }
}

WarningHandler set_warning_handler(WarningHandler handler) {
  std::lock_guard lock(handler_mutex());
  return std::exchange(current_handler(), std::move(handler));
}

}  // namespace headgrad
