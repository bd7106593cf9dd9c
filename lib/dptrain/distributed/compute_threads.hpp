#pragma once
// How many threads each rank computes with on the CPU. oneDNN's OpenMP runtime takes every CPU it
// may run on; when mpiexec or srun leave several ranks the same CPU set (no binding, or binding to a
// socket), each would start that many threads and the node would run N times more threads than
// cores, which with OpenMP's spinning barriers is many times slower. So ranks sharing a CPU set
// divide it. An explicit OMP_NUM_THREADS always wins.
#include <string>
#include <vector>

#include "dptrain/distributed/topology.hpp"

namespace dptrain::distributed {

// The CPUs of a set written as "0-3,8" (local_cpu_set's form), in order; empty if it cannot be read.
std::vector<int> cpus_in(const std::string& cpu_set);
// How many (0 if it cannot be read).
int cpu_count(const std::string& cpu_set);

// The threads `topology.self()` should use: its CPUs divided by the ranks of its node that share
// exactly that set, at least 1.
int fair_thread_count(const Topology& topology);

// Applies fair_thread_count() to OpenMP unless OMP_NUM_THREADS is set; returns the count in use.
int set_compute_threads(const Topology& topology);

// The threads OpenMP computes with now (1 without OpenMP).
int compute_threads_in_use();

// Data-loading threads `topology.self()` can spare: its share of its CPU set (as fair_thread_count)
// less `compute_threads`, at least 1.
int spare_threads(const Topology& topology, int compute_threads);

}  // namespace dptrain::distributed
