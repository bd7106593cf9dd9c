// The end of a job in which rank 0 finishes last (its final report, a JSON file): the other ranks end
// first, while rank 0's stall watch still sends them heartbeats. Over UCX between nodes a rank that has
// gone into MPI_Finalize has closed its connections and such a send fails ("Endpoint timeout"); the
// watch must neither abort the job for it nor let it happen (every rank stops its heartbeats before
// any leaves). Exits 0 with "late finish: rank R done" from every rank; the tests reject a failed send
// and any warning of the stall watch in the output.
#include <chrono>
#include <iostream>
#include <thread>
#include <vector>

#include "dptrain/distributed/communicator.hpp"
#include "dptrain/distributed/launcher.hpp"

using namespace dptrain::distributed;

int main() {
  MpiSession session;
  int rank = 0;
  {
    const Topology topology = discover_topology(MPI_COMM_WORLD, 0, 0, nullptr);
    auto comm = make_communicator(topology, {AllreduceKind::automatic, 60.0, ""});
    std::vector<float> values(1024, 1.0f);
    comm->allreduce_sum(values.data(), values.size());
    rank = comm->rank();
    // Three heartbeat periods of rank 0 after the others are done.
    if (rank == 0) std::this_thread::sleep_for(std::chrono::seconds(3));
  }
  std::cout << "late finish: rank " << rank << " done" << std::endl;
  return 0;
}
