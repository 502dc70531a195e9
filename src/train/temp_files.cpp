// Temporary files of atomic writes: their names, which record the writer, and the removal
// of those whose writer is gone (see train/atomic_write.hpp).
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <fstream>
#include <optional>
#include <regex>

#include "headgrad/train/atomic_write.hpp"

namespace headgrad::train {

namespace fs = std::filesystem;

namespace {

// This host's name as temporary names record it (no space, '/' or newline).
const std::string& host_name() {
  static const std::string host = [] {
    char name[256] = {};
    if (::gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return std::string("host");
    std::string text(name);
    for (char& c : text)
      if (c == ' ' || c == '/' || c == '\n') c = '_';
    return text;
  }();
  return host;
}

struct Writer {
  std::string host;
  long pid = 0;
};

// The writer a temporary name records, or nullopt for any other name:
// ".<name>.tmp.<host>.<pid>.<n>" (temp_path_for) and ".<name>.tmp-<pid>-<n>-<stamp>"
// (earlier versions, written on this host).
std::optional<Writer> writer_of(const std::string& name) {
  static const std::regex current(R"(\..+\.tmp\.(.+)\.([0-9]{1,9})\.[0-9]+)");
  static const std::regex earlier(R"(\..+\.tmp-([0-9]{1,9})-[0-9]+-[0-9]+)");
  std::smatch m;
  if (std::regex_match(name, m, current)) return Writer{m[1].str(), std::stol(m[2].str())};
  if (std::regex_match(name, m, earlier)) return Writer{host_name(), std::stol(m[1].str())};
  return std::nullopt;
}

// True for a process that has exited but was not reaped yet (a zombie keeps its id).
bool exited(long pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  std::getline(stat, text);
  const std::size_t name_end = text.rfind(')');
  if (name_end == std::string::npos || name_end + 2 >= text.size()) return false;
  const char state = text[name_end + 2];
  return state == 'Z' || state == 'X';
}

// The writer ran on this host and no process has its id now (or a zombie has it).
bool writer_is_gone(const Writer& w) {
  if (w.host != host_name() || w.pid <= 0 || w.pid == static_cast<long>(::getpid())) return false;
  if (::kill(static_cast<pid_t>(w.pid), 0) != 0) return errno == ESRCH;
  return exited(w.pid);
}

bool older_than(const fs::path& path, std::chrono::seconds age) {
  std::error_code ec;
  const auto written = fs::last_write_time(path, ec);
  return !ec && fs::file_time_type::clock::now() - written > age;
}

}  // namespace

fs::path temp_path_for(const fs::path& path) {
  static std::atomic<std::uint64_t> counter{0};
  // Appended piece by piece: GCC 12 warns wrongly (-Wrestrict) on "literal" + string.
  std::string name = ".";
  name += path.filename().string();
  name += ".tmp.";
  name += host_name();
  name += '.';
  name += std::to_string(::getpid());
  name += '.';
  name += std::to_string(counter++);
  return path.parent_path() / name;
}

int remove_stale_temp_files(const fs::path& folder) {
  std::error_code ec;
  int removed = 0;
  for (const auto& entry : fs::directory_iterator(folder.empty() ? fs::path(".") : folder, ec)) {
    const auto writer = writer_of(entry.path().filename().string());
    if (!writer) continue;
    if (!writer_is_gone(*writer) && !older_than(entry.path(), std::chrono::hours(1))) continue;
    std::error_code removal;
    if (entry.is_regular_file(removal) && fs::remove(entry.path(), removal)) ++removed;
  }
  return removed;
}

}  // namespace headgrad::train
