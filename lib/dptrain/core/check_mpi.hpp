#pragma once
// DPTRAIN_MPI_CHECK(call): MPI's default handler aborts on error; dptrain sets MPI_ERRORS_RETURN on its
// communicators so a failed call becomes a dptrain::Error with MPI's own error string.
#include <mpi.h>

#include "dptrain/core/error.hpp"

namespace dptrain::detail {
[[noreturn]] void throw_mpi_error(int code, const char* call, const char* file, int line);
}

#define DPTRAIN_MPI_CHECK(call)                                                       \
  do {                                                                                \
    const int dptrain_mpi_rc_ = (call);                                               \
    if (dptrain_mpi_rc_ != MPI_SUCCESS)                                               \
      ::dptrain::detail::throw_mpi_error(dptrain_mpi_rc_, #call, __FILE__, __LINE__); \
  } while (0)
