// Atomic file replacement and all-or-nothing appends (see atomic_file.hpp and
// train/atomic_write.hpp): temporary file, fsync, rename.
#include "train/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "headgrad/train/atomic_write.hpp"
#include "headgrad/train/npz.hpp"

namespace headgrad::train {

namespace fs = std::filesystem;

namespace {

fs::path folder_of(const fs::path& target) {
  return target.has_parent_path() ? target.parent_path() : fs::path(".");
}

// "<who>: cannot write '<path>': <step>: <reason>; ..." with what to do about it.
[[noreturn]] void cannot_write(const std::string& who, const std::string& path,
                               const std::string& step, int err, const char* state) {
  throw IOError(who + ": cannot write '" + path + "': " + step + ": " + std::strerror(err) + "; '" +
                    path + "' " + state +
                    " (free space on that disk, raise the file-size limit, or make the "
                    "folder writable)",
                path);
}

}  // namespace

namespace detail {

AtomicFile::AtomicFile(const fs::path& target, std::string op, std::string path, bool durable)
    : target_(target), op_(std::move(op)), path_(std::move(path)), durable_(durable) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    tmp_ = temp_path_for(target);
    fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ >= 0 || errno != EEXIST) break;
  }
  if (fd_ < 0)
    fail("cannot create a temporary file in '" + folder_of(target).string() + "'", errno);
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(tmp_.c_str());
}

void AtomicFile::fail(const std::string& step, int err) const {
  cannot_write(op_, path_, step, err, "is as it was before");
}

void AtomicFile::write(const char* data, std::size_t size) {
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = ::write(fd_, data + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("writing its temporary file '" + tmp_.string() + "'", n < 0 ? errno : ENOSPC);
    done += static_cast<std::size_t>(n);
  }
}

void AtomicFile::commit() {
  while (durable_ && ::fsync(fd_) != 0)
    if (errno != EINTR) fail("flushing its temporary file to disk", errno);
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail("closing its temporary file", errno);
  if (::rename(tmp_.c_str(), target_.c_str()) != 0)
    fail("renaming its temporary file '" + tmp_.string() + "' over it", errno);
  committed_ = true;
  if (!durable_) return;
  const int dir_fd = ::open(folder_of(target_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
}

}  // namespace detail

void write_file_atomically(const fs::path& path, std::string_view text, const std::string& who,
                           bool durable) {
  detail::AtomicFile file(path, who, path.string(), durable);
  file.write(text.data(), text.size());
  file.commit();
}

void append_to_file(const fs::path& path, std::string_view text, const std::string& who) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) cannot_write(who, path.string(), "opening it", errno, "is as it was before");
  struct stat st {};
  const bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : ENOSPC;
      // Cut back what part of the text got in: the file ends where it ended.
      const bool restored = !regular || done == 0 || ::ftruncate(fd, st.st_size) == 0;
      ::close(fd);
      cannot_write(who, path.string(), "appending to it", err,
                   restored ? "is as it was before" : "may end in a partial line");
    }
    done += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0) cannot_write(who, path.string(), "closing it", errno, "may be incomplete");
}

}  // namespace headgrad::train
