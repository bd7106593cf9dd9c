// DPTRAIN_MPI_CHECK under mpiexec: a successful collective passes through, a failed call (on a communicator
// whose error handler returns instead of aborting) becomes a dptrain::Error with MPI's reason.
#include <cstdio>
#include <string>

#include "dptrain/core/check_mpi.hpp"
#include "mpi_testing.hpp"

namespace {
dptrain::testing::MpiVerdict verdict;
void expect(bool condition, const char* what) { verdict.expect(condition, what); }
}  // namespace

int main(int argc, char** argv) {
  DPTRAIN_MPI_CHECK(MPI_Init(&argc, &argv));
  int rank = 0, size = 0;
  DPTRAIN_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  DPTRAIN_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size));
  DPTRAIN_MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));

  int sum = 0;
  const int one = rank + 1;
  DPTRAIN_MPI_CHECK(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
  expect(sum == size * (size + 1) / 2, "allreduce sums 1..size");

  try {
    int value = 0;
    DPTRAIN_MPI_CHECK(MPI_Bcast(&value, 1, MPI_INT, size + 5, MPI_COMM_WORLD));  // no such root
    expect(false, "a broadcast from a missing root throws");
  } catch (const dptrain::Error& e) {
    const std::string what = e.what();
    expect(what.rfind("MPI call failed: MPI_Bcast(&value, 1, MPI_INT, size + 5, MPI_COMM_WORLD): ", 0) == 0,
           "the message starts with the call");
    expect(what.find("mpi_checks_test.cpp:") != std::string::npos, "the message names the file");
    expect(what.find("root") != std::string::npos || what.find("MPI_ERR") != std::string::npos,
           "the message carries MPI's reason");
  }

  const int code = verdict.finish("mpi_checks");
  DPTRAIN_MPI_CHECK(MPI_Finalize());
  return code;
}
