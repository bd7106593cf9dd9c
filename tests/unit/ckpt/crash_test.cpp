// The atomic write protocol under SIGKILL: a child process writes (and prunes) checkpoints in a loop
// and is killed at random moments; after every kill `--resume auto` must find a complete checkpoint,
// with the exact values written for its step, and no warning. Kills land during HDF5 writes, fsyncs,
// renames and retention alike (the count of stray temporary files found shows it).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <random>
#include <thread>

#include "ckpt_testing.hpp"
#include "dptrain/ckpt/checkpoint_directory.hpp"
#include "dptrain/ckpt/checkpoint_writer.hpp"

using namespace dptrain;
using namespace dptrain::testing;

namespace {
constexpr int kTensors = 4;
constexpr std::int64_t kElements = 256 * 1024;  // 1 MiB each: a write takes long enough to be hit

// Values that depend on the step and are cheap to make (the child must spend its time writing).
ckpt::TrainingState state_at(std::int64_t step) {
  ckpt::TrainingState s = synthetic_state(step, kTensors, 1);
  for (std::size_t t = 0; t < kTensors; ++t) {
    for (auto* list : {&s.parameters, &s.optimizer.momentum}) {
      Tensor v = Tensor::empty(Shape{kElements});
      for (std::int64_t i = 0; i < kElements; ++i) {
        v.data<float>()[i] = static_cast<float>(
            (static_cast<std::uint64_t>(i) * 2654435761u + t * 7919u + static_cast<std::uint64_t>(step)) % 1000003u);
      }
      (*list)[t].value = v;
    }
  }
  return s;
}

[[noreturn]] void write_forever(const std::string& dir, std::int64_t step) {
  try {
    for (;; ++step) {
      ckpt::write_checkpoint(dir, state_at(step));
      ckpt::prune_checkpoints(dir, 2);
    }
  } catch (const std::exception& e) {
    std::cerr << "writer child: " << e.what() << "\n";
  }
  _exit(3);
}

bool has_temporary(const std::string& dir) {
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".tmp") return true;
  }
  return false;
}
}  // namespace

TEST_CASE("a writer killed at random moments always leaves a loadable checkpoint", "[ckpt][crash]") {
  ScratchDirectory dir("ckpt-crash");
  std::mt19937 random(12345);
  std::uniform_int_distribution<int> delay_ms(0, 400);
  std::int64_t next_step = 1;
  int killed_mid_write = 0;
  constexpr int kIterations = 16;
  for (int iteration = 0; iteration < kIterations; ++iteration) {
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) write_forever(dir.path(), next_step);
    // The first kill waits for a first checkpoint; later ones can strike before the child writes any.
    if (iteration == 0) {
      for (int i = 0; i < 3000 && !std::filesystem::exists(dir.file("latest")); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms(random)));
    REQUIRE(kill(child, SIGKILL) == 0);
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    REQUIRE(WIFSIGNALED(status));  // it was writing, not failed
    if (has_temporary(dir.path())) ++killed_mid_write;

    std::vector<std::string> warnings;
    const auto found = ckpt::find_resume_checkpoint(dir.path(), warnings);
    REQUIRE(found);
    CHECK(warnings.empty());
    const std::int64_t step = found->state.progress.global_step;
    CAPTURE(iteration, step);
    CHECK(step >= next_step - 1);  // never older than what the previous round resumed from
    const ckpt::TrainingState expected = state_at(step);
    std::vector<Tensor> got, want;
    for (std::size_t i = 0; i < kTensors; ++i) {
      got.push_back(found->state.parameters.at(i).value);
      got.push_back(found->state.optimizer.momentum.at(i).value);
      want.push_back(expected.parameters[i].value);
      want.push_back(expected.optimizer.momentum[i].value);
    }
    CHECK(identical(got, want));
    next_step = step + 1;
  }
  std::cout << "crash test: " << kIterations << " kills, " << killed_mid_write
            << " left a temporary file (killed mid-write), resumed up to step " << next_step - 1 << "\n";
}
