#include "datasets/mpi_world.hpp"

#include <cstdlib>
#include <string>

#include "dptrain/core/check_mpi.hpp"

namespace dptrain::datasets {
namespace {
int env_int(const char* name) {
  const char* value = std::getenv(name);
  if (!value || !*value) return 0;
  char* end = nullptr;
  const long parsed = std::strtol(value, &end, 10);
  return (*end == '\0' && parsed > 0 && parsed < (1L << 30)) ? static_cast<int>(parsed) : 0;
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

MpiWorld::MpiWorld() {
  int initialised = 0;
  MPI_CHECK(MPI_Initialized(&initialised));
  if (!initialised) {
    if (launcher_world_size() <= 1) return;
    // Funneled: worker threads decode and write, only this thread calls MPI. A library that offers
    // less (single) still works in practice for that pattern, so `provided` is not enforced.
    int provided = 0;
    MPI_CHECK(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided));
    initialised_here_ = true;
  }
  MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &comm_));
  MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
  MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
  MPI_CHECK(MPI_Comm_size(comm_, &size_));
  active_ = size_ > 1;
  MPI_Comm node = MPI_COMM_NULL;
  MPI_CHECK(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node));
  MPI_CHECK(MPI_Comm_size(node, &local_size_));
  MPI_CHECK(MPI_Comm_free(&node));
}

MpiWorld::~MpiWorld() {
  // Failures while shutting down cannot be reported anywhere useful; the data is already written.
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
  if (initialised_here_) MPI_Finalize();
}

void MpiWorld::barrier() const {
  if (active_) MPI_CHECK(MPI_Barrier(comm_));
}

void MpiWorld::sum(std::vector<std::uint64_t>& values) const {
  if (!active_) return;
  MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, values.data(), static_cast<int>(values.size()), MPI_UINT64_T, MPI_SUM,
                          comm_));
}

void MpiWorld::bitwise_or(std::vector<std::uint32_t>& values) const {
  if (!active_) return;
  MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, values.data(), static_cast<int>(values.size()), MPI_UINT32_T, MPI_BOR,
                          comm_));
}

std::vector<std::int64_t> MpiWorld::all_gather(const std::vector<std::int64_t>& mine) const {
  if (!active_) return mine;
  const int count = static_cast<int>(mine.size());
  std::vector<int> counts(static_cast<std::size_t>(size_)), offsets(static_cast<std::size_t>(size_));
  MPI_CHECK(MPI_Allgather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, comm_));
  int total = 0;
  for (int r = 0; r < size_; ++r) {
    offsets[static_cast<std::size_t>(r)] = total;
    total += counts[static_cast<std::size_t>(r)];
  }
  std::vector<std::int64_t> all(static_cast<std::size_t>(total));
  MPI_CHECK(MPI_Allgatherv(mine.data(), count, MPI_INT64_T, all.data(), counts.data(), offsets.data(), MPI_INT64_T,
                           comm_));
  return all;
}

void MpiWorld::abort(int code) const {
  if (active_) MPI_Abort(MPI_COMM_WORLD, code);
  std::exit(code);
}

}  // namespace dptrain::datasets
