#pragma once
// The launch linter: launches that run, but not as the user meant, found at start-up and reported by
// rank 0 (train, bench, info) with what to change in the job script. Each check is a sentence a
// user can act on; none stops the job, since each launch may be deliberate on some site.
//
//   singleton     srun started several tasks, but MPI did not connect them (no PMIx or PMI-2
//                 plugin): every task trains alone, as rank 0 of a job of one
//   hidden GPUs   each rank sees one GPU of several on its node (--gpus-per-task, --gpu-bind=single):
//                 NCCL cannot see its peers' devices and falls back to slower paths
//   idle GPUs     a node has more visible GPUs than ranks
//   shared CPUs   two ranks of a node are bound to overlapping (not identical) CPU sets
#include <mpi.h>

#include <string>
#include <vector>

#include "dptrain/distributed/topology.hpp"

namespace dptrain::distributed {

// What one rank sees of its launch, beside its place in the Topology.
struct RankLaunch {
  int visible_gpus = 0;      // GPUs this rank's CUDA runtime sees (0 on the CPU backend)
  int node_gpus = -1;        // GPUs Slurm gave the node (SLURM_GPUS_ON_NODE); -1 unknown
  std::string cuda_visible;  // CUDA_VISIBLE_DEVICES as set ("" when unset)
  int slurm_step_tasks = 0;  // SLURM_STEP_NUM_TASKS: tasks of the srun step; 0 outside srun
};

struct LaunchWarning {
  std::string problem;  // what is wrong, with the figures
  std::string fix;      // what to change in the sbatch script
};

// This process's view (environment and `visible_gpus`).
RankLaunch local_launch(int visible_gpus);

// Collective over `comm` (MPI_COMM_NULL: this process alone): every rank's RankLaunch, by rank.
std::vector<RankLaunch> gather_launches(MPI_Comm comm, const RankLaunch& mine);

// The checks above on a topology and every rank's launch (pure: tested with made-up launches).
std::vector<LaunchWarning> check_launch(const Topology& topology, const std::vector<RankLaunch>& launches);

// "warning: PROBLEM\n  fix: FIX\n" per warning ("" for none).
std::string describe(const std::vector<LaunchWarning>& warnings);

}  // namespace dptrain::distributed
