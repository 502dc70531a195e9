// heads_compare's run cache (cache.cpp): one JSON file per finished run, named by the hash
// of its configuration, written atomically; results serialized without loss (NaN as null)
// with a checksum of the content. A file is used only when it passes every check
// (cache_check.cpp); otherwise the run is trained again.
#pragma once

#include <optional>
#include <string>

#include "study.hpp"

namespace heads_compare {

// <config.cache_dir>, or <out_dir>/cache when unset.
std::string cache_dir_of(const StudyConfig& config);

// A run's cache file as read back.
struct CachedRun {
  std::optional<RunResult> result;  // when the file exists and passes every check
  std::string path;                 // <cache_dir>/<key>.json
  std::string problem;              // why the file was not used ("" when it was or is absent)
  bool unchecked = false;  // used, but it carries no checksum (written before they were stored)
};

// Reads <cache_dir>/<key>.json. No file: neither result nor problem. A file that does not
// parse, was stored for another configuration, fails its checksum or holds values no run
// produces gives no result, and its problem names what is wrong. A file without a checksum
// (written by an earlier heads_compare) is used when its values pass.
CachedRun read_cached(const StudyConfig& config, const RunSpec& spec);
// Writes <cache_dir>/<key>.json through a temporary file and a rename (atomic_write.hpp).
void write_cached(const StudyConfig& config, const RunResult& result);

// The file's text: the result, its configuration text and "checksum", the hash (hash_hex)
// of the canonical JSON of everything else.
std::string result_to_json(const RunResult& result, const std::string& config_text);

// A partly trained run (study.hpp, StudyConfig::checkpoint_every): the trainer's checkpoint
// and the result so far in <cache_dir>/partial/<key>/. load gives the result recorded at
// the last evaluation (nullopt when there is none, or it cannot be read: the run starts
// over), save writes it atomically, remove deletes the folder once the run is cached.
class PartialRun {
 public:
  PartialRun(const StudyConfig& config, const RunSpec& spec);
  const std::string& dir() const { return dir_; }
  std::optional<RunResult> load() const;
  void save(const RunResult& result) const;
  void remove() const;

 private:
  const StudyConfig& config_;
  const RunSpec& spec_;
  std::string dir_;
};

// What is wrong with a run read from the cache, "" when nothing: every array has the
// length the run's layers, heads and step budget give it, and every number lies where a
// run can put it (accuracies and scores in [0, 1], losses, norms and times >= 0, steps in
// [0, the task's steps]; NaN, stored as null, where a run may produce it). The first
// problem found, naming the field, its value and what it must be.
std::string check_cached_run(const RunResult& result, const StudyConfig& config);

// Files a killed or failed process left in the cache folder: temporary files of writes
// (atomic_write.hpp) and claims (execute_all) whose process ran on this host and is gone,
// temporary files older than an hour and claims older than seven days (a rank waits at
// most that long for the others). Removes them and says how many of each.
struct StaleFiles {
  int temporary = 0, claims = 0;
};
StaleFiles remove_stale_cache_files(const StudyConfig& config);

}  // namespace heads_compare
