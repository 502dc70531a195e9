// One heads_compare per output folder: an exclusive flock on <out>/.lock, held for the
// process's life, with the holder (pid, host, start time) written in the file so that a
// second process can name it. The kernel drops the lock when its holder exits or is
// killed, so a lock never outlives its process; the file itself stays (harmless).
#pragma once

#include <filesystem>

namespace heads_compare {

class FolderLock {
 public:
  // Locks `folder`; headgrad::Error naming the holder and the fix when another process
  // holds it, headgrad::train::IOError when the lock file cannot be created.
  explicit FolderLock(const std::filesystem::path& folder);
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;
  ~FolderLock();

 private:
  int fd_ = -1;
};

}  // namespace heads_compare
