// The lock of a checkpoint directory across processes: a live holder in another process refuses a
// second run; once that holder is killed (SIGKILL, as at the end of a Slurm time limit) the kernel has
// released its flock and the next run, a requeued job, takes the lock over.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <thread>

#include "ckpt_testing.hpp"
#include "dptrain/ckpt/directory_lock.hpp"

using namespace dptrain;
using namespace dptrain::testing;

TEST_CASE("a lock held by a killed process is taken over by the next run", "[ckpt][lock]") {
  ScratchDirectory dir("ckpt-lock-kill");
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::close(ready[0]);
    try {
      ckpt::DirectoryLock lock(dir.path());
      const char byte = 1;
      if (::write(ready[1], &byte, 1) != 1) _exit(2);
      for (;;) ::pause();  // holds the lock until killed
    } catch (...) {
      _exit(3);
    }
  }
  ::close(ready[1]);
  char byte = 0;
  REQUIRE(::read(ready[0], &byte, 1) == 1);  // the child holds the lock
  ::close(ready[0]);
  const std::string holder = "pid " + std::to_string(child);
  CHECK_THROWS_WITH(ckpt::DirectoryLock(dir.path()),
                    Catch::Contains("is in use by another run") && Catch::Contains(holder));
  REQUIRE(::kill(child, SIGKILL) == 0);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFSIGNALED(status));
  ckpt::DirectoryLock lock(dir.path());
  CHECK_THAT(lock.previous_holder(), Catch::Contains(holder));
}
