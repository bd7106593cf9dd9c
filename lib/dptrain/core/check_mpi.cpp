#include "dptrain/core/check_mpi.hpp"

#include <string>

namespace dptrain::detail {

void throw_mpi_error(int code, const char* call, const char* file, int line) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  std::string detail;
  if (MPI_Error_string(code, text, &length) == MPI_SUCCESS) {
    detail.assign(text, static_cast<std::size_t>(length));
  } else {
    detail = "MPI error code " + std::to_string(code);
  }
  throw_call_error("MPI", call, detail, file, line);
}

}  // namespace dptrain::detail
