#pragma once
// The one lock every MPI call in dptrain is made under.
//
// MPI is initialised MPI_THREAD_SERIALIZED: several threads call MPI (the main thread, the gradient
// reducer's communication thread, the stall watch's heartbeat thread), but never two at once. Open
// MPI 4.1's TCP transport is not safe when two threads drive its progress engine together (with
// MPI_THREAD_MULTIPLE, a connection set up lazily on a peer's first message could be completed by
// one thread and failed by the other, and the failure called a callback already cleared: SIGSEGV at
// pc 0 in mca_btl_tcp.so at the start of a multi-node job). So a thread takes this lock for each
// call, and nothing blocks while holding it: collectives are started non-blocking and polled with
// MPI_Test, one call per lock, so the heartbeat thread gets its turn while a collective waits (see
// StallWatch). The only blocking calls under it are the start-up ones every rank makes together
// (communicator creation, topology discovery) before the job's threads need MPI.
#include <mutex>

namespace dptrain::distributed {

// Recursive, so that a helper that takes it may be called under it; timed, so that abort_job can give
// up waiting for it (a rank that aborts must not hang behind a call that never returns).
std::recursive_timed_mutex& mpi_mutex();

// Holds the MPI lock for its scope: `MpiLock lock; DPTRAIN_MPI_CHECK(MPI_...);`.
class MpiLock {
 public:
  MpiLock() : lock_(mpi_mutex()) {}

 private:
  std::lock_guard<std::recursive_timed_mutex> lock_;
};

}  // namespace dptrain::distributed
