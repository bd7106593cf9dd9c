#include "dptrain/distributed/communicator.hpp"

#include <cstring>

#include "dptrain/core/check_mpi.hpp"
#include "dptrain/core/error.hpp"
#include "dptrain/distributed/launcher.hpp"
#include "dptrain/distributed/mpi_communicator.hpp"
#include "dptrain/distributed/mpi_lock.hpp"

namespace dptrain::distributed {

std::size_t size_of(ElementType type) {
  switch (type) {
    case ElementType::f32: return 4;
    case ElementType::f64: return 8;
    case ElementType::i64: return 8;
  }
  return 0;
}

void LocalCommunicator::allgather(const void* mine, void* all, std::size_t bytes) {
  if (all != mine) std::memmove(all, mine, bytes);
}

AllreduceKind parse_allreduce_kind(const std::string& text) {
  if (text == "auto") return AllreduceKind::automatic;
  if (text == "flat") return AllreduceKind::flat;
  if (text == "hierarchical") return AllreduceKind::hierarchical;
  throw Error("--allreduce must be auto, flat or hierarchical, not '" + text + "'");
}

StallWatchOptions stall_watch_options(const Topology& topology, const CommunicatorOptions& options) {
  StallWatchOptions watch;
  watch.timeout_seconds = options.stall_timeout_seconds;
  for (const RankPlace& place : topology.ranks) watch.nodes.push_back(place.node);
  watch.failure_report = options.failure_report;
  int provided = 0;
  {
    MpiLock lock;
    DPTRAIN_MPI_CHECK(MPI_Query_thread(&provided));
  }
  // With less than "serialized", only the main thread may call MPI: it sends the heartbeats itself
  // while it waits (and the job runs without overlap, see Job).
  watch.heartbeat_thread = provided >= MPI_THREAD_SERIALIZED;
  return watch;
}

std::unique_ptr<Communicator> make_communicator(const Topology& topology, const CommunicatorOptions& options) {
  if (!in_multi_rank_job()) return std::make_unique<LocalCommunicator>();
  DPTRAIN_CHECK(options.stall_timeout_seconds > 0, "--stall-timeout must be positive");
  auto watch = std::make_shared<StallWatch>(MPI_COMM_WORLD, stall_watch_options(topology, options));
  const bool can_split = topology.uniform && topology.node_count > 1 && topology.local_size() > 1;
  switch (options.kind) {
    case AllreduceKind::flat: return std::make_unique<MpiCommunicator>(MPI_COMM_WORLD, watch);
    case AllreduceKind::hierarchical:
      DPTRAIN_CHECK(topology.uniform, "--allreduce hierarchical needs the same number of ranks on every node");
      return std::make_unique<HierarchicalCommunicator>(MPI_COMM_WORLD, topology, watch);
    case AllreduceKind::automatic:
      if (can_split) return std::make_unique<HierarchicalCommunicator>(MPI_COMM_WORLD, topology, watch);
      return std::make_unique<MpiCommunicator>(MPI_COMM_WORLD, watch);
  }
  return nullptr;
}

}  // namespace dptrain::distributed
