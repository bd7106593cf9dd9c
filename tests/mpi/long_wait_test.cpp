// Rank 0's checkpoint work under a stall timeout of 1 s (distributed::run_on_root, what RunCheckpoints
// uses). Modes:
//   survives  rank 0 works 8 s inside a 20 s long wait: the others wait without tripping the watchdog;
//             then rank 0's error reaches every rank, an option error with its exit code. Exit 0 and
//             "long wait: PASS" on rank 0.
//   trips     rank 0 works 30 s inside a 2 s long wait: rank 1 aborts the job naming the long wait and
//             its option (CTest matches the report).
//   ends      after a long wait, a barrier that rank 1 sleeps through trips the plain 1 s stall timeout
//             again, naming rank 1.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>

#include "dptrain/core/error.hpp"
#include "dptrain/distributed/communicator.hpp"
#include "dptrain/distributed/launcher.hpp"
#include "dptrain/distributed/root_work.hpp"

using namespace dptrain::distributed;

namespace {
const char* const kWhy = "waiting for rank 0's checkpoint work";

void sleep_s(int s) { std::this_thread::sleep_for(std::chrono::seconds(s)); }

int fail(const std::string& what) {
  std::fprintf(stderr, "FAIL: %s\n", what.c_str());
  return 1;
}
}  // namespace

int main(int argc, char** argv) {
  MpiSession session;
  const std::string mode = argc > 1 ? argv[1] : "";
  const Topology topology = discover_topology(MPI_COMM_WORLD, 0, 0, nullptr);
  auto comm = make_communicator(topology, {AllreduceKind::flat, 1.0, ""});
  comm->barrier();
  if (mode == "survives") {
    // Longer than the stall timeout and the 5 s the other ranks give rank 0 to report first.
    run_on_root(*comm, {kWhy, "--checkpoint-timeout", 20}, [] { sleep_s(8); });
    try {
      run_on_root(*comm, {kWhy, "--checkpoint-timeout", 20}, [] { throw std::runtime_error("disk full on rank 0"); });
      return fail("rank 0's error did not reach rank " + std::to_string(comm->rank()));
    } catch (const dptrain::OptionError& e) {
      return fail(std::string("a plain error became an option error: ") + e.what());
    } catch (const dptrain::Error& e) {
      if (std::strcmp(e.what(), "disk full on rank 0") != 0) return fail(std::string("wrong error: ") + e.what());
    }
    // A refused option keeps its exit code on every rank (a --checkpoint-dir that cannot be made: 105).
    try {
      run_on_root(*comm, {kWhy, "--checkpoint-timeout", 20},
                  [] { throw dptrain::OptionError(105, "--checkpoint-dir: cannot create it\nsecond line"); });
      return fail("rank 0's option error did not reach rank " + std::to_string(comm->rank()));
    } catch (const dptrain::OptionError& e) {
      if (e.code() != 105 || std::strcmp(e.what(), "--checkpoint-dir: cannot create it\nsecond line") != 0)
        return fail(std::string("wrong option error: ") + std::to_string(e.code()) + " " + e.what());
    }
    comm->barrier();
    if (comm->rank() == 0) std::printf("long wait: PASS\n");
    return 0;
  }
  if (mode == "trips") {
    run_on_root(*comm, {kWhy, "--checkpoint-timeout", 2}, [] { sleep_s(30); });
    return fail("not aborted");
  }
  if (mode == "ends") {
    run_on_root(*comm, {kWhy, "--checkpoint-timeout", 20}, [] {});
    if (comm->rank() == 1) sleep_s(30);
    comm->barrier();
    return fail("not aborted");
  }
  return fail("usage: mpi_long_wait survives|trips|ends");
}
