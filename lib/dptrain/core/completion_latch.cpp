#include "dptrain/core/completion_latch.hpp"

namespace dptrain {

void CompletionLatch::arm() {
  std::lock_guard lock(mutex_);
  done_ = false;
}

void CompletionLatch::signal() {
  {
    std::lock_guard lock(mutex_);
    done_ = true;
  }
  signalled_.notify_all();
}

bool CompletionLatch::wait_for(std::chrono::microseconds limit) {
  std::unique_lock lock(mutex_);
  return signalled_.wait_for(lock, limit, [this] { return done_; });
}

void CompletionLatch::signal_and_release(void* shared_latch) {
  const std::unique_ptr<std::shared_ptr<CompletionLatch>> latch(
      static_cast<std::shared_ptr<CompletionLatch>*>(shared_latch));
  (*latch)->signal();
}

}  // namespace dptrain
