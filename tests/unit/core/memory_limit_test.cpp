// The host memory a process may use: the smallest of MemAvailable, the cgroup's limit less its working
// set, and Slurm's --mem or --mem-per-cpu, each read as the kernel and Slurm write them.
#include "dptrain/core/memory_limit.hpp"

#include <catch2/catch.hpp>

using namespace dptrain;

namespace {
const std::string kMeminfo = "MemTotal:       32000000 kB\nMemFree:         1000000 kB\nMemAvailable:   20000000 kB\n";
}

TEST_CASE("memory limit: MemAvailable alone, a cgroup without a limit", "[core][memory]") {
  for (const std::string& unlimited : {std::string("max\n"), std::string("9223372036854771712\n"), std::string()}) {
    const auto limit = memory_limit_from(kMeminfo, unlimited, "123456\n", "", "", "");
    REQUIRE(limit);
    CHECK(limit->bytes == 20000000ull * 1024);
    CHECK(limit->source == "MemAvailable");
  }
}

TEST_CASE("memory limit: the smallest of the cgroup, Slurm's --mem and --mem-per-cpu", "[core][memory]") {
  struct Case {
    const char* what;
    const char *limit, *usage, *per_node, *per_cpu, *cpus;
    unsigned long long bytes;
    const char* source;
  };
  const Case cases[] = {
      {"a cgroup limit less its usage", "8589934592\n", "1073741824\n", "", "", "", 7ull << 30,
       "the cgroup's memory limit less its usage"},
      {"a cgroup filled beyond its limit leaves nothing", "1000\n", "5000\n", "", "", "", 0,
       "the cgroup's memory limit less its usage"},
      {"Slurm's --mem in MB", "max\n", "", "4000", "", "", 4000ull << 20, "Slurm's --mem"},
      {"Slurm's --mem-per-cpu times the CPUs on the node", "", "", "", "1000", "4", 4000ull << 20,
       "Slurm's --mem-per-cpu"},
      {"values that are not numbers are ignored, not read as 0", "-5\n", "x", "lots", "-1", "4", 20000000ull * 1024,
       "MemAvailable"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    const auto limit = memory_limit_from(kMeminfo, c.limit, c.usage, c.per_node, c.per_cpu, c.cpus);
    REQUIRE(limit);
    CHECK(limit->bytes == c.bytes);
    CHECK(limit->source == c.source);
  }
}

TEST_CASE("memory limit: nothing readable is no limit", "[core][memory]") {
  CHECK_FALSE(memory_limit_from("", "", "", "", "", ""));
  CHECK(host_memory_limit().has_value());  // Linux: /proc/meminfo at least
}
