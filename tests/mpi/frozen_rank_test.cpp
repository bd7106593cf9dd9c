// A rank frozen inside a collective: rank 1 starts an allreduce of a gradient-sized buffer and, while
// it polls it, a thread of its own stops the whole process (SIGSTOP, as a hung node or a debugger
// would), heartbeat thread included. Rank 0 joins the allreduce later (so it cannot finish: a large
// message needs the receiver's part), waits out the stall timeout, and must name rank 1 and its node
// as a rank that stopped answering (not as late, not "none") and end the job with exit code 76
// (CTest matches the report). A one-element allreduce would not do: rank 1's contribution is on its
// way before it freezes, and rank 0 could finish without it.
#include <chrono>
#include <csignal>
#include <thread>
#include <vector>

#include "dptrain/distributed/communicator.hpp"
#include "dptrain/distributed/launcher.hpp"

using namespace dptrain::distributed;

int main() {
  MpiSession session;
  const Topology topology = discover_topology(MPI_COMM_WORLD, 1, 0, nullptr);
  CommunicatorOptions options;
  options.kind = AllreduceKind::flat;
  options.stall_timeout_seconds = 8;  // longer than the 5 s after which a rank counts as silent
  auto comm = make_communicator(topology, options);
  comm->barrier();
  std::vector<float> gradients(4u << 20, 1.f);  // 16 MB, far above any eager limit
  if (comm->rank() == 1) {
    std::thread freezer([] {
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      std::raise(SIGSTOP);
    });
    freezer.detach();
  } else {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  }
  comm->allreduce_sum(gradients.data(), gradients.size());
  return 0;  // not reached: the job is aborted
}
