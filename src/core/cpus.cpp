// The CPUs this process may use: affinity mask and cgroup CPU quota (cpus.hpp).
#include "core/cpus.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>

namespace headgrad::detail {

namespace {

std::string_view trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(" \t\r\n") - first + 1);
}

// A whole decimal integer (optionally negative), or nullopt.
std::optional<long long> parse_integer(std::string_view s) {
  s = trim(s);
  if (s.empty() || s.size() > 20) return std::nullopt;
  const std::string text(s);
  char* end = nullptr;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  if (end != text.c_str() + text.size()) return std::nullopt;
  return value;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  for (std::size_t begin = 0;;) {
    const std::size_t end = s.find(sep, begin);
    parts.push_back(s.substr(begin, end == std::string_view::npos ? end : end - begin));
    if (end == std::string_view::npos) return parts;
    begin = end + 1;
  }
}

std::vector<std::string_view> lines(std::string_view s) {
  std::vector<std::string_view> out;
  for (std::string_view line : split(s, '\n'))
    if (!trim(line).empty()) out.push_back(line);
  return out;
}

std::vector<std::string_view> words(std::string_view s) {
  std::vector<std::string_view> out;
  for (std::string_view w : split(s, ' '))
    if (!w.empty()) out.push_back(w);
  return out;
}

bool has_item(std::string_view list, std::string_view item) {
  for (std::string_view x : split(list, ','))
    if (x == item) return true;
  return false;
}

std::optional<double> quota_in_cpus(long long quota, long long period) {
  if (quota <= 0 || period <= 0) return std::nullopt;
  return static_cast<double>(quota) / static_cast<double>(period);
}

// The folder of cgroup `path` under a mount of its hierarchy whose root is `root`, and its
// ancestors up to the mount point.
void add_dirs(std::vector<CgroupCpuDir>& out, std::string_view mount_point, std::string_view root,
              std::string_view path, bool v2) {
  std::string relative;
  if (root == "/")
    relative = std::string(path);
  else if (path.substr(0, root.size()) == root &&
           (path.size() == root.size() || path[root.size()] == '/'))
    relative = std::string(path.substr(root.size()));
  // else the process's cgroup lies outside the mount (a container's view): the mount only.
  while (!relative.empty() && relative.back() == '/') relative.pop_back();
  for (;;) {
    out.push_back({std::string(mount_point) + relative, v2});
    if (relative.empty()) return;
    relative.erase(relative.rfind('/'));
  }
}

}  // namespace

int cpus_in_mask(const cpu_set_t* mask, std::size_t bytes) {
  return mask == nullptr ? 0 : CPU_COUNT_S(bytes, mask);
}

int affinity_cpus() {
  for (int cpus = 1024; cpus <= 65536; cpus *= 2) {
    const std::size_t bytes = CPU_ALLOC_SIZE(cpus);
    std::unique_ptr<cpu_set_t, void (*)(cpu_set_t*)> mask(CPU_ALLOC(cpus), [](cpu_set_t* m) {
      if (m != nullptr) CPU_FREE(m);
    });
    if (!mask) return 0;
    CPU_ZERO_S(bytes, mask.get());
    if (sched_getaffinity(0, bytes, mask.get()) == 0) return cpus_in_mask(mask.get(), bytes);
    if (errno != EINVAL) return 0;  // EINVAL: the kernel's mask is larger than ours
  }
  return 0;
}

std::optional<double> parse_cgroup2_cpu_max(std::string_view text) {
  const std::vector<std::string_view> w = words(trim(text));
  if (w.empty() || w.size() > 2 || w[0] == "max") return std::nullopt;
  const auto quota = parse_integer(w[0]);
  const auto period = w.size() == 2 ? parse_integer(w[1]) : std::optional<long long>(100000);
  if (!quota || !period) return std::nullopt;
  return quota_in_cpus(*quota, *period);
}

std::optional<double> parse_cgroup1_cpu_quota(std::string_view quota_us,
                                              std::string_view period_us) {
  const auto quota = parse_integer(quota_us), period = parse_integer(period_us);
  if (!quota || !period) return std::nullopt;
  return quota_in_cpus(*quota, *period);
}

std::vector<CgroupCpuDir> cgroup_cpu_dirs(std::string_view proc_self_cgroup,
                                          std::string_view mountinfo) {
  // /proc/self/cgroup: "0::/path" (v2) or "4:cpu,cpuacct:/path" (v1).
  std::optional<std::string_view> v2_path, v1_path;
  for (std::string_view line : lines(proc_self_cgroup)) {
    const std::vector<std::string_view> f = split(trim(line), ':');
    if (f.size() < 3) continue;
    // The path may itself hold ':'; it is everything after the second one.
    const std::string_view path = trim(line).substr(f[0].size() + f[1].size() + 2);
    if (f[0] == "0" && f[1].empty())
      v2_path = path;
    else if (has_item(f[1], "cpu"))
      v1_path = path;
  }
  // /proc/self/mountinfo: "id parent maj:min root mount_point options ... - fstype source
  // super_options".
  std::vector<CgroupCpuDir> dirs;
  for (std::string_view line : lines(mountinfo)) {
    const std::vector<std::string_view> f = words(line);
    const auto dash = std::find(f.begin(), f.end(), std::string_view("-"));
    if (f.size() < 5 || dash == f.end() || f.end() - dash < 2) continue;
    const std::string_view fstype = dash[1];
    const std::string_view super_options = f.end() - dash >= 4 ? dash[3] : std::string_view();
    if (fstype == "cgroup2" && v2_path && !v1_path)
      add_dirs(dirs, f[4], f[3], *v2_path, true);
    else if (fstype == "cgroup" && v1_path && has_item(super_options, "cpu"))
      add_dirs(dirs, f[4], f[3], *v1_path, false);
  }
  return dirs;
}

std::optional<double> cgroup_cpu_quota(const FileReader& read) {
  const auto cgroup = read("/proc/self/cgroup");
  const auto mountinfo = read("/proc/self/mountinfo");
  if (!cgroup || !mountinfo) return std::nullopt;
  std::optional<double> least;
  for (const CgroupCpuDir& dir : cgroup_cpu_dirs(*cgroup, *mountinfo)) {
    std::optional<double> quota;
    if (dir.v2) {
      if (const auto text = read(dir.path + "/cpu.max")) quota = parse_cgroup2_cpu_max(*text);
    } else {
      const auto q = read(dir.path + "/cpu.cfs_quota_us");
      const auto p = read(dir.path + "/cpu.cfs_period_us");
      if (q && p) quota = parse_cgroup1_cpu_quota(*q, *p);
    }
    if (quota && (!least || *quota < *least)) least = quota;
  }
  return least;
}

int available_cpus_from(int affinity, std::optional<double> quota, int fallback) {
  int cpus = affinity > 0 ? affinity : std::max(1, fallback);
  // A quota of 1.5 CPUs lets 2 threads run half the time each: round up, as the JVM and Go do.
  if (quota) cpus = std::min(cpus, static_cast<int>(std::min(1e6, std::ceil(*quota - 1e-9))));
  return std::max(1, cpus);
}

int available_cpus() {
  const FileReader read = [](const std::string& path) -> std::optional<std::string> {
    std::ifstream in(path);
    if (!in) return std::nullopt;
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  };
  return available_cpus_from(affinity_cpus(), cgroup_cpu_quota(read),
                             static_cast<int>(std::thread::hardware_concurrency()));
}

}  // namespace headgrad::detail
