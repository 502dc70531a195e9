// Claims of runs among ranks, and their removal (see claims.hpp).
#include "claims.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include "headgrad/core/error.hpp"
#include "holder.hpp"

namespace heads_compare {

namespace fs = std::filesystem;

namespace {

constexpr const char* kClaimMark = ".claim-";

bool is_claim(const std::string& name) {
  const std::size_t at = name.find(kClaimMark);
  return at != std::string::npos && at > 0 && at + std::strlen(kClaimMark) < name.size();
}

bool older_than(const fs::path& path, std::chrono::hours age) {
  std::error_code ec;
  const auto written = fs::last_write_time(path, ec);
  return !ec && fs::file_time_type::clock::now() - written > age;
}

bool claim_is_stale(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  const auto holder = holder_from(text.str());
  if (holder && holder_is_gone(*holder)) return true;
  return older_than(path, std::chrono::hours(24 * 7));
}

}  // namespace

std::string claim_session(headgrad::distributed::ProcessGroup& group) {
  const auto now = std::chrono::system_clock::now().time_since_epoch().count();
  headgrad::Tensor id =
      headgrad::scalar_tensor(static_cast<double>((static_cast<std::uint64_t>(now) ^
                                                   (std::random_device{}() * 2654435761ull)) &
                                                  ((std::uint64_t{1} << 52) - 1)),
                              headgrad::kInt64);
  group.broadcast(id, 0);
  return std::to_string(id.item<std::int64_t>());
}

bool claim(const fs::path& dir, const std::string& key, const std::string& session) {
  fs::create_directories(dir);
  const fs::path path = dir / (key + kClaimMark + session);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    if (errno == EEXIST) return false;
    throw headgrad::Error("heads_compare: cannot create the claim file " + path.string() + ": " +
                          std::strerror(errno) + " (is the cache folder writable?)");
  }
  // The holder, so that a later study can tell a claim of a killed rank (best effort: the
  // claim is the file's existence).
  const std::string line = this_process().line() + "\n";
  [[maybe_unused]] const ssize_t n = ::write(fd, line.data(), line.size());
  ::close(fd);
  return true;
}

void remove_session_claims(const fs::path& dir, const std::string& session) {
  std::error_code ec;
  const std::string suffix = kClaimMark + session;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() > suffix.size() && name.ends_with(suffix)) fs::remove(entry.path(), ec);
  }
}

int remove_stale_claims(const fs::path& dir) {
  std::error_code ec;
  int removed = 0;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (!is_claim(entry.path().filename().string()) || !claim_is_stale(entry.path())) continue;
    std::error_code removal;
    if (fs::remove(entry.path(), removal)) ++removed;
  }
  return removed;
}

}  // namespace heads_compare
