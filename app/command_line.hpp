#pragma once
// The whole command line of dptrain as a function, so that a test build of the binary can add to it
// what the shipped one must not hold (tests/e2e/throttled_dptrain.cpp makes a straggler on purpose).
#include <vector>

#include "dptrain/net/step_hooks.hpp"

namespace dptrain::app {

struct CommandLineExtensions {
  // Added to the net of every `dptrain train` run (net/step_hooks.hpp), after the run's own hooks;
  // they must outlive the run. The shipped binary adds none.
  std::vector<StepHooks*> train_step_hooks;
};

// Sets up the process (crash reporter, SIGXFSZ, line-buffered stdout), parses the arguments and runs
// the subcommand; the process's exit code.
int run_command_line(int argc, char** argv, const CommandLineExtensions& extensions);

}  // namespace dptrain::app
