// Atomic file replacement, the class under train/atomic_write.hpp's functions: the bytes
// go to a temporary file next to the target (temp_path_for), which is flushed to disk and
// renamed over the target, so a reader sees the old file or the new one, never a part.
// save_npz, save_npy, the metrics rewrite and the attention view stream into it; text
// written in one piece goes through write_file_atomically.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>

namespace headgrad::train::detail {

class AtomicFile {
 public:
  // Creates the temporary file beside `target`. `op` names the caller in errors
  // ("save_npz"); `path` is the target as the user gave it. Without `durable` the data
  // are not flushed to disk before the rename (plot data a rerun redraws).
  AtomicFile(const std::filesystem::path& target, std::string op, std::string path,
             bool durable = true);
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  // Removes the temporary file unless commit() renamed it.
  ~AtomicFile();

  void write(const char* data, std::size_t size);
  // Flushes the data to disk (fsync), closes the file, renames it over the target, then
  // flushes the folder so the rename itself survives a crash (best effort).
  void commit();

 private:
  [[noreturn]] void fail(const std::string& step, int err) const;

  std::filesystem::path target_, tmp_;
  std::string op_, path_;
  int fd_ = -1;
  bool durable_ = true, committed_ = false;
};

}  // namespace headgrad::train::detail
