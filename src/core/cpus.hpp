// The CPUs this process may actually use: its affinity mask (sched_getaffinity, which
// already reflects a cpuset cgroup and `taskset`), capped by a CPU quota of its cgroup
// (v2 cpu.max, v1 cpu.cfs_quota_us / cpu.cfs_period_us, on its own cgroup and every
// ancestor up to the mount), rounded up. The thread pool's default size and its spinning
// policy (parallel.cpp) follow this number rather than the machine's core count.
//
// The parsing functions take file contents, not paths, so tests can feed them any machine.
#pragma once

#include <sched.h>

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace headgrad::detail {

// The CPUs set in an affinity mask of `bytes` bytes (CPU_ALLOC_SIZE), at least 0.
int cpus_in_mask(const cpu_set_t* mask, std::size_t bytes);

// The calling thread's affinity mask, counted; 0 when the kernel refuses every mask size
// up to 64k CPUs.
int affinity_cpus();

// A cgroup v2 `cpu.max` ("max 100000", "150000 100000"): the quota in CPUs (1.5), or
// nullopt when unlimited or unreadable.
std::optional<double> parse_cgroup2_cpu_max(std::string_view text);

// A cgroup v1 `cpu.cfs_quota_us` and `cpu.cfs_period_us`: the quota in CPUs, or nullopt
// when unlimited (-1) or unreadable.
std::optional<double> parse_cgroup1_cpu_quota(std::string_view quota_us,
                                              std::string_view period_us);

// Where the CPU controller's files of this process's cgroup and its ancestors live, from
// /proc/self/cgroup and /proc/self/mountinfo: one entry per folder, the process's own first.
struct CgroupCpuDir {
  std::string path;
  bool v2 = false;
};
std::vector<CgroupCpuDir> cgroup_cpu_dirs(std::string_view proc_self_cgroup,
                                          std::string_view mountinfo);

// Reads a file whole; nullopt when it cannot be opened.
using FileReader = std::function<std::optional<std::string>(const std::string& path)>;

// The smallest CPU quota over the cgroup folders, in CPUs, or nullopt when none is set.
std::optional<double> cgroup_cpu_quota(const FileReader& read);

// min(affinity, ceil(quota)), at least 1; affinity <= 0 means unknown (the quota alone, or
// `fallback`).
int available_cpus_from(int affinity, std::optional<double> quota, int fallback);

// This process's usable CPUs (>= 1): affinity and cgroup quota, read now.
int available_cpus();

}  // namespace headgrad::detail
