#include "dptrain/core/memory_limit.hpp"

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace dptrain {
namespace {
std::string read_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) return "";
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string environment(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

// A non-negative decimal number at the start of `text` (after spaces), or nullopt.
std::optional<unsigned long long> number(const std::string& text) {
  std::size_t i = text.find_first_not_of(" \t");
  if (i == std::string::npos || text[i] < '0' || text[i] > '9') return std::nullopt;
  unsigned long long value = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    if (value > (~0ull - 9) / 10) return std::nullopt;
    value = value * 10 + static_cast<unsigned long long>(text[i] - '0');
  }
  return value;
}

void take(std::optional<MemoryLimit>& smallest, unsigned long long bytes, const char* source) {
  if (!smallest || bytes < smallest->bytes) smallest = MemoryLimit{static_cast<std::size_t>(bytes), source};
}

// This process's cgroup v2 directory (the "0::/path" line of /proc/self/cgroup), or "" under v1.
std::string cgroup_v2_directory() {
  std::istringstream lines(read_text("/proc/self/cgroup"));
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("0::", 0) == 0) return "/sys/fs/cgroup" + line.substr(3);
  }
  return "";
}
}  // namespace

std::optional<MemoryLimit> memory_limit_from(const std::string& meminfo, const std::string& cgroup_limit,
                                             const std::string& cgroup_usage, const std::string& slurm_mem_per_node,
                                             const std::string& slurm_mem_per_cpu, const std::string& slurm_cpus) {
  std::optional<MemoryLimit> smallest;
  const std::size_t at = meminfo.find("MemAvailable:");
  if (at != std::string::npos) {
    if (const auto kib = number(meminfo.substr(at + 13))) take(smallest, *kib * 1024, "MemAvailable");
  }
  // A cgroup without a limit says "max" (v2) or a number near 2^63 (v1).
  const auto limit = number(cgroup_limit);
  if (limit && *limit < (1ull << 60)) {
    const unsigned long long used = number(cgroup_usage).value_or(0);
    take(smallest, *limit > used ? *limit - used : 0, "the cgroup's memory limit less its usage");
  }
  if (const auto mb = number(slurm_mem_per_node); mb && *mb > 0) take(smallest, *mb << 20, "Slurm's --mem");
  const auto per_cpu = number(slurm_mem_per_cpu), cpus = number(slurm_cpus);
  if (per_cpu && cpus && *per_cpu > 0 && *cpus > 0) take(smallest, (*per_cpu << 20) * *cpus, "Slurm's --mem-per-cpu");
  return smallest;
}

std::optional<MemoryLimit> host_memory_limit() {
  std::string limit, usage, stat;
  const std::string v2 = cgroup_v2_directory();
  if (!v2.empty()) {
    limit = read_text(v2 + "/memory.max");
    usage = read_text(v2 + "/memory.current");
    stat = read_text(v2 + "/memory.stat");
  }
  if (limit.empty()) {
    limit = read_text("/sys/fs/cgroup/memory/memory.limit_in_bytes");
    usage = read_text("/sys/fs/cgroup/memory/memory.usage_in_bytes");
    stat = read_text("/sys/fs/cgroup/memory/memory.stat");
  }
  // The usage counts the page cache, most of which the kernel gives back under pressure: what is in
  // use is the usage less the inactive file pages (as container runtimes count a working set).
  for (const char* key : {"\ninactive_file ", "\ntotal_inactive_file "}) {
    const std::size_t at = ("\n" + stat).find(key);
    const auto used = number(usage);
    if (at == std::string::npos || !used) continue;
    const auto inactive = number(("\n" + stat).substr(at + std::string(key).size()));
    if (inactive) usage = std::to_string(*used > *inactive ? *used - *inactive : 0);
    break;
  }
  return memory_limit_from(read_text("/proc/meminfo"), limit, usage, environment("SLURM_MEM_PER_NODE"),
                           environment("SLURM_MEM_PER_CPU"), environment("SLURM_CPUS_ON_NODE"));
}

}  // namespace dptrain
