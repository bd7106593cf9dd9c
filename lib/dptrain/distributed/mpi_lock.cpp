#include "dptrain/distributed/mpi_lock.hpp"

namespace dptrain::distributed {

std::recursive_timed_mutex& mpi_mutex() {
  static std::recursive_timed_mutex mutex;
  return mutex;
}

}  // namespace dptrain::distributed
