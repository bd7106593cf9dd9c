#pragma once
// A warning at start when the machine is already busy and this job's OpenMP threads would spin on it.
// OpenMP (libgomp's default wait policy) spins while a thread waits at a barrier; when other work
// holds the cores, the thread it waits for is descheduled and the spinning takes its time. Measured
// on a 2-core machine under load, two lenet runs side by side: 266 img/s each with the default 2
// threads, 887 with OMP_WAIT_POLICY=passive, about 1,000 with OMP_NUM_THREADS=1 (alone the default
// runs at 1,996, passive at 1,681). The policy is read when the OpenMP library loads, before main,
// so it cannot be changed from here: the warning says what to export. Inside a Slurm job, or when
// the rank is confined to a CPU set smaller than the machine, the cores are the job's own: no check.
#include <optional>
#include <string>

#include "dptrain/distributed/launch_check.hpp"
#include "dptrain/distributed/topology.hpp"

namespace dptrain::distributed {

struct CpuLoad {
  double load_average = -1;  // /proc/loadavg's 1-minute figure before this job computes; < 0 unknown
  // Runnable threads right now (/proc/loadavg's fourth field, averaged over a few samples), this
  // process's included: the 1-minute figure still counts work that ended in the last minutes.
  double running_now = -1;
  int online_cpus = 0;          // the machine's
  std::string omp_wait_policy;  // OMP_WAIT_POLICY as set ("" unset)
  int omp_threads = 0;          // OMP_NUM_THREADS as set (0 unset)
  bool batch_job = false;       // SLURM_JOB_ID set
};

// This process's view (/proc/loadavg, sysconf, the environment). Samples the running threads only
// when the 1-minute load could mean a busy machine (five samples 10 ms apart).
CpuLoad local_cpu_load();

// The warning for this rank's node, if its OpenMP threads would spin on a busy machine (pure: tested
// with made-up figures).
std::optional<LaunchWarning> check_cpu_load(const Topology& topology, const CpuLoad& load);

}  // namespace dptrain::distributed
