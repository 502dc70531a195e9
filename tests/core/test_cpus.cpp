// The CPUs a process may use (src/core/cpus.hpp): affinity masks of any size are counted,
// cgroup v2 cpu.max and v1 CFS quotas are parsed, the cgroup folders are found from
// /proc/self/cgroup and mountinfo (own folder and ancestors, inside containers too), the
// smallest quota wins, and the result is min(affinity, ceil(quota)), at least 1.
#include <doctest/doctest.h>

#include <map>
#include <optional>
#include <string>

#include "core/cpus.hpp"
#include "headgrad/core/threads.hpp"

namespace hgd = headgrad::detail;

namespace {

// Files of a made-up machine, for cgroup_cpu_quota.
hgd::FileReader files(std::map<std::string, std::string> contents) {
  return [contents](const std::string& path) -> std::optional<std::string> {
    const auto it = contents.find(path);
    if (it == contents.end()) return std::nullopt;
    return it->second;
  };
}

const char* kMountsV2 =
    "24 30 0:22 / /sys rw,nosuid - sysfs sysfs rw\n"
    "30 24 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec - cgroup2 cgroup2 rw,nsdelegate\n";

const char* kMountsV1 =
    "30 22 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "31 30 0:28 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct\n"
    "33 30 0:30 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset\n"
    "40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

}  // namespace

TEST_CASE("affinity masks are counted at any size, beyond 1024 CPUs too") {
  for (int cpus : {8, 1024, 4096}) {
    const std::size_t bytes = CPU_ALLOC_SIZE(cpus);
    cpu_set_t* mask = CPU_ALLOC(cpus);
    REQUIRE(mask != nullptr);
    CPU_ZERO_S(bytes, mask);
    CHECK(hgd::cpus_in_mask(mask, bytes) == 0);
    CPU_SET_S(0, bytes, mask);
    CPU_SET_S(3, bytes, mask);
    CPU_SET_S(static_cast<std::size_t>(cpus - 1), bytes, mask);
    CHECK(hgd::cpus_in_mask(mask, bytes) == 3);
    CPU_FREE(mask);
  }
  CHECK(hgd::cpus_in_mask(nullptr, 0) == 0);
  // This process: at least one CPU, and no more than the default pool size allows.
  CHECK(hgd::affinity_cpus() >= 1);
  CHECK(hgd::available_cpus() >= 1);
  CHECK(hgd::available_cpus() <= hgd::affinity_cpus());
}

TEST_CASE("cgroup v2 cpu.max gives the quota in CPUs, and max or garbage means no limit") {
  CHECK(hgd::parse_cgroup2_cpu_max("max 100000\n") == std::nullopt);
  CHECK(hgd::parse_cgroup2_cpu_max("max") == std::nullopt);
  CHECK(hgd::parse_cgroup2_cpu_max("150000 100000\n") == doctest::Approx(1.5));
  CHECK(hgd::parse_cgroup2_cpu_max("  200000   50000 ") == doctest::Approx(4.0));
  CHECK(hgd::parse_cgroup2_cpu_max("50000") == doctest::Approx(0.5));  // default period
  CHECK(hgd::parse_cgroup2_cpu_max("") == std::nullopt);
  CHECK(hgd::parse_cgroup2_cpu_max("abc 100000") == std::nullopt);
  CHECK(hgd::parse_cgroup2_cpu_max("100000 0") == std::nullopt);
  CHECK(hgd::parse_cgroup2_cpu_max("1 2 3") == std::nullopt);
}

TEST_CASE("cgroup v1 CFS quota and period give the quota in CPUs, and -1 means no limit") {
  CHECK(hgd::parse_cgroup1_cpu_quota("-1\n", "100000\n") == std::nullopt);
  CHECK(hgd::parse_cgroup1_cpu_quota("300000\n", "100000\n") == doctest::Approx(3.0));
  CHECK(hgd::parse_cgroup1_cpu_quota("25000", "100000") == doctest::Approx(0.25));
  CHECK(hgd::parse_cgroup1_cpu_quota("x", "100000") == std::nullopt);
  CHECK(hgd::parse_cgroup1_cpu_quota("100000", "") == std::nullopt);
}

