// Process identity for claims, locks and temporary files (see holder.hpp).
#include "holder.hpp"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <ctime>
#include <fstream>
#include <sstream>

namespace heads_compare {

namespace {

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "unknown-host";
  std::string host(name);
  for (char& c : host)
    if (c == ' ' || c == '/' || c == '\n') c = '_';
  return host;
}

// True for a process that has exited but was not reaped yet (a zombie): it keeps its id
// until its parent, or init, waits for it.
bool exited(long pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  std::getline(stat, text);
  const std::size_t name_end = text.rfind(')');
  if (name_end == std::string::npos || name_end + 2 >= text.size()) return false;
  const char state = text[name_end + 2];
  return state == 'Z' || state == 'X';
}

}  // namespace

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
  static const Holder self{static_cast<long>(::getpid()), host_name(),
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
  if (holder.host != this_process().host) return false;
  if (holder.pid == this_process().pid) return false;
  if (::kill(static_cast<pid_t>(holder.pid), 0) != 0) return errno == ESRCH;
  return exited(holder.pid);
}

}  // namespace heads_compare
