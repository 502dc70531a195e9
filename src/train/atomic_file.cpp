// Atomic file replacement (see atomic_file.hpp): temporary file, fsync, rename.
#include "train/atomic_file.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>

#include "headgrad/train/npz.hpp"

namespace headgrad::train::detail {

namespace fs = std::filesystem;

namespace {

fs::path folder_of(const fs::path& target) {
  return target.has_parent_path() ? target.parent_path() : fs::path(".");
}

// The prefix every temporary file of `target` starts with: ".<name>.tmp-".
std::string temp_prefix(const fs::path& target) {
  std::string prefix = ".";
  prefix += target.filename().string();
  prefix += ".tmp-";
  return prefix;
}

}  // namespace

AtomicFile::AtomicFile(const fs::path& target, std::string op, std::string path)
    : target_(target), op_(std::move(op)), path_(std::move(path)) {
  static std::atomic<std::uint64_t> counter{0};
  const fs::path dir = folder_of(target);
  for (int attempt = 0; attempt < 100; ++attempt) {
    const auto stamp =
        static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    // Appended piece by piece: GCC 12 warns wrongly (-Wrestrict) on "literal" + string.
    std::string name = temp_prefix(target);
    name += std::to_string(::getpid());
    name += '-';
    name += std::to_string(counter++);
    name += '-';
    name += std::to_string(stamp % 1000000);
    tmp_ = dir / name;
    fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ >= 0 || errno != EEXIST) break;
  }
  if (fd_ < 0) {
    const int err = errno;
    throw IOError(op_ + ": '" + path_ + "': cannot create a temporary file in '" + dir.string() +
                      "': " + std::strerror(err),
                  path_);
  }
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(tmp_.c_str());
}

void AtomicFile::write(const char* data, std::size_t size) {
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = ::write(fd_, data + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : ENOSPC;
      throw IOError(
          op_ + ": '" + path_ + "': cannot write '" + tmp_.string() + "': " + std::strerror(err),
          path_);
    }
    done += static_cast<std::size_t>(n);
  }
}

void AtomicFile::commit() {
  auto fail = [&](int err, const std::string& what) {
    throw IOError(op_ + ": '" + path_ + "': " + what + ": " + std::strerror(err), path_);
  };
  while (::fsync(fd_) != 0)
    if (errno != EINTR) fail(errno, "cannot flush '" + tmp_.string() + "' to disk");
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail(errno, "cannot close '" + tmp_.string() + "'");
  if (::rename(tmp_.c_str(), target_.c_str()) != 0)
    fail(errno, "cannot rename '" + tmp_.string() + "' over the target");
  committed_ = true;
  const int dir_fd = ::open(folder_of(target_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
}

int remove_stale_temp_files(const fs::path& target) {
  const std::string prefix = temp_prefix(target);
  std::error_code ec;
  int removed = 0;
  for (const auto& entry : fs::directory_iterator(folder_of(target), ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    // The writer's pid follows the prefix; a file of a live process is a write in progress.
    const std::string rest = name.substr(prefix.size());
    const std::size_t dash = rest.find('-');
    if (dash == 0 || dash == std::string::npos) continue;
    long pid = 0;
    bool digits = true;
    for (std::size_t i = 0; i < dash; ++i) {
      if (rest[i] < '0' || rest[i] > '9' || i > 9) {
        digits = false;
        break;
      }
      pid = pid * 10 + (rest[i] - '0');
    }
    if (!digits) continue;
    if (pid == ::getpid() || ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM) continue;
    if (fs::remove(entry.path(), ec)) ++removed;
  }
  return removed;
}

}  // namespace headgrad::train::detail
