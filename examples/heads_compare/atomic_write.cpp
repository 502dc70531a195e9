// The removal of stale temporary files, with the names of earlier versions (see
// atomic_write.hpp).
#include "atomic_write.hpp"

#include <chrono>
#include <optional>
#include <regex>

#include "holder.hpp"

namespace heads_compare {

namespace fs = std::filesystem;

namespace {

// The writer an earlier version's temporary name records, "<name>.tmp.<host>.<pid>.<n>"
// (not hidden), or nullopt for other names.
std::optional<Holder> writer_of(const std::string& name) {
  static const std::regex ours(R"([^.].*\.tmp\.(.+)\.([0-9]{1,9})\.[0-9]+)");
  std::smatch m;
  if (!std::regex_match(name, m, ours)) return std::nullopt;
  return Holder{std::stol(m[2].str()), m[1].str(), 0};
}

// Temporary names of still earlier versions of the cache: "<key>.json.tmp.<thread id>".
bool old_temp_name(const std::string& name) {
  static const std::regex old(R"([0-9a-f]{16}\.json\.tmp\.[0-9]+)");
  return std::regex_match(name, old);
}

bool older_than(const fs::path& path, std::chrono::seconds age) {
  std::error_code ec;
  const auto written = fs::last_write_time(path, ec);
  return !ec && fs::file_time_type::clock::now() - written > age;
}

}  // namespace

int remove_stale_temp_files(const fs::path& folder) {
  int removed = headgrad::train::remove_stale_temp_files(folder);
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(folder, ec)) {
    const std::string name = entry.path().filename().string();
    const auto writer = writer_of(name);
    if (!writer && !old_temp_name(name)) continue;
    const bool gone = writer && holder_is_gone(*writer);
    if (!gone && !older_than(entry.path(), std::chrono::hours(1))) continue;
    std::error_code removal;
    if (entry.is_regular_file(removal) && fs::remove(entry.path(), removal)) ++removed;
  }
  return removed;
}

}  // namespace heads_compare
