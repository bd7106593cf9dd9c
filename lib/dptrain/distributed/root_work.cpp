#include "dptrain/distributed/root_work.hpp"

#include <cstdlib>
#include <exception>
#include <string>

#include "dptrain/core/error.hpp"
#include "dptrain/distributed/broadcast.hpp"

namespace dptrain::distributed {

void run_on_root(Communicator& comm, const RootWait& wait, const std::function<void()>& work) {
  // Rank 0's failure, as "<exit code>\n<message>": a refused option (OptionError) keeps its code on
  // every rank, so the job ends with the code the docs give for it, not 1.
  std::string failure;
  if (comm.rank() == 0) {
    try {
      work();
    } catch (const OptionError& e) {
      failure = std::to_string(e.code()) + "\n" + e.what();
    } catch (const std::exception& e) {
      const std::string message = *e.what() ? e.what() : "unknown error on rank 0";
      failure = "0\n" + message;
    }
  }
  {
    // The broadcast is what holds the other ranks until rank 0 is done (a checkpoint complete before
    // anyone exits), so it is the collective that waits long.
    LongWait long_wait(comm, wait.why, wait.option, wait.seconds);
    broadcast_text(failure, comm);
  }
  if (failure.empty()) return;
  const std::size_t newline = failure.find('\n');
  const int code = newline == std::string::npos ? 0 : std::atoi(failure.substr(0, newline).c_str());
  const std::string message = newline == std::string::npos ? failure : failure.substr(newline + 1);
  if (code != 0) throw OptionError(code, message);
  throw Error(message);
}

}  // namespace dptrain::distributed
