// The busy-machine warning on made-up figures: it names the load, the CPUs and the threads, and it
// keeps quiet where the threads would not spin on someone else's cores.
#include "dptrain/distributed/cpu_load_check.hpp"

#include <catch2/catch.hpp>

using namespace dptrain::distributed;

namespace {
// `ranks` ranks on one node, each with CPU set `cpu_set`.
Topology node(int ranks, const std::string& cpu_set) {
  return place_ranks(0, std::vector<std::string>(static_cast<std::size_t>(ranks), "ws1"),
                     std::vector<std::string>(static_cast<std::size_t>(ranks), cpu_set), {}, 0, 0);
}

CpuLoad load(double average, int cpus) {
  CpuLoad l;
  l.load_average = average;
  l.online_cpus = cpus;
  return l;
}
}  // namespace

TEST_CASE("OpenMP threads that would spin on a busy machine are warned about", "[distributed][launch]") {
  // Another job keeps both cores of a 2-core machine busy; this one adds 2 spinning threads.
  const auto warning = check_cpu_load(node(1, "0-1"), load(2.1, 2));
  REQUIRE(warning);
  CHECK_THAT(warning->problem, Catch::Contains("node ws1 is busy: a load average of 2.1 on 2 CPUs") &&
                                   Catch::Contains("1 rank x 2 OpenMP threads"));
  CHECK_THAT(warning->fix, Catch::Contains("OMP_WAIT_POLICY=passive") && Catch::Contains("OMP_NUM_THREADS=1"));
  // Two ranks share the cores: each runs 1 thread, which never waits at a barrier for a sibling.
  CHECK_FALSE(check_cpu_load(node(2, "0-1"), load(2.1, 2)));
  // OMP_NUM_THREADS=4 on two ranks of an 8-core machine with 3 cores' worth of other work: 8 threads.
  CpuLoad four = load(3, 8);
  four.omp_threads = 4;
  REQUIRE(check_cpu_load(node(2, "0-7"), four));
  CHECK_THAT(check_cpu_load(node(2, "0-7"), four)->problem, Catch::Contains("2 ranks x 4 OpenMP threads"));
}

TEST_CASE("no busy-machine warning where the cores are free or the job's own", "[distributed][launch]") {
  CHECK_FALSE(check_cpu_load(node(1, "0-1"), load(0.4, 2)));  // background noise
  // The last minutes were busy, but nothing else runs now (this rank's own thread only).
  CpuLoad ended = load(2.1, 2);
  ended.running_now = 1;
  CHECK_FALSE(check_cpu_load(node(1, "0-1"), ended));
  ended.running_now = 2.6;  // another job's threads run now
  CHECK(check_cpu_load(node(1, "0-1"), ended));
  CHECK_FALSE(check_cpu_load(node(1, "0-1"), load(-1, 2)));  // no /proc/loadavg
  // 64 cores with 3 busy, 1 rank x 8 threads (OMP_NUM_THREADS): enough idle cores.
  CpuLoad big = load(3, 64);
  big.omp_threads = 8;
  CHECK_FALSE(check_cpu_load(node(1, "0-63"), big));
  big.omp_threads = 0;  // every core: 64 threads on a machine 3 cores of which are taken
  CHECK(check_cpu_load(node(1, "0-63"), big));
  CpuLoad passive = load(2.1, 2);
  passive.omp_wait_policy = "PASSIVE";  // threads that sleep while they wait
  CHECK_FALSE(check_cpu_load(node(1, "0-1"), passive));
  CpuLoad one = load(2.1, 2);
  one.omp_threads = 1;
  CHECK_FALSE(check_cpu_load(node(1, "0-1"), one));
  CpuLoad batch = load(2.1, 2);
  batch.batch_job = true;  // a Slurm allocation: the site's business
  CHECK_FALSE(check_cpu_load(node(1, "0-1"), batch));
  // Confined to 2 of 8 CPUs (a CPU set): other work runs on the other six.
  CHECK_FALSE(check_cpu_load(node(1, "0-1"), load(6, 8)));
}
