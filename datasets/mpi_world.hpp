#pragma once
// The little MPI the converter needs. `dptrain data convert` usually runs as one process on a login
// or compute node, where initialising MPI is at best slow and at worst fails (no PMIx server), so
// MPI is initialised only when a launcher (mpiexec, srun) started several ranks. With one rank every
// collective below is a local no-op.
#include <mpi.h>

#include <cstdint>
#include <vector>

#include "dptrain/distributed/launcher.hpp"

namespace dptrain::datasets {

using distributed::launcher_world_size;

class MpiWorld {
 public:
  // Initialises MPI (distributed::MpiSession) when launcher_world_size() > 1 and MPI is not initialised yet.
  MpiWorld();
  ~MpiWorld();  // finalises MPI if this object initialised it
  MpiWorld(const MpiWorld&) = delete;
  MpiWorld& operator=(const MpiWorld&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  // Ranks on this node (for the default thread count).
  int local_size() const { return local_size_; }

  void barrier() const;
  // Element-wise sum over ranks, result on every rank.
  void sum(std::vector<std::uint64_t>& values) const;
  // Element-wise bitwise OR over ranks (each rank fills the entries it owns, zeros elsewhere).
  void bitwise_or(std::vector<std::uint32_t>& values) const;
  // Every rank's values, concatenated in rank order, on every rank.
  std::vector<std::int64_t> all_gather(const std::vector<std::int64_t>& mine) const;
  // Ends every rank of the job: a failing rank must not leave the others waiting in a collective.
  [[noreturn]] void abort(int code) const;

 private:
  distributed::MpiSession session_;
  bool active_ = false;  // more than one rank: collectives go through MPI
  int rank_ = 0, size_ = 1, local_size_ = 1;
  MPI_Comm comm_ = MPI_COMM_NULL;  // a duplicate of MPI_COMM_WORLD with MPI_ERRORS_RETURN
};

}  // namespace dptrain::datasets
