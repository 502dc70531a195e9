// Files written whole or not at all. Everything headgrad and its programs write (.npz
// checkpoints, .npy arrays, metrics, the attention view, the programs' tables, JSON,
// plot scripts) goes through these: a reader, a crash, a full disk or a file-size limit
// never leaves a part of a file where a whole one was, and a failure names the file and
// the system's reason (strerror).
//
//   headgrad::train::write_file_atomically(dir / "summary.json", text, "patching");
//
// A replacement is written to a hidden temporary file beside its target,
// ".<name>.tmp.<host>.<pid>.<n>" (temp_path_for), then renamed over it. A process killed
// mid-write leaves that file behind; remove_stale_temp_files clears those of processes
// that are gone, and programs call it on their output folder before they write.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace headgrad::train {

// Writes `text` to `path`: into a temporary file beside it, flushed to disk (fsync) when
// `durable`, then renamed over `path` (a symbolic link at `path` is replaced, not
// followed). On any failure the temporary file is removed, `path` keeps its previous
// contents (or stays absent), and IOError reads "<who>: cannot write '<path>': <step>:
// <strerror>; ..." with the fix.
void write_file_atomically(const std::filesystem::path& path, std::string_view text,
                           const std::string& who = "write_file_atomically", bool durable = true);

// Appends `text` to `path` (created when missing) all or nothing: when the disk takes
// only part of it (full, a file-size limit), the file is cut back to its previous length
// and IOError (as above) names it. For logs that grow a row at a time.
void append_to_file(const std::filesystem::path& path, std::string_view text,
                    const std::string& who = "append_to_file");

// A new temporary name beside `path`, ".<name>.tmp.<host>.<pid>.<n>" with this process as
// its writer. The file is not created.
std::filesystem::path temp_path_for(const std::filesystem::path& path);

// Removes the temporary files in `folder` (not its subfolders) that no write will finish:
// those whose writer ran on this host and is gone, and any older than an hour (a write
// takes far less; a writer on another host sharing the folder cannot be asked). Names of
// earlier versions (".<name>.tmp-<pid>-<n>-<stamp>") count as this host's. Other files
// are never touched. Returns how many were removed; a missing folder removes none.
int remove_stale_temp_files(const std::filesystem::path& folder);

}  // namespace headgrad::train
