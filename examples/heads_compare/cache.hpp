// heads_compare's run cache (cache.cpp): one JSON file per finished run, named by the hash
// of its configuration, written atomically; results serialized without loss (NaN as null).
#pragma once

#include <optional>
#include <string>

#include "study.hpp"

namespace heads_compare {

// <config.cache_dir>, or <out_dir>/cache when unset.
std::string cache_dir_of(const StudyConfig& config);

// The run's cached result, or nullopt when there is none, it cannot be read, or it was
// stored for another configuration.
std::optional<RunResult> read_cached(const StudyConfig& config, const RunSpec& spec);
// Writes <cache_dir>/<key>.json through a temporary file and a rename.
void write_cached(const StudyConfig& config, const RunResult& result);

std::string result_to_json(const RunResult& result, const std::string& config_text);
RunResult result_from_json(const std::string& text, const RunSpec& spec);

}  // namespace heads_compare
