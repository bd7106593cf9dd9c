#pragma once
// Work that rank 0 alone does while the other ranks wait: the checkpoint directory's file I/O (one
// reader and one writer instead of thousands of ranks on one file). The wait is a long wait
// (Communicator::begin_long_wait): writing a checkpoint to a busy parallel file system, or reading
// and validating several damaged ones at resume, can take far longer than the stall timeout, and
// must not make the watchdog on the waiting ranks abort the job.
#include <functional>

#include "dptrain/distributed/communicator.hpp"

namespace dptrain::distributed {

struct RootWait {
  const char* why;     // what the others wait for, in a stall report ("waiting for rank 0's checkpoint work")
  const char* option;  // the option that sets `seconds` ("--checkpoint-timeout")
  double seconds;
};

// Collective. Rank 0 runs `work`; then every rank returns, or every rank throws an Error with rank
// 0's message (so no rank waits in a later collective for a rank 0 that gave up).
void run_on_root(Communicator& comm, const RootWait& wait, const std::function<void()>& work);

}  // namespace dptrain::distributed
