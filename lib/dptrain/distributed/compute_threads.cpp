#include "dptrain/distributed/compute_threads.hpp"

#include <cstdlib>
#include <sstream>

#if DPTRAIN_HAVE_OPENMP
#include <omp.h>
#endif

namespace dptrain::distributed {

std::vector<int> cpus_in(const std::string& cpu_set) {
  std::vector<int> cpus;
  std::stringstream ranges(cpu_set);
  std::string range;
  while (std::getline(ranges, range, ',')) {
    const auto dash = range.find('-');
    char* end = nullptr;
    const long first = std::strtol(range.c_str(), &end, 10);
    if (end == range.c_str() || first < 0) return {};
    const long last = dash == std::string::npos ? first : std::strtol(range.c_str() + dash + 1, nullptr, 10);
    if (last < first || last - first >= (1L << 20)) return {};
    for (long c = first; c <= last; ++c) cpus.push_back(static_cast<int>(c));
  }
  return cpus;
}

int cpu_count(const std::string& cpu_set) { return static_cast<int>(cpus_in(cpu_set).size()); }

int fair_thread_count(const Topology& topology) {
  const RankPlace& me = topology.self();
  int sharing = 0;
  for (const RankPlace& p : topology.ranks) {
    if (p.node_index == me.node_index && p.cpu_set == me.cpu_set) ++sharing;
  }
  return std::max(1, cpu_count(me.cpu_set) / std::max(sharing, 1));
}

int compute_threads_in_use() {
#if DPTRAIN_HAVE_OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

int spare_threads(const Topology& topology, int compute_threads) {
  return std::max(1, fair_thread_count(topology) - std::max(compute_threads, 0));
}

int set_compute_threads(const Topology& topology) {
#if DPTRAIN_HAVE_OPENMP
  if (const char* fixed = std::getenv("OMP_NUM_THREADS"); fixed && *fixed) return omp_get_max_threads();
  const int threads = fair_thread_count(topology);
  omp_set_num_threads(threads);
  return threads;
#else
  return fair_thread_count(topology);
#endif
}

}  // namespace dptrain::distributed
