// The signal flag: SIGUSR1 (or the --preempt-signal) and SIGTERM set it, a second signal is counted and
// does not kill, and no thread but the one waiting for them ever runs in a signal's context.
#include "dptrain/ckpt/preemption.hpp"

#include <pthread.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <string>
#include <thread>

using namespace dptrain;

namespace {
// The signals go to the process (as Slurm and kill(1) send them) and are counted by the waiting
// thread, a moment later: wait up to 10 s for the count to reach `count`.
bool counted(int count) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (ckpt::preemption_signal_count() < count) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

bool blocks_preemption_signals() {
  sigset_t mask;
  sigemptyset(&mask);
  if (pthread_sigmask(SIG_BLOCK, nullptr, &mask) != 0) return false;  // no Catch2 macro: also runs off the main thread
  return sigismember(&mask, SIGUSR1) == 1 && sigismember(&mask, SIGTERM) == 1;
}
}  // namespace

TEST_CASE("SIGUSR1 sets the preemption flag and a second SIGTERM is only counted", "[ckpt]") {
  ckpt::install_preemption_handlers();
  ckpt::install_preemption_handlers();  // idempotent
  ckpt::reset_preemption_for_testing();
  CHECK_FALSE(ckpt::preemption_requested());
  REQUIRE(kill(getpid(), SIGUSR1) == 0);
  REQUIRE(counted(1));
  CHECK(ckpt::preemption_requested());
  CHECK(ckpt::preemption_signal_count() == 1);
  CHECK(ckpt::last_preemption_signal() == SIGUSR1);
  REQUIRE(kill(getpid(), SIGTERM) == 0);  // with the default action this would end the test process
  REQUIRE(counted(2));
  CHECK(ckpt::preemption_signal_count() == 2);
  CHECK(ckpt::last_preemption_signal() == SIGTERM);
  ckpt::reset_preemption_for_testing();
  CHECK_FALSE(ckpt::preemption_requested());
}

// oneDNN's JIT sgemm kernels point rsp into the heap while they run; a handler run on such a thread
// writes its signal frame over heap memory (the intermittent SIGSEGV/"corrupted size vs. prev_size"
// in free() after a SIGUSR1 in tests/e2e/checkpoint_e2e.sh). The calling thread and the threads it
// starts afterwards (OpenMP's, the loader's, MPI's) must therefore block the signals.
TEST_CASE("after install the caller and the threads it starts block SIGUSR1 and SIGTERM", "[ckpt]") {
  ckpt::install_preemption_handlers();
  CHECK(blocks_preemption_signals());
  bool in_thread = false;
  std::thread([&] { in_thread = blocks_preemption_signals(); }).join();
  CHECK(in_thread);
}

TEST_CASE("--preempt-signal takes USR1, USR2, HUP and TERM, with or without SIG", "[ckpt]") {
  CHECK(ckpt::parse_preemption_signal("USR1") == SIGUSR1);
  CHECK(ckpt::parse_preemption_signal("SIGUSR2") == SIGUSR2);
  CHECK(ckpt::parse_preemption_signal("hup") == SIGHUP);
  CHECK(ckpt::parse_preemption_signal("TERM") == SIGTERM);
  CHECK(ckpt::preemption_signal_name(SIGUSR2) == "USR2");
  CHECK(ckpt::preemption_signal_name(SIGHUP) == "HUP");
  // INT is the terminal's and srun's (twice: kill the step); KILL and STOP cannot be caught; numbers
  // differ between architectures.
  for (const char* bad : {"INT", "KILL", "SIGSTOP", "12", "", "USR"}) {
    CHECK_THROWS_WITH(ckpt::parse_preemption_signal(bad),
                      std::string("--preempt-signal '") + bad + "' is not one of USR1, USR2, HUP and TERM");
  }
  CHECK_THROWS_WITH(ckpt::install_preemption_handlers(SIGINT),
                    Catch::Contains("cannot be the preemption signal: use USR1, USR2, HUP or TERM"));
}

// One waiting thread waits for one set of signals for the life of the process: a second run in the
// same process (the tests) with another warning signal would leave it unwaited, so it is refused.
TEST_CASE("a process has one preemption signal", "[ckpt]") {
  ckpt::install_preemption_handlers(SIGUSR1);
  CHECK_THROWS_WITH(ckpt::install_preemption_handlers(SIGUSR2),
                    "the preemption handlers already wait for SIGUSR1; one process has one preemption signal, not "
                    "also SIGUSR2");
  sigset_t mask;
  sigemptyset(&mask);
  REQUIRE(pthread_sigmask(SIG_BLOCK, nullptr, &mask) == 0);
  CHECK(sigismember(&mask, SIGUSR2) == 0);  // the refused call blocked nothing
}

// NCCL 2.12/2.13 took SIGUSR1 for its proxy-state dump (NVIDIA/nccl#704) and hid Slurm's warning; the
// variable set to -1 (no signal) keeps every NCCL version off the signals, and a user's value is kept.
TEST_CASE("the handlers keep NCCL's proxy-state dump off the signals unless the user chose one", "[ckpt]") {
  REQUIRE(::unsetenv("NCCL_PROXY_DUMP_SIGNAL") == 0);
  REQUIRE(::setenv("NCCL_RMA_PROXY_DUMP_SIGNAL", "12", 1) == 0);
  ckpt::install_preemption_handlers();
  const char* dump = std::getenv("NCCL_PROXY_DUMP_SIGNAL");
  REQUIRE(dump != nullptr);
  CHECK(std::string(dump) == "-1");
  const char* rma = std::getenv("NCCL_RMA_PROXY_DUMP_SIGNAL");
  REQUIRE(rma != nullptr);
  CHECK(std::string(rma) == "12");
  REQUIRE(::unsetenv("NCCL_RMA_PROXY_DUMP_SIGNAL") == 0);
}
