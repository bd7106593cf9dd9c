#include "dptrain/core/crash_report.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "support/temp_dir.hpp"

namespace {
struct Crash {
  std::string stderr_text;
  int signal_number = 0;  // what the child died of (0: it exited)
};

// Runs `body` in a child process whose stderr is captured; returns what it printed and how it ended.
template <typename Body>
Crash in_child(Body body) {
  int pipe_fds[2];
  REQUIRE(::pipe(pipe_fds) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(pipe_fds[0]);
    ::dup2(pipe_fds[1], STDERR_FILENO);
    ::setenv("OMPI_COMM_WORLD_RANK", "93", 1);
    body();
    ::_exit(0);
  }
  ::close(pipe_fds[1]);
  Crash crash;
  char buffer[4096];
  ssize_t n;
  while ((n = ::read(pipe_fds[0], buffer, sizeof buffer)) > 0)
    crash.stderr_text.append(buffer, static_cast<std::size_t>(n));
  ::close(pipe_fds[0]);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  if (WIFSIGNALED(status)) crash.signal_number = WTERMSIG(status);
  return crash;
}

// Not inlined, and the pointer read through a volatile, so the compiler emits a real call to null.
[[gnu::noinline]] void call_through(void (*function)()) {
  void (*volatile target)() = function;
  target();
}
}  // namespace

TEST_CASE("a call through a null function pointer names the rank, the signal and the caller, then dies of it") {
  const Crash crash = in_child([] {
    ::signal(SIGSEGV, SIG_DFL);
    dptrain::install_crash_reporter();
    call_through(nullptr);
  });
  INFO(crash.stderr_text);
  CHECK(crash.signal_number == SIGSEGV);
  CHECK(crash.stderr_text.find("dptrain: rank 93 on ") == 0);
  CHECK(crash.stderr_text.find("crashed: SIGSEGV (segmentation fault) at address 0x0\n") != std::string::npos);
  CHECK(crash.stderr_text.find("a call through a null function pointer") != std::string::npos);
  // The caller is found in this test binary, with an offset addr2line can use.
  const std::size_t called_from = crash.stderr_text.find("called from 0x");
  REQUIRE(called_from != std::string::npos);
  const std::string line =
      crash.stderr_text.substr(called_from, crash.stderr_text.find('\n', called_from) - called_from);
  CHECK(line.find("unit_core+0x") != std::string::npos);
}

TEST_CASE("an abort is reported with its backtrace and still ends the process with SIGABRT") {
  const Crash crash = in_child([] {
    dptrain::install_crash_reporter();
    std::abort();
  });
  INFO(crash.stderr_text);
  CHECK(crash.signal_number == SIGABRT);
  CHECK(crash.stderr_text.find("crashed: SIGABRT (abort)") != std::string::npos);
  CHECK(crash.stderr_text.find("backtrace (") != std::string::npos);
  CHECK(crash.stderr_text.find("libc.so") != std::string::npos);
}

TEST_CASE("without a crash the reporter prints nothing") {
  const Crash crash = in_child([] { dptrain::install_crash_reporter(); });
  CHECK(crash.signal_number == 0);
  CHECK(crash.stderr_text.empty());
}

TEST_CASE("a crash is recorded in the file record_crashes_in names, with the rank, host and signal") {
  const dptrain::testing::TempDir dir("crash_record");
  const std::string record = (dir.path / "failure.crashed").string();
  const Crash crash = in_child([&] {
    ::signal(SIGSEGV, SIG_DFL);
    dptrain::install_crash_reporter();
    dptrain::record_crashes_in(record);
    call_through(nullptr);
  });
  CHECK(crash.signal_number == SIGSEGV);
  char host[128] = {};
  REQUIRE(::gethostname(host, sizeof host - 1) == 0);
  // The rank (93, set in the child) names the file, so the ranks of a job write beside each other.
  CHECK(dptrain::testing::read_text(record + ".93") ==
        "rank=93 host=" + std::string(host) + " signal=SIGSEGV (segmentation fault)\n");
  CHECK_FALSE(std::filesystem::exists(record));

  SECTION("an abort is recorded too, and a process that does not crash records nothing") {
    const Crash aborted = in_child([&] {
      dptrain::install_crash_reporter();
      dptrain::record_crashes_in(record + "-abort");
      std::abort();
    });
    CHECK(aborted.signal_number == SIGABRT);
    CHECK(dptrain::testing::read_text(record + "-abort.93").find(" signal=SIGABRT (abort)\n") != std::string::npos);
    const Crash fine = in_child([&] {
      dptrain::install_crash_reporter();
      dptrain::record_crashes_in(record + "-fine");
    });
    CHECK(fine.signal_number == 0);
    CHECK(fine.stderr_text.empty());
    CHECK_FALSE(std::filesystem::exists(record + "-fine.93"));
  }
  SECTION("an empty path, or one too long to keep, records nothing (the latter says so)") {
    const std::string long_path = (dir.path / std::string(5000, 'x')).string();
    const Crash unrecorded = in_child([&] {
      ::signal(SIGSEGV, SIG_DFL);
      dptrain::install_crash_reporter();
      dptrain::record_crashes_in(record + "-reset");
      dptrain::record_crashes_in("");
      dptrain::record_crashes_in(long_path);
      call_through(nullptr);
    });
    CHECK(unrecorded.signal_number == SIGSEGV);
    CHECK(unrecorded.stderr_text.find("the crash record's path is too long") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(record + "-reset.93"));
  }
}
