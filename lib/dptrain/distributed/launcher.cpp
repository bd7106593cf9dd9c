#include "dptrain/distributed/launcher.hpp"

#include <mpi.h>

#include <chrono>
#include <cstdlib>
#include <exception>
#include <iostream>

#include "dptrain/core/check_mpi.hpp"
#include "dptrain/distributed/mpi_lock.hpp"

namespace dptrain::distributed {
namespace {
int env_int(const char* name) {
  const char* value = std::getenv(name);
  if (!value || !*value) return 0;
  char* end = nullptr;
  const long parsed = std::strtol(value, &end, 10);
  return (*end == '\0' && parsed > 0 && parsed < (1L << 30)) ? static_cast<int>(parsed) : 0;
}

bool mpi_running() {
  int initialised = 0, finalised = 0;
  MPI_Initialized(&initialised);
  MPI_Finalized(&finalised);
  return initialised && !finalised;
}
}  // namespace

int launcher_world_size() {
  // Open MPI's mpiexec, MPICH/Hydra and Slurm's PMI-2 set these directly.
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"}) {
    if (const int n = env_int(name)) return n;
  }
  // srun --mpi=pmix announces the rank through PMIx and the size only through Slurm; PMIX_RANK tells
  // a task launched by srun apart from a batch script that merely runs inside an allocation.
  if (std::getenv("PMIX_RANK")) {
    if (const int n = env_int("SLURM_STEP_NUM_TASKS")) return n;
  }
  return 1;
}

MpiSession::MpiSession() {
  int initialised = 0;
  DPTRAIN_MPI_CHECK(MPI_Initialized(&initialised));
  if (!initialised) {
    if (launcher_world_size() <= 1) return;
    // Serialized, not multiple: every MPI call is made under the MPI lock (see mpi_lock.hpp).
    int provided = 0;
    MpiLock lock;
    DPTRAIN_MPI_CHECK(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided));
    initialised_here_ = true;
    threads_ok_ = provided >= MPI_THREAD_SERIALIZED;
  } else {
    int provided = 0;
    DPTRAIN_MPI_CHECK(MPI_Query_thread(&provided));
    threads_ok_ = provided >= MPI_THREAD_SERIALIZED;
  }
  active_ = true;
}

MpiSession::~MpiSession() {
  // While an error unwinds (perhaps on this rank alone: rank 0 reading a checkpoint), MPI_Finalize
  // would wait for ranks blocked in their next collective; MPI stays up so that main() ends the
  // whole job with MPI_Abort. Nothing useful can be done about a failure while shutting down.
  if (initialised_here_ && std::uncaught_exceptions() == 0) {
    MpiLock lock;
    MPI_Finalize();
  }
}

bool in_multi_rank_job() {
  if (!mpi_running()) return false;
  int size = 1;
  MpiLock lock;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size > 1;
}

int world_rank() {
  if (!mpi_running()) return 0;
  int rank = 0;
  MpiLock lock;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

void abort_job(const std::string& message, int code) {
  // Another thread may be inside an MPI call that never returns (the reason for aborting): wait for
  // the MPI lock a little, then go on regardless, calling MPI directly.
  const bool locked = mpi_mutex().try_lock_for(std::chrono::seconds(2));
  int size = 1, rank = 0;
  if (mpi_running()) {
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  }
  if (size > 1) {
    std::cerr << "dptrain: rank " << rank << ": " << message << std::endl;
    MPI_Abort(MPI_COMM_WORLD, code);
  }
  if (locked) mpi_mutex().unlock();
  std::cerr << "dptrain: " << message << std::endl;
  std::exit(code);
}

}  // namespace dptrain::distributed
