// dptrain with a straggler made on purpose, for the tests of the straggler report (e2e_straggler,
// e2e_slurm_predict): DPTRAIN_TEST_THROTTLE=RANK:MS makes rank RANK of a `train` job sleep MS
// milliseconds at the start of every step. Everything else is the shipped command line
// (app/command_line.cpp); the shipped binary has no such hook.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>

#include "command_line.hpp"
#include "dptrain/distributed/launcher.hpp"

namespace {

struct Throttle {
  int rank = -1;
  int milliseconds = 0;
};

// RANK:MS, both whole numbers, MS at most a minute; exits with a clear line otherwise (a typo in a test
// must not pass as "no straggler").
Throttle parse_throttle(const char* text) {
  Throttle t;
  if (text == nullptr || *text == '\0') return t;
  char tail = 0;
  if (std::sscanf(text, "%d:%d%c", &t.rank, &t.milliseconds, &tail) != 2 || t.rank < 0 || t.milliseconds < 0 ||
      t.milliseconds > 60000) {
    std::cerr << "dptrain (throttled test build): error: DPTRAIN_TEST_THROTTLE='" << text
              << "' is not RANK:MILLISECONDS\n";
    std::exit(2);
  }
  return t;
}

// Sleeps on the throttled rank before each step's forward pass, so that its compute time (not its
// wait in the allreduce) grows, as a slow GPU's would. MPI is running by the first step, so the rank
// is known then.
class ThrottleHooks final : public dptrain::StepHooks {
 public:
  explicit ThrottleHooks(Throttle throttle) : throttle_(throttle) {}
  void step_starting() override {
    if (throttle_.milliseconds > 0 && dptrain::distributed::world_rank() == throttle_.rank) {
      std::this_thread::sleep_for(std::chrono::milliseconds(throttle_.milliseconds));
    }
  }

 private:
  Throttle throttle_;
};

}  // namespace

int main(int argc, char** argv) {
  ThrottleHooks throttle(parse_throttle(std::getenv("DPTRAIN_TEST_THROTTLE")));
  dptrain::app::CommandLineExtensions extensions;
  extensions.train_step_hooks.push_back(&throttle);
  return dptrain::app::run_command_line(argc, argv, extensions);
}
