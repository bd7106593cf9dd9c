#include "dptrain/distributed/launch_check.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>

#include "dptrain/core/check_mpi.hpp"
#include "dptrain/distributed/compute_threads.hpp"
#include "dptrain/distributed/mpi_lock.hpp"

namespace dptrain::distributed {
namespace {
// A positive integer environment variable, or `otherwise`.
int env_count(const char* name, int otherwise) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return otherwise;
  char* end = nullptr;
  const long parsed = std::strtol(value, &end, 10);
  return (*end == '\0' && parsed >= 0 && parsed < (1L << 30)) ? static_cast<int>(parsed) : otherwise;
}

bool overlap(const std::vector<int>& a, const std::vector<int>& b) {
  const std::set<int> in_b(b.begin(), b.end());
  return std::any_of(a.begin(), a.end(), [&](int c) { return in_b.count(c) > 0; });
}

// The first two ranks of `ranks` (one node's) bound to overlapping but different CPU sets.
std::optional<std::pair<int, int>> overlapping_cpu_sets(const Topology& topology, const std::vector<int>& ranks) {
  for (std::size_t a = 0; a < ranks.size(); ++a) {
    for (std::size_t b = a + 1; b < ranks.size(); ++b) {
      const std::string& sa = topology.ranks[static_cast<std::size_t>(ranks[a])].cpu_set;
      const std::string& sb = topology.ranks[static_cast<std::size_t>(ranks[b])].cpu_set;
      if (sa != sb && overlap(cpus_in(sa), cpus_in(sb))) return std::make_pair(ranks[a], ranks[b]);
    }
  }
  return std::nullopt;
}

std::string plural(int n, const char* word) { return std::to_string(n) + " " + word + (n == 1 ? "" : "s"); }
}  // namespace

RankLaunch local_launch(int visible_gpus) {
  RankLaunch mine;
  mine.visible_gpus = visible_gpus;
  mine.node_gpus = env_count("SLURM_GPUS_ON_NODE", -1);
  if (const char* cvd = std::getenv("CUDA_VISIBLE_DEVICES")) mine.cuda_visible = cvd;
  mine.slurm_step_tasks = env_count("SLURM_STEP_NUM_TASKS", 0);
  return mine;
}

std::vector<RankLaunch> gather_launches(MPI_Comm comm, const RankLaunch& mine) {
  if (comm == MPI_COMM_NULL) return {mine};
  // Three integers per rank, and the variable (short: a list of GPU indices or UUIDs) as text.
  constexpr int kWidth = 512;
  int size = 1;
  MpiLock lock;  // at start-up, before the job's threads: blocking is fine (mpi_lock.hpp)
  DPTRAIN_MPI_CHECK(MPI_Comm_size(comm, &size));
  const int counts[3] = {mine.visible_gpus, mine.node_gpus, mine.slurm_step_tasks};
  std::vector<int> all_counts(static_cast<std::size_t>(size) * 3);
  DPTRAIN_MPI_CHECK(MPI_Allgather(counts, 3, MPI_INT, all_counts.data(), 3, MPI_INT, comm));
  std::string record = mine.cuda_visible.substr(0, kWidth - 1);
  record.resize(kWidth, '\0');
  std::string all(static_cast<std::size_t>(size) * kWidth, '\0');
  DPTRAIN_MPI_CHECK(MPI_Allgather(record.data(), kWidth, MPI_CHAR, all.data(), kWidth, MPI_CHAR, comm));
  std::vector<RankLaunch> out(static_cast<std::size_t>(size));
  for (std::size_t r = 0; r < out.size(); ++r) {
    out[r].visible_gpus = all_counts[3 * r];
    out[r].node_gpus = all_counts[3 * r + 1];
    out[r].slurm_step_tasks = all_counts[3 * r + 2];
    out[r].cuda_visible = all.c_str() + r * kWidth;
  }
  return out;
}

std::vector<LaunchWarning> check_launch(const Topology& topology, const std::vector<RankLaunch>& launches) {
  std::vector<LaunchWarning> warnings;
  if (launches.size() != topology.ranks.size() || launches.empty()) return warnings;
  const RankLaunch& first = launches.front();

  if (topology.size() == 1 && first.slurm_step_tasks > 1) {
    warnings.push_back(
        {"srun started " + std::to_string(first.slurm_step_tasks) +
             " tasks, but this one runs as a job of 1 rank: MPI did not connect them, so each task trains "
             "alone on the same data",
         "launch with srun --mpi=pmix (`srun --mpi=list` shows the plugins; DPTRAIN_SRUN_MPI in "
         "slurm/README.md), or with mpiexec inside the allocation"});
  }

  // Per node: its ranks, and what its first rank sees (GPUs are a node's, so rank views agree).
  std::map<int, std::vector<int>> node_ranks;
  for (const RankPlace& p : topology.ranks) node_ranks[p.node_index].push_back(p.rank);
  for (const auto& [node, ranks] : node_ranks) {
    const RankPlace& place = topology.ranks[static_cast<std::size_t>(ranks.front())];
    const RankLaunch& seen = launches[static_cast<std::size_t>(ranks.front())];
    const int local = static_cast<int>(ranks.size());
    if (seen.visible_gpus == 1 && seen.node_gpus > 1) {
      warnings.push_back(
          {"each rank on " + place.node + " sees 1 GPU (CUDA_VISIBLE_DEVICES=" + seen.cuda_visible + ") of the " +
               std::to_string(seen.node_gpus) +
               " Slurm gave the node: NCCL cannot reach its peers' GPUs directly and falls back to slower "
               "paths",
           "request the GPUs per node (--gpus-per-node=" + std::to_string(seen.node_gpus) +
               ") instead of per task (--gpus-per-task), and keep them all visible (--gpu-bind=none); dptrain "
               "gives each rank the GPU of its local index"});
    } else if (seen.visible_gpus > local) {
      warnings.push_back({place.node + " has " + plural(seen.visible_gpus, "visible GPU") + " but " +
                              plural(local, "rank") + ": " + plural(seen.visible_gpus - local, "GPU") + " stay idle",
                          "start one rank per GPU: --ntasks-per-node=" + std::to_string(seen.visible_gpus) +
                              " (or request --gpus-per-node=" + std::to_string(local) + ")"});
    }
    // Ranks bound to overlapping but different CPU sets compete for the shared cores; identical sets
    // (no binding) are divided among the ranks' threads by the job itself (compute_threads).
    if (const auto pair = overlapping_cpu_sets(topology, ranks)) {
      const RankPlace& pa = topology.ranks[static_cast<std::size_t>(pair->first)];
      const RankPlace& pb = topology.ranks[static_cast<std::size_t>(pair->second)];
      warnings.push_back({"ranks " + std::to_string(pa.rank) + " and " + std::to_string(pb.rank) + " on " + pa.node +
                              " are bound to overlapping CPU sets (" + pa.cpu_set + " and " + pb.cpu_set +
                              "): their threads compete for the shared cores",
                          "give each rank cores of its own: srun --cpu-bind=cores with --cpus-per-task, or "
                          "mpiexec --map-by ppr:N:node:pe=C"});
    }
  }
  return warnings;
}

std::string describe(const std::vector<LaunchWarning>& warnings) {
  std::string out;
  for (const LaunchWarning& w : warnings) out += "warning: " + w.problem + "\n  fix: " + w.fix + "\n";
  return out;
}

}  // namespace dptrain::distributed
