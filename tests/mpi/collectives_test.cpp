// The communicators under mpiexec: flat and hierarchical allreduce give exact sums of integers
// (any summation order is exact), broadcast and allgather move bytes, the topology places ranks.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "dptrain/distributed/communicator.hpp"
#include "dptrain/distributed/launcher.hpp"
#include "mpi_testing.hpp"

using namespace dptrain;
using namespace dptrain::distributed;

namespace {
testing::MpiVerdict verdict;

void check_allreduce(Communicator& comm, std::size_t count) {
  const int rank = comm.rank(), size = comm.size();
  std::vector<float> values = testing::rank_pattern(count, rank);
  comm.allreduce_sum(values.data(), values.size());
  verdict.expect(testing::is_rank_pattern_sum(values, size),
                 comm.name() + ": allreduce of " + std::to_string(count) + " floats is the exact sum");
  std::int64_t biggest = comm.max(rank * 10);
  verdict.expect(biggest == (size - 1) * 10, comm.name() + ": max over ranks");
}

void check_topology(const Topology& t, int ranks_per_node) {
  const int rank = t.rank;
  verdict.expect(t.self().node_index == rank / ranks_per_node, "node index of rank " + std::to_string(rank));
  verdict.expect(t.self().local_rank == rank % ranks_per_node, "local rank of rank " + std::to_string(rank));
  verdict.expect(t.node_count == (t.size() + ranks_per_node - 1) / ranks_per_node, "node count");
  verdict.expect(t.self().device == -1, "no GPU on the CPU build");
}
}  // namespace

int main() {
  MpiSession session;
  MPI_Comm world = session.active() ? MPI_COMM_WORLD : MPI_COMM_NULL;
  const Topology natural = discover_topology(world, 0, 0, nullptr);
  const int size = natural.size();
  verdict.expect(natural.node_count == 1, "mpiexec on one machine: one node");

  for (std::size_t count : {std::size_t{1}, std::size_t{7}, std::size_t{1000}, std::size_t{100003}}) {
    auto flat = make_communicator(natural, {AllreduceKind::flat, 60, ""});
    check_allreduce(*flat, count);
  }
  // Nodes of two ranks (and of one rank when there are fewer than four), simulated.
  const int per_node = size >= 4 ? 2 : 1;
  const Topology nodes = discover_topology(world, per_node, 0, nullptr);
  check_topology(nodes, per_node);
  if (size > 1) {
    auto hierarchical = make_communicator(nodes, {AllreduceKind::hierarchical, 60, ""});
    verdict.expect(hierarchical->name().rfind("hierarchical", 0) == 0, "hierarchical chosen: " + hierarchical->name());
    for (std::size_t count : {std::size_t{1}, std::size_t{3}, std::size_t{1001}, std::size_t{100003}}) {
      check_allreduce(*hierarchical, count);
    }
    auto automatic = make_communicator(nodes, {AllreduceKind::automatic, 60, ""});
    verdict.expect(automatic->name() == (size >= 4 ? hierarchical->name() : std::string("flat MPI")),
                   "auto picks hierarchical only for several multi-rank nodes: " + automatic->name());
  }

  auto comm = make_communicator(natural, {AllreduceKind::flat, 60, ""});
  std::vector<char> message(1000, static_cast<char>(comm->rank() + 1));
  comm->broadcast(message.data(), message.size(), size - 1);
  verdict.expect(std::all_of(message.begin(), message.end(), [&](char c) { return c == static_cast<char>(size); }),
                 "broadcast from the last rank");
  const std::int64_t mine = 100 + comm->rank();
  std::vector<std::int64_t> all(static_cast<std::size_t>(size));
  comm->allgather(&mine, all.data(), sizeof mine);
  for (int r = 0; r < size; ++r) verdict.expect(all[static_cast<std::size_t>(r)] == 100 + r, "allgather in rank order");
  comm->barrier();
  return verdict.finish("collectives");
}
