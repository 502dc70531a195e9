// The output folder's lock (see folder_lock.hpp).
#include "folder_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "headgrad/core/error.hpp"
#include "headgrad/train/npz.hpp"
#include "holder.hpp"

namespace heads_compare {

namespace fs = std::filesystem;

namespace {

std::string read_all(int fd) {
  std::string text;
  char buf[256];
  ssize_t n = 0;
  ::lseek(fd, 0, SEEK_SET);
  while ((n = ::read(fd, buf, sizeof buf)) > 0) text.append(buf, static_cast<std::size_t>(n));
  return text;
}

[[noreturn]] void refuse(int fd, const fs::path& lock_path, const fs::path& folder) {
  const auto holder = holder_from(read_all(fd));
  ::close(fd);
  const std::string who = holder ? holder->describe() : "its holder is not recorded yet";
  throw headgrad::Error("heads_compare: the output folder '" + folder.string() +
                        "' is in use by another heads_compare (" + who + "; lock file '" +
                        lock_path.string() +
                        "'). Wait for it to finish, stop it, or choose another --out (--cache "
                        "with its cache folder reports the runs it has finished).");
}

}  // namespace

FolderLock::FolderLock(const fs::path& folder) {
  const fs::path path = folder / ".lock";
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0)
    throw headgrad::train::IOError("heads_compare: cannot create the lock file '" + path.string() +
                                       "': " + std::strerror(errno) +
                                       " (is the output folder writable?)",
                                   path.string());
  while (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    if (errno == EWOULDBLOCK) refuse(fd_, path, folder);
    const int err = errno;
    ::close(fd_);
    throw headgrad::train::IOError(
        "heads_compare: cannot lock '" + path.string() + "': " + std::strerror(err), path.string());
  }
  // Who holds it, for the message of a second process (best effort: the lock is the flock).
  const std::string line = this_process().line() + "\n";
  if (::ftruncate(fd_, 0) == 0) {
    ::lseek(fd_, 0, SEEK_SET);
    [[maybe_unused]] const ssize_t n = ::write(fd_, line.data(), line.size());
  }
}

FolderLock::~FolderLock() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace heads_compare
