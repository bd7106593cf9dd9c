#pragma once
// How this process was launched, and the job-wide MPI session. A single `dptrain train` on a login
// node must not need an MPI launcher (Open MPI's singleton start is slow and fails without a PMIx
// server), so MPI is initialised only when mpiexec or srun started several ranks.
#include <string>

namespace dptrain::distributed {

// The world size a launcher announced in the environment (Open MPI, MPICH/Hydra, Slurm's PMI-2 or
// PMIx plug-ins), or 1 when there is none.
int launcher_world_size();

// Initialises MPI when launcher_world_size() > 1, and finalises it on destruction (not while an
// exception unwinds: the error's handler aborts the job, see abort_job). It asks for
// MPI_THREAD_SERIALIZED: several threads call MPI, one at a time, under the MPI lock (mpi_lock.hpp).
class MpiSession {
 public:
  MpiSession();
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  bool active() const { return active_; }          // MPI is initialised (here or by the caller)
  bool threads_ok() const { return threads_ok_; }  // a second thread may call MPI (serialized)

 private:
  bool initialised_here_ = false;
  bool active_ = false;
  bool threads_ok_ = true;
};

// True when MPI is initialised and not finalised, with more than one rank in the world.
bool in_multi_rank_job();
// This process's rank in MPI_COMM_WORLD (0 when MPI is not running).
int world_rank();

// Ends every rank of the job with `code` after printing `message` (prefixed with the rank) on
// stderr: one failing rank must never leave the others waiting in a collective until the time limit.
[[noreturn]] void abort_job(const std::string& message, int code);

}  // namespace dptrain::distributed
