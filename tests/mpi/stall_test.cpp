// A rank that never arrives: rank 1 sleeps through a barrier whose stall timeout is 1 s. Rank 0 must
// name rank 1 as late and abort the whole job (CTest matches the report; the exit is non-zero).
#include <chrono>
#include <thread>

#include "dptrain/distributed/communicator.hpp"
#include "dptrain/distributed/launcher.hpp"

using namespace dptrain::distributed;

int main() {
  MpiSession session;
  const Topology topology = discover_topology(MPI_COMM_WORLD, 0, 0, nullptr);
  auto comm = make_communicator(topology, {AllreduceKind::flat, 1.0, ""});
  comm->barrier();  // everyone arrives at the first one
  if (comm->rank() == 1) std::this_thread::sleep_for(std::chrono::seconds(30));
  comm->barrier();
  return 0;  // not reached: the job is aborted
}
