// Rank placement without MPI: nodes from names or from --ranks-per-node, local ranks, GPUs, and the
// division of a shared CPU set among its ranks.
#include "dptrain/distributed/topology.hpp"

#include <catch2/catch.hpp>

#include "dptrain/core/error.hpp"
#include "dptrain/distributed/compute_threads.hpp"

using namespace dptrain::distributed;

TEST_CASE("nodes come from the node names, local ranks in rank order") {
  // Slurm's block distribution interleaved on purpose: ranks 0, 2 on a; 1, 3 on b.
  const Topology t = place_ranks(3, {"a", "b", "a", "b"}, {"0-3", "0-3", "4-7", "4-7"}, {}, 0, 0);
  CHECK(t.node_count == 2);
  CHECK(t.uniform);
  CHECK(t.ranks[2].node_index == 0);
  CHECK(t.ranks[2].local_rank == 1);
  CHECK(t.self().node == "b");
  CHECK(t.self().local_rank == 1);
  CHECK(t.self().local_size == 2);
  CHECK(t.self().device == -1);
}

TEST_CASE("--ranks-per-node simulates nodes on one host") {
  const Topology t = place_ranks(0, {"h", "h", "h", "h", "h", "h"}, std::vector<std::string>(6, "0-1"), {}, 0, 2);
  CHECK(t.node_count == 3);
  CHECK(t.ranks[5].node_index == 2);
  CHECK(t.ranks[5].local_rank == 1);
  const Topology uneven = place_ranks(0, {"h", "h", "h"}, std::vector<std::string>(3, "0"), {}, 0, 2);
  CHECK_FALSE(uneven.uniform);
}

TEST_CASE("GPUs: the only visible one, else local rank modulo the count; no sharing") {
  CHECK(choose_device(3, 1) == 0);
  CHECK(choose_device(3, 4) == 3);
  CHECK(choose_device(5, 4) == 1);
  CHECK(choose_device(0, 0) == -1);
  // One visible GPU per rank (srun --gpus-per-task=1): every rank says "0", the UUIDs differ.
  const Topology ok = place_ranks(0, {"n", "n"}, {"0", "1"}, {"GPU-a", "GPU-b"}, 1, 0);
  CHECK(ok.ranks[1].device == 0);
  // Two ranks on the same physical GPU are refused, naming both and the node.
  CHECK_THROWS_WITH(place_ranks(0, {"n", "n"}, {"0", "1"}, {"GPU-a", "GPU-a"}, 1, 0),
                    Catch::Contains("ranks 0 and 1 on node n would share GPU 0 (GPU-a)"));
  // Six ranks on a node with four GPUs.
  CHECK_THROWS_WITH(place_ranks(0, std::vector<std::string>(6, "n"), std::vector<std::string>(6, "0"), {}, 4, 0),
                    Catch::Contains("would share GPU"));
}

TEST_CASE("ranks sharing one CPU set divide it") {
  CHECK(cpu_count("0-3,8,10-11") == 7);
  CHECK(cpu_count("5") == 1);
  CHECK(cpu_count("?") == 0);
  const Topology shared = place_ranks(1, {"n", "n", "n", "n"}, std::vector<std::string>(4, "0-7"), {}, 0, 0);
  CHECK(fair_thread_count(shared) == 2);
  const Topology bound = place_ranks(1, {"n", "n"}, {"0-3", "4-7"}, {}, 0, 0);
  CHECK(fair_thread_count(bound) == 4);
  const Topology crowded = place_ranks(0, {"n", "n", "n"}, std::vector<std::string>(3, "0-1"), {}, 0, 0);
  CHECK(fair_thread_count(crowded) == 1);
  // Loader threads: the rank's share of its CPUs less its compute threads, at least 1.
  CHECK(spare_threads(bound, 1) == 3);  // a GPU rank bound to 4 cores
  CHECK(spare_threads(bound, 4) == 1);  // a CPU rank computing on all 4
  CHECK(spare_threads(shared, 0) == 2);
  CHECK(spare_threads(crowded, 1) == 1);
}
