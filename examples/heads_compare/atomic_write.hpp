// heads_compare's files on disk: every output (report, summary, tables, plot scripts and
// data) and every cache file is written whole or not at all by the library's
// write_file_atomically (headgrad/train/atomic_write.hpp), and the temporary files that a
// killed process left behind are removed (atomic_write.cpp).
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "headgrad/train/atomic_write.hpp"

namespace heads_compare {

// write_file_atomically with heads_compare named in its errors.
inline void write_file_atomically(const std::filesystem::path& path, std::string_view text,
                                  bool durable = true) {
  headgrad::train::write_file_atomically(path, text, "heads_compare", durable);
}

using headgrad::train::temp_path_for;

// Removes the temporary files in `folder` (not its subfolders) that no write will finish:
// the library's (headgrad::train::remove_stale_temp_files) and the names earlier versions
// of heads_compare gave theirs, "<name>.tmp.<host>.<pid>.<n>" and the cache's
// "<key>.json.tmp.<thread id>", by the same rule: the writer ran on this host and is gone,
// or the file is older than an hour. Returns how many were removed.
int remove_stale_temp_files(const std::filesystem::path& folder);

}  // namespace heads_compare
