#include "dptrain/distributed/cpu_load_check.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <thread>

#include "dptrain/distributed/compute_threads.hpp"

namespace dptrain::distributed {
namespace {
std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

// /proc/loadavg: "1.19 1.63 2.01 3/108 16467": the averages, then running/existing threads.
bool read_loadavg(double& one_minute, int& running) {
  std::ifstream loadavg("/proc/loadavg");
  double five = 0, fifteen = 0;
  char slash = 0;
  return static_cast<bool>(loadavg >> one_minute >> five >> fifteen >> running >> slash) && slash == '/';
}
}  // namespace

CpuLoad local_cpu_load() {
  CpuLoad load;
  int running = 0;
  if (!read_loadavg(load.load_average, running)) load.load_average = -1;
  if (load.load_average >= 1) {
    constexpr int kSamples = 5;
    double sum = 0;
    int taken = 0;
    for (int i = 0; i < kSamples; ++i) {
      double ignored = 0;
      if (read_loadavg(ignored, running)) {
        sum += running;
        ++taken;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (taken > 0) load.running_now = sum / taken;
  }
  load.online_cpus = static_cast<int>(std::max(0L, sysconf(_SC_NPROCESSORS_ONLN)));
  if (const char* policy = std::getenv("OMP_WAIT_POLICY")) load.omp_wait_policy = policy;
  if (const char* threads = std::getenv("OMP_NUM_THREADS")) load.omp_threads = std::max(0, std::atoi(threads));
  const char* job = std::getenv("SLURM_JOB_ID");
  load.batch_job = job && *job;
  return load;
}

std::optional<LaunchWarning> check_cpu_load(const Topology& topology, const CpuLoad& load) {
  if (load.batch_job || load.load_average < 1 || load.online_cpus <= 0) return std::nullopt;
  if (lower(load.omp_wait_policy) == "passive") return std::nullopt;
  const RankPlace& me = topology.self();
  const int cpus = cpu_count(me.cpu_set);
  if (cpus > 0 && cpus < load.online_cpus) return std::nullopt;  // confined: these cores are ours
  // What Job gives OpenMP: OMP_NUM_THREADS, else the fair share with several ranks, else every core.
  const int threads = load.omp_threads > 0  ? load.omp_threads
                      : topology.size() > 1 ? fair_thread_count(topology)
                                            : std::max(cpus, load.online_cpus);
  if (threads <= 1) return std::nullopt;
  int ranks_here = 0;
  for (const RankPlace& p : topology.ranks) ranks_here += p.node_index == me.node_index ? 1 : 0;
  const int ours = ranks_here * threads;
  // Busy: the load before this job already leaves fewer idle cores than this job's threads need,
  // and other work runs now (this node's ranks each count one running thread of their own).
  if (load.load_average <= load.online_cpus - ours + 0.5) return std::nullopt;
  if (load.running_now >= 0 && load.running_now - ranks_here < 0.5) return std::nullopt;
  std::ostringstream problem, fix;
  problem << std::fixed << std::setprecision(1) << "node " << me.node << " is busy: a load average of "
          << load.load_average << " on " << load.online_cpus << " CPUs before this job, which adds " << ranks_here
          << " rank" << (ranks_here == 1 ? "" : "s") << " x " << threads
          << " OpenMP threads that spin while they wait; on a shared machine that ran 3.7x slower than one thread "
             "a rank";
  fix << "export OMP_WAIT_POLICY=passive (about 16% slower on an idle machine) or OMP_NUM_THREADS=1 before dptrain, "
         "or run where the cores are the job's own (a Slurm allocation)";
  return LaunchWarning{problem.str(), fix.str()};
}

}  // namespace dptrain::distributed
