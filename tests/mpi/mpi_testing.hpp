#pragma once
// The little harness of the MPI tests: each rank records failed expectations, and the job's verdict
// is the sum over the ranks (a test passes only if every rank agrees).
#include <mpi.h>

#include <cstdio>
#include <string>
#include <vector>

#include "dptrain/distributed/mpi_lock.hpp"

namespace dptrain::testing {

class MpiVerdict {
 public:
  void expect(bool condition, const std::string& what) {
    if (condition) return;
    const int rank = rank_or_zero();
    std::fprintf(stderr, "FAILED on rank %d: %s\n", rank, what.c_str());
    ++failures_;
  }
  // Sums the failures over the ranks, prints the verdict on rank 0 and returns the exit code.
  int finish(const char* name) const {
    int all = failures_, rank = 0, size = 1;
    if (mpi_running()) {          // a single rank may run without MPI, as dptrain itself does
      distributed::MpiLock lock;  // a job's heartbeat thread may still call MPI (mpi_lock.hpp)
      MPI_Allreduce(&failures_, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
      MPI_Comm_rank(MPI_COMM_WORLD, &rank);
      MPI_Comm_size(MPI_COMM_WORLD, &size);
    }
    if (rank == 0) std::printf("%s %s: %d rank(s), %d failure(s)\n", all ? "FAIL" : "PASS", name, size, all);
    return all ? 1 : 0;
  }

 private:
  static bool mpi_running() {
    int initialised = 0, finalised = 0;
    MPI_Initialized(&initialised);
    MPI_Finalized(&finalised);
    return initialised && !finalised;
  }
  static int rank_or_zero() {
    int rank = 0;
    distributed::MpiLock lock;
    if (mpi_running()) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    return rank;
  }
  int failures_ = 0;
};

// Values whose sum over the ranks is exact in float whatever the order of the additions: element i
// of rank r is (i % 31) * (r + 1), so the sum over `size` ranks is (i % 31) * size * (size + 1) / 2.
inline std::vector<float> rank_pattern(std::size_t count, int rank) {
  std::vector<float> values(count);
  for (std::size_t i = 0; i < count; ++i) values[i] = static_cast<float>((i % 31) * static_cast<std::size_t>(rank + 1));
  return values;
}
inline bool is_rank_pattern_sum(const std::vector<float>& values, int size) {
  const auto factor = static_cast<std::size_t>(size * (size + 1) / 2);
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (values[i] != static_cast<float>((i % 31) * factor)) return false;
  }
  return true;
}

}  // namespace dptrain::testing
