#include "link_measurement.hpp"

#include <mpi.h>

#include <algorithm>
#include <vector>

#include "dptrain/core/check_mpi.hpp"
#include "dptrain/core/error.hpp"

namespace dptrain::app {
namespace {
constexpr double kSmallBytes = 1024;
constexpr int kRepeats = 5;

// The fastest of kRepeats allreduces of `bytes` over `comm` (after one warm-up), as every member saw
// it at its slowest (the max over the members of each one's time).
double time_allreduce(MPI_Comm comm, double bytes) {
  std::vector<float> buffer(static_cast<std::size_t>(std::max(1.0, bytes / sizeof(float))), 1.f);
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
  MeasuredLinks m;
  m.ranks_per_node = t.local_size();
  m.nodes = t.node_count;
  MPI_Comm node = MPI_COMM_NULL, cross = MPI_COMM_NULL;
  DPTRAIN_MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, t.self().node_index, t.rank, &node));
  DPTRAIN_MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, t.self().local_rank, t.rank, &cross));
  // Every node measures at once (as a job's nodes all reduce at once); then the ranks of local rank 0
  // measure between nodes while the others wait.
  m.intra = measure(node, bytes);
  if (t.self().local_rank == 0) m.inter = measure(cross, bytes);
  // Rank 0 is local rank 0 of node 0: it holds both.
  DPTRAIN_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
  MPI_Comm_free(&node);
  MPI_Comm_free(&cross);
  return m;
}

}  // namespace dptrain::app
