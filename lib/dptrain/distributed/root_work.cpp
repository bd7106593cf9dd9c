#include "dptrain/distributed/root_work.hpp"

#include <exception>
#include <string>

#include "dptrain/core/error.hpp"
#include "dptrain/distributed/broadcast.hpp"

namespace dptrain::distributed {

void run_on_root(Communicator& comm, const RootWait& wait, const std::function<void()>& work) {
  std::string failure;
  if (comm.rank() == 0) {
    try {
      work();
    } catch (const std::exception& e) {
      failure = e.what();
      if (failure.empty()) failure = "unknown error on rank 0";
    }
  }
  {
    // The broadcast is what holds the other ranks until rank 0 is done (a checkpoint complete before
    // anyone exits), so it is the collective that waits long.
    LongWait long_wait(comm, wait.why, wait.option, wait.seconds);
    broadcast_text(failure, comm);
  }
  if (!failure.empty()) throw Error(failure);
}

}  // namespace dptrain::distributed
