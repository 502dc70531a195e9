// Process identity for claims, locks and temporary files (see holder.hpp).
#include "holder.hpp"

#include <unistd.h>

#include <chrono>
#include <ctime>
#include <sstream>

#include "headgrad/core/process.hpp"

namespace heads_compare {

std::string Holder::describe() const {
  char when[64] = "an unknown time";
  const std::time_t t = static_cast<std::time_t>(started);
  std::tm utc{};
  if (started > 0 && ::gmtime_r(&t, &utc) != nullptr)
    std::strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &utc);
  return "pid " + std::to_string(pid) + " on host " + host + ", started " + when;
}

std::string Holder::line() const {
  return std::to_string(pid) + " " + host + " " + std::to_string(started);
}

Holder this_process() {
  static const Holder self{static_cast<long>(::getpid()), headgrad::host_name(),
                           std::chrono::duration_cast<std::chrono::seconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count()};
  return self;
}

std::optional<Holder> holder_from(const std::string& text) {
  std::istringstream in(text);
  Holder h;
  if (!(in >> h.pid >> h.host >> h.started) || h.pid <= 0) return std::nullopt;
  return h;
}

bool holder_is_gone(const Holder& holder) {
  return holder.host == this_process().host && headgrad::process_is_gone(holder.pid);
}

}  // namespace heads_compare
