#pragma once
// Where each rank runs: its node, its place on the node, its GPU and its CPU set.
//
// A node is what Slurm calls a node (SLURMD_NODENAME), else the host name. MPI_COMM_TYPE_SHARED
// alone would merge two Slurm nodes that share one host (the test cluster runs several slurmd on one
// machine), and the hierarchical allreduce must see the nodes the user asked for.
// `ranks_per_node` > 0 overrides it all: consecutive blocks of K ranks form a node, which simulates
// K-GPU nodes on one machine.
#include <mpi.h>

#include <string>
#include <vector>

namespace dptrain::distributed {

struct RankPlace {
  int rank = 0;
  std::string node;    // node name
  int node_index = 0;  // nodes numbered in order of their lowest rank
  int local_rank = 0;  // place among the ranks of its node, in rank order
  int local_size = 1;
  int device = -1;        // GPU ordinal among the visible ones; -1: CPU backend
  std::string device_id;  // the GPU's UUID (empty on the CPU)
  std::string cpu_set;    // the CPUs this rank may run on, "0-3,8"
};

struct Topology {
  std::vector<RankPlace> ranks;  // every rank, by rank
  int rank = 0;                  // this process
  int node_count = 1;
  bool uniform = true;  // every node has the same number of ranks

  const RankPlace& self() const { return ranks[static_cast<std::size_t>(rank)]; }
  int size() const { return static_cast<int>(ranks.size()); }
  int local_size() const { return self().local_size; }
};

// Node names and CPU sets of every rank in, places out (no MPI; tested on its own).
// Throws when two ranks of one node would share a GPU.
Topology place_ranks(int self, const std::vector<std::string>& node_names, const std::vector<std::string>& cpu_sets,
                     const std::vector<std::string>& device_ids, int visible_devices, int ranks_per_node);

// The GPU ordinal a rank uses: the only visible one, else local rank modulo the count; -1 without GPUs.
int choose_device(int local_rank, int visible_devices);

// This process's node name (SLURMD_NODENAME or the host name) and CPU set.
std::string local_node_name();
std::string local_cpu_set();

// Gathers every rank's node name and CPU set over `comm` (or takes this process alone when comm is
// MPI_COMM_NULL). `device_id_of(ordinal)` names a GPU (its UUID) so that sharing is detected even
// when each rank sees different GPUs under the same ordinal.
Topology discover_topology(MPI_Comm comm, int ranks_per_node, int visible_devices,
                           std::string (*device_id_of)(int ordinal));

// The map as a table (rank, node, local rank, device, CPU set), for `dptrain info` and job logs.
std::string describe(const Topology& topology);

}  // namespace dptrain::distributed
