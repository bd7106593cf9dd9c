// The checkpoint directory's lock: one holder at a time, the refusal naming the holder, a clean
// release and the take-over of a lock file whose holder is gone.
#include "dptrain/ckpt/directory_lock.hpp"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "ckpt_testing.hpp"

using namespace dptrain;
using namespace dptrain::testing;
namespace fs = std::filesystem;

namespace {
std::string text_of(const std::string& path) {
  const std::vector<char> bytes = read_bytes(path);
  return std::string(bytes.begin(), bytes.end());
}
}  // namespace

TEST_CASE("the directory lock has one holder, named in the refusal", "[ckpt][lock]") {
  ScratchDirectory dir("ckpt-lock");
  const std::string pid = "pid " + std::to_string(::getpid());
  ::setenv("SLURM_JOB_ID", "4711", 1);
  {
    ckpt::DirectoryLock first(dir.path());
    CHECK(first.exclusive());
    CHECK(first.previous_holder().empty());
    const std::string holder = text_of(dir.file(ckpt::kLockName));
    CHECK_THAT(holder, Catch::Contains("host ") && Catch::Contains(pid) && Catch::Contains("Slurm job 4711"));
    // flock belongs to an open file description: a second open in this very process is refused too.
    CHECK_THROWS_WITH(ckpt::DirectoryLock(dir.path()),
                      Catch::Contains("the checkpoint directory " + dir.path() + " is in use by another run") &&
                          Catch::Contains(pid) && Catch::Contains("Slurm job 4711") &&
                          Catch::Contains(dir.file(ckpt::kLockName)));
    CHECK(text_of(dir.file(ckpt::kLockName)) == holder);  // the refused one wrote nothing
  }
  ::unsetenv("SLURM_JOB_ID");
  CHECK(text_of(dir.file(ckpt::kLockName)).empty());  // a clean release empties it
  ckpt::DirectoryLock again(dir.path());
  CHECK(again.previous_holder().empty());
  CHECK_THAT(text_of(dir.file(ckpt::kLockName)), Catch::Contains("not under Slurm"));
}

TEST_CASE("a lock file whose holder died is taken over", "[ckpt][lock]") {
  ScratchDirectory dir("ckpt-lock-stale");
  // What a run killed by SIGKILL leaves: its line, and no flock (the kernel released it).
  const std::string dead = "host node07, pid 99999, Slurm job 1234, started 2024-05-01T12:00:00Z";
  write_bytes(dir.file(ckpt::kLockName), std::vector<char>(dead.begin(), dead.end()));
  ckpt::DirectoryLock lock(dir.path());
  CHECK(lock.previous_holder() == dead);
  CHECK_THAT(text_of(dir.file(ckpt::kLockName)), Catch::Contains("pid " + std::to_string(::getpid())));
}

TEST_CASE("a symlink at the lock file's name is refused and not followed", "[ckpt][lock]") {
  ScratchDirectory dir("ckpt-lock-link");
  ScratchDirectory elsewhere("ckpt-lock-target");
  write_bytes(elsewhere.file("victim"), {'v'});
  fs::create_symlink(elsewhere.file("victim"), dir.file(ckpt::kLockName));
  CHECK_THROWS_WITH(ckpt::DirectoryLock(dir.path()),
                    Catch::Contains(dir.file(ckpt::kLockName) + " is a symbolic link"));
  CHECK(read_bytes(elsewhere.file("victim")) == std::vector<char>{'v'});
  CHECK_THROWS_WITH(ckpt::DirectoryLock("/proc"), Catch::Contains("the checkpoint directory /proc is not writable"));
}
