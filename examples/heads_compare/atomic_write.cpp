// Atomic writes and the removal of stale temporary files (see atomic_write.hpp).
#include "atomic_write.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <regex>

#include "headgrad/train/npz.hpp"
#include "holder.hpp"

namespace heads_compare {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void fail(const fs::path& path, const std::string& what, int err) {
  throw headgrad::train::IOError("heads_compare: cannot write '" + path.string() + "': " + what +
                                     ": " + std::strerror(err) + "; '" + path.filename().string() +
                                     "' was left as it was (free space on that disk, or make "
                                     "its folder writable)",
                                 path.string());
}

void write_all(int fd, const std::string& text, const fs::path& path) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail(path, "writing its temporary file", n < 0 ? errno : ENOSPC);
    done += static_cast<std::size_t>(n);
  }
}

// The writer a temporary name records (temp_path_for), or nullopt for other names.
std::optional<Holder> writer_of(const std::string& name) {
  static const std::regex ours(R"(.+\.tmp\.(.+)\.([0-9]{1,9})\.[0-9]+)");
  std::smatch m;
  if (!std::regex_match(name, m, ours)) return std::nullopt;
  return Holder{std::stol(m[2].str()), m[1].str(), 0};
}

// Temporary names of earlier versions of the cache: "<key>.json.tmp.<thread id>".
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

fs::path temp_path_for(const fs::path& path) {
  static std::atomic<std::uint64_t> counter{0};
  const Holder self = this_process();
  return path.parent_path() / (path.filename().string() + ".tmp." + self.host + "." +
                               std::to_string(self.pid) + "." + std::to_string(counter++));
}

void write_file_atomically(const fs::path& path, const std::string& text, bool durable) {
  const fs::path tmp = temp_path_for(path);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) fail(path, "creating its temporary file", errno);
  try {
    write_all(fd, text, path);
    if (durable && ::fsync(fd) != 0) fail(path, "flushing its temporary file", errno);
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  const int closed = ::close(fd);
  const int err = errno;
  if (closed != 0 || ::rename(tmp.c_str(), path.c_str()) != 0) {
    const int why = closed != 0 ? err : errno;
    ::unlink(tmp.c_str());
    fail(path, closed != 0 ? "closing its temporary file" : "renaming its temporary file", why);
  }
}

int remove_stale_temp_files(const fs::path& folder) {
  std::error_code ec;
  int removed = 0;
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