TEST_CASE("the cgroup folders are the process's own and its ancestors, v1 or v2") {
  SUBCASE("v2, nested") {
    const auto dirs = hgd::cgroup_cpu_dirs("0::/user.slice/job.scope\n", kMountsV2);
    REQUIRE(dirs.size() == 3);
    CHECK(dirs[0].path == "/sys/fs/cgroup/user.slice/job.scope");
    CHECK(dirs[1].path == "/sys/fs/cgroup/user.slice");
    CHECK(dirs[2].path == "/sys/fs/cgroup");
    CHECK(dirs[0].v2);
  }
  SUBCASE("v2 inside a container: the cgroup namespace's root is the mount") {
    const auto dirs = hgd::cgroup_cpu_dirs("0::/\n", kMountsV2);
    REQUIRE(dirs.size() == 1);
    CHECK(dirs[0].path == "/sys/fs/cgroup");
  }
  SUBCASE("v1 (hybrid): the cpu controller's hierarchy, not the unified one") {
    const auto dirs = hgd::cgroup_cpu_dirs(
        "12:cpuset:/\n4:cpu,cpuacct:/docker/abc\n1:name=systemd:/docker/abc\n0::/\n", kMountsV1);
    REQUIRE(dirs.size() == 3);
    CHECK(dirs[0].path == "/sys/fs/cgroup/cpu,cpuacct/docker/abc");
    CHECK(dirs[2].path == "/sys/fs/cgroup/cpu,cpuacct");
    CHECK_FALSE(dirs[0].v2);
  }
  SUBCASE("v1 with the mount's root at the process's cgroup (a container's view)") {
    const char* mounts = "31 30 0:28 /docker/abc /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n";
    const auto dirs = hgd::cgroup_cpu_dirs("4:cpu:/docker/abc\n", mounts);
    REQUIRE(dirs.size() == 1);
    CHECK(dirs[0].path == "/sys/fs/cgroup/cpu");
  }
  SUBCASE("no cgroup file or no cgroup mount: no folder") {
    CHECK(hgd::cgroup_cpu_dirs("", kMountsV2).empty());
    CHECK(hgd::cgroup_cpu_dirs("0::/a\n", "").empty());
  }
}

TEST_CASE("the smallest quota over the cgroup folders wins, and none set means no limit") {
  const auto v2 = [](std::string own, std::string parent) {
    return files({{"/proc/self/cgroup", "0::/a/b\n"},
                  {"/proc/self/mountinfo", kMountsV2},
                  {"/sys/fs/cgroup/a/b/cpu.max", own},
                  {"/sys/fs/cgroup/a/cpu.max", parent}});
  };
  CHECK(hgd::cgroup_cpu_quota(v2("max 100000", "max 100000")) == std::nullopt);
  CHECK(hgd::cgroup_cpu_quota(v2("400000 100000", "max 100000")) == doctest::Approx(4.0));
  CHECK(hgd::cgroup_cpu_quota(v2("max 100000", "150000 100000")) == doctest::Approx(1.5));
  CHECK(hgd::cgroup_cpu_quota(v2("300000 100000", "200000 100000")) == doctest::Approx(2.0));
  CHECK(hgd::cgroup_cpu_quota(files({})) == std::nullopt);
  const auto v1 = files({{"/proc/self/cgroup", "4:cpu,cpuacct:/\n"},
                         {"/proc/self/mountinfo", kMountsV1},
                         {"/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "100000\n"},
                         {"/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000\n"}});
  CHECK(hgd::cgroup_cpu_quota(v1) == doctest::Approx(1.0));
}

TEST_CASE("usable CPUs are min(affinity, ceil(quota)), at least 1") {
  CHECK(hgd::available_cpus_from(16, std::nullopt, 64) == 16);
  CHECK(hgd::available_cpus_from(16, 2.0, 64) == 2);
  CHECK(hgd::available_cpus_from(16, 1.5, 64) == 2);
  CHECK(hgd::available_cpus_from(16, 0.2, 64) == 1);
  CHECK(hgd::available_cpus_from(2, 8.0, 64) == 2);
  CHECK(hgd::available_cpus_from(0, std::nullopt, 8) == 8);  // affinity unknown
  CHECK(hgd::available_cpus_from(0, 3.0, 8) == 3);
  CHECK(hgd::available_cpus_from(0, std::nullopt, 0) == 1);
}
