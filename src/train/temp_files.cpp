// Temporary files of atomic writes: their names, which record the writer, and the removal
// of those whose writer is gone (see train/atomic_write.hpp).
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <regex>

#include "headgrad/core/process.hpp"
#include "headgrad/train/atomic_write.hpp"

namespace headgrad::train {

namespace fs = std::filesystem;

namespace {

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

// The writer ran on this host and is gone (core/process.hpp).
bool writer_is_gone(const Writer& w) { return w.host == host_name() && process_is_gone(w.pid); }

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
