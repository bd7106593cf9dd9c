#include "link_measurement.hpp"

#include <mpi.h>

#include <algorithm>
#include <vector>

#include "dptrain/core/check_mpi.hpp"
#include "dptrain/core/error.hpp"
#include "dptrain/distributed/mpi_lock.hpp"

namespace dptrain::app {
namespace {
constexpr double kSmallBytes = 1024;
constexpr int kRepeats = 10;

// The fastest of kRepeats allreduces of `bytes` over `comm` (after one warm-up), as every member saw
// it at its slowest (the max over the members of each one's time).
double time_allreduce(MPI_Comm comm, double bytes) {
  // MPI counts are ints: at most 2^31 - 1 floats (8 GiB).
  const double elements = std::clamp(bytes / sizeof(float), 1.0, 2147483647.0);
  std::vector<float> buffer(static_cast<std::size_t>(elements), 1.f);
  const int count = static_cast<int>(buffer.size());
  DPTRAIN_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, buffer.data(), count, MPI_FLOAT, MPI_SUM, comm));
  double best = 1e30;
  for (int i = 0; i < kRepeats; ++i) {
    DPTRAIN_MPI_CHECK(MPI_Barrier(comm));
    const double start = MPI_Wtime();
    DPTRAIN_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, buffer.data(), count, MPI_FLOAT, MPI_SUM, comm));
    double seconds = MPI_Wtime() - start;
    DPTRAIN_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, MPI_MAX, comm));
    best = std::min(best, seconds);
  }
  return best;
}

std::optional<distributed::LinkModel> measure(MPI_Comm comm, double bytes) {
  int size = 1;
  DPTRAIN_MPI_CHECK(MPI_Comm_size(comm, &size));
  if (size < 2) return std::nullopt;
  const double small = time_allreduce(comm, kSmallBytes);
  const double large = time_allreduce(comm, bytes);
  return distributed::fit_ring_link(size, kSmallBytes, small, bytes, large);
}
}  // namespace

MeasuredLinks measure_links(distributed::Job& job, double bytes) {
  const distributed::Topology& t = job.topology();
  DPTRAIN_CHECK(t.size() > 1, "--measure runs under srun or mpiexec, with several ranks on a node or several nodes");
  // Blocking calls, timed as a job's own would be, made by every rank's main thread in the same
  // order: they hold the MPI lock throughout (the job's heartbeat thread waits; nothing is watched).
  distributed::MpiLock lock;
  MeasuredLinks m;
  m.ranks_per_node = t.local_size();
  m.nodes = t.node_count;
  // Split communicators, freed however this ends.
  struct Split {
    MPI_Comm comm = MPI_COMM_NULL;
    Split(int color, int key) { DPTRAIN_MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, color, key, &comm)); }
    ~Split() {
      if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
    }
    Split(const Split&) = delete;
    Split& operator=(const Split&) = delete;
  };
  const Split node(t.self().node_index, t.rank), cross(t.self().local_rank, t.rank);
  // Every node measures at once (as a job's nodes all reduce at once); then the ranks of local rank 0
  // measure between nodes while the others wait.
  m.intra = measure(node.comm, bytes);
  if (t.self().local_rank == 0) m.inter = measure(cross.comm, bytes);
  // Rank 0 is local rank 0 of node 0: it holds both.
  DPTRAIN_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
  return m;
}

}  // namespace dptrain::app
