// heads_compare's files on disk: every output (report, summary, tables, plot scripts and
// data) and every cache file is written atomically, and temporary files that a killed
// process left behind are removed (atomic_write.cpp).
#pragma once

#include <filesystem>
#include <string>

namespace heads_compare {

// Writes `text` to `path` through a temporary file beside it (temp_path_for), flushed to
// disk when `durable`, then renamed over `path`: a reader sees the old file or the new
// one, never a part. When any step fails (a full disk, a read-only folder) the temporary
// file is removed, `path` is left as it was, and headgrad::train::IOError names the file
// and the reason.
void write_file_atomically(const std::filesystem::path& path, const std::string& text,
                           bool durable = true);

// A new temporary name beside `path`: "<name>.tmp.<host>.<pid>.<n>", this process its
// writer.
std::filesystem::path temp_path_for(const std::filesystem::path& path);

// Removes the temporary files in `folder` (not its subfolders) that no write will finish:
// those whose writer ran on this host and is gone, and any older than an hour (a write
// takes well under a second). Returns how many were removed.
int remove_stale_temp_files(const std::filesystem::path& folder);

}  // namespace heads_compare
