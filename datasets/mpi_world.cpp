#include "datasets/mpi_world.hpp"

#include <cstdlib>
#include <string>

#include "dptrain/core/check_mpi.hpp"

namespace dptrain::datasets {
MpiWorld::MpiWorld() {
  // Worker threads decode and write; only this thread calls MPI.
  if (!session_.active()) return;
  DPTRAIN_MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &comm_));
  DPTRAIN_MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
  DPTRAIN_MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
  DPTRAIN_MPI_CHECK(MPI_Comm_size(comm_, &size_));
  active_ = size_ > 1;
  MPI_Comm node = MPI_COMM_NULL;
  DPTRAIN_MPI_CHECK(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node));
  DPTRAIN_MPI_CHECK(MPI_Comm_size(node, &local_size_));
  DPTRAIN_MPI_CHECK(MPI_Comm_free(&node));
}

MpiWorld::~MpiWorld() {
  // Failures while shutting down cannot be reported anywhere useful; the data is already written.
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

void MpiWorld::barrier() const {
  if (active_) DPTRAIN_MPI_CHECK(MPI_Barrier(comm_));
}

void MpiWorld::sum(std::vector<std::uint64_t>& values) const {
  if (!active_) return;
  DPTRAIN_MPI_CHECK(
      MPI_Allreduce(MPI_IN_PLACE, values.data(), static_cast<int>(values.size()), MPI_UINT64_T, MPI_SUM, comm_));
}

void MpiWorld::bitwise_or(std::vector<std::uint32_t>& values) const {
  if (!active_) return;
  DPTRAIN_MPI_CHECK(
      MPI_Allreduce(MPI_IN_PLACE, values.data(), static_cast<int>(values.size()), MPI_UINT32_T, MPI_BOR, comm_));
}

std::vector<std::int64_t> MpiWorld::all_gather(const std::vector<std::int64_t>& mine) const {
  if (!active_) return mine;
  const int count = static_cast<int>(mine.size());
  std::vector<int> counts(static_cast<std::size_t>(size_)), offsets(static_cast<std::size_t>(size_));
  DPTRAIN_MPI_CHECK(MPI_Allgather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, comm_));
  int total = 0;
  for (int r = 0; r < size_; ++r) {
    offsets[static_cast<std::size_t>(r)] = total;
    total += counts[static_cast<std::size_t>(r)];
  }
  std::vector<std::int64_t> all(static_cast<std::size_t>(total));
  DPTRAIN_MPI_CHECK(
      MPI_Allgatherv(mine.data(), count, MPI_INT64_T, all.data(), counts.data(), offsets.data(), MPI_INT64_T, comm_));
  return all;
}

void MpiWorld::abort(int code) const {
  if (active_) MPI_Abort(MPI_COMM_WORLD, code);
  std::exit(code);
}

}  // namespace dptrain::datasets
