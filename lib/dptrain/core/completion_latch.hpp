#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>

namespace dptrain {

// A one-shot signal from one thread to a waiting one, re-armed for each use. The GPU collectives
// use it so the thread waiting for a stream sleeps until CUDA's host-function thread says the work
// has finished, instead of querying the stream every few microseconds; the wait has a limit, so the
// caller can still look at the clock (the stall timeout) and at the stream's error state.
class CompletionLatch {
 public:
  // Forgets an earlier signal: the next wait lasts until the next signal().
  void arm();
  // Wakes the waiter. Safe from any thread; cheap enough for a CUDA host function.
  void signal();
  // True once signal() has been called since arm(); otherwise waits up to `limit` for it.
  bool wait_for(std::chrono::microseconds limit);

  // A CUDA host function (cudaHostFn_t) whose argument is a heap-allocated
  // std::shared_ptr<CompletionLatch>: it signals the latch and deletes the pointer, so the latch
  // lives until the host function has run, even if its owner is gone by then.
  static void signal_and_release(void* shared_latch);

 private:
  std::mutex mutex_;
  std::condition_variable signalled_;
  bool done_ = false;
};

}  // namespace dptrain
