// Atomic file replacement for the files headgrad writes (.npz archives, .npy files,
// checkpoints): the bytes go to a temporary file next to the target, which is flushed to
// disk and renamed over the target, so a reader sees the old file or the new one, never a
// part. An interrupted write leaves at most a hidden temporary file
// ".<name>.tmp-<pid>-<n>-<stamp>", which remove_stale_temp_files clears.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>

namespace headgrad::train::detail {

class AtomicFile {
 public:
  // Creates the temporary file beside `target`. `op` names the caller in errors
  // ("save_npz"); `path` is the target as the user gave it.
  AtomicFile(const std::filesystem::path& target, std::string op, std::string path);
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  // Removes the temporary file unless commit() renamed it.
  ~AtomicFile();

  void write(const char* data, std::size_t size);
  // Flushes the data to disk (fsync), closes the file, renames it over the target, then
  // flushes the folder so the rename itself survives a crash (best effort).
  void commit();

 private:
  std::filesystem::path target_, tmp_;
  std::string op_, path_;
  int fd_ = -1;
  bool committed_ = false;
};

// Removes the temporary files that writes of `target` left behind when their process was
// killed (the process named in the file's name no longer runs). Returns how many.
int remove_stale_temp_files(const std::filesystem::path& target);

}  // namespace headgrad::train::detail
