#include "dptrain/core/completion_latch.hpp"

#include <atomic>
#include <catch2/catch.hpp>
#include <memory>
#include <thread>

using namespace dptrain;
using namespace std::chrono_literals;

TEST_CASE("a completion latch wakes its waiter once signalled, and is re-armed for the next use") {
  CompletionLatch latch;
  latch.arm();
  CHECK_FALSE(latch.wait_for(1ms));  // nothing signalled: the wait ends at its limit, false
  latch.signal();
  CHECK(latch.wait_for(0us));  // a signal before the wait is not lost
  CHECK(latch.wait_for(1ms));  // and stays until re-armed
  latch.arm();
  CHECK_FALSE(latch.wait_for(0us));
}

TEST_CASE("a completion latch signalled from another thread ends a long wait early") {
  CompletionLatch latch;
  latch.arm();
  std::atomic<bool> woke{false};
  std::thread waiter([&] { woke = latch.wait_for(std::chrono::microseconds(60s)); });
  std::this_thread::sleep_for(5ms);
  latch.signal();
  waiter.join();  // would take a minute if the signal were missed
  CHECK(woke);
}

TEST_CASE("the host-function form signals a shared latch and releases its own reference") {
  auto latch = std::make_shared<CompletionLatch>();
  latch->arm();
  std::thread cuda_like([arg = static_cast<void*>(new std::shared_ptr<CompletionLatch>(latch))] {
    CompletionLatch::signal_and_release(arg);
  });
  cuda_like.join();
  CHECK(latch->wait_for(0us));
  CHECK(latch.use_count() == 1);  // the host function's copy is gone
}
