// Claims: how the ranks of one `mpirun` share the study's runs (see execute_all). A claim
// is the file <cache_dir>/<key>.claim-<session>, created exclusively by the one rank that
// trains the run, and holding that rank's pid, host and start time (holder.hpp).
#pragma once

#include <filesystem>
#include <string>

#include "headgrad/distributed/process_group.hpp"

namespace heads_compare {

// A name for this invocation's claims, the same on every rank of `group`: claims of an
// earlier, interrupted study never block this one.
std::string claim_session(headgrad::distributed::ProcessGroup& group);

// True for the one caller (any rank, any thread) that creates the claim of `key`.
bool claim(const std::filesystem::path& dir, const std::string& key, const std::string& session);

// Removes this session's claims, once every rank is done.
void remove_session_claims(const std::filesystem::path& dir, const std::string& session);

// Removes claims no rank will finish: those whose holder ran on this host and is gone,
// and those older than seven days (another host's holder cannot be checked; a rank waits
// at most that long for the others at the study's end). Removing a live claim could only
// make a run train twice, never wrongly. Returns how many were removed.
int remove_stale_claims(const std::filesystem::path& dir);

}  // namespace heads_compare
