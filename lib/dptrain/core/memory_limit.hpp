#pragma once
// How much host memory this process may use, from every limit that can apply on a cluster node: the
// memory the kernel reports available (MemAvailable), the cgroup's limit less its usage (cgroup v2
// memory.max, v1 memory.limit_in_bytes; Slurm's task/cgroup plugin enforces --mem this way) and
// Slurm's --mem (SLURM_MEM_PER_NODE) or --mem-per-cpu (SLURM_MEM_PER_CPU x SLURM_CPUS_ON_NODE).
#include <cstddef>
#include <optional>
#include <string>

namespace dptrain {

struct MemoryLimit {
  std::size_t bytes = 0;
  std::string source;  // which limit is the smallest: "MemAvailable", "cgroup memory.max", "Slurm --mem", ...
};

// The smallest of the limits found; nullopt when none can be read (not Linux).
std::optional<MemoryLimit> host_memory_limit();

// The same from files and variables given as text (tests): `meminfo` is /proc/meminfo's text; a
// cgroup limit or usage of "" is absent ("max" means none); `slurm_mem_per_node` in MB, "" absent.
std::optional<MemoryLimit> memory_limit_from(const std::string& meminfo, const std::string& cgroup_limit,
                                             const std::string& cgroup_usage, const std::string& slurm_mem_per_node,
                                             const std::string& slurm_mem_per_cpu, const std::string& slurm_cpus);

}  // namespace dptrain
