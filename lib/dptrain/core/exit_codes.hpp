#pragma once
// Every exit code dptrain returns, in one table: the code returned, what it means to a person or a
// batch script, and (docs/troubleshooting.md, checked by the test e2e_exit_codes) what the guide says.
// `dptrain info --exit-codes` prints it.
#include <span>
#include <string_view>

namespace dptrain::exit_code {
inline constexpr int finished = 0;
inline constexpr int error = 1;  // any other error, named on one line
// A stop (signal, Ctrl-C, time limit, --stop-at-step) after writing a checkpoint: EX_TEMPFAIL from
// sysexits.h, "try again later", which the sbatch scripts turn into a requeue.
inline constexpr int checkpointed_stop = 75;
inline constexpr int ranks_lost = 76;  // ranks stopped answering; their nodes are named
inline constexpr int slow_node = 77;   // dptrain preflight: a node below --min-fraction of the median
// A stop with nothing saved (no --checkpoint-dir): not 75, so that no wrapper requeues a run that
// would start again from step 0.
inline constexpr int stopped_unsaved = 79;
// Options refused before any work (CLI11's own codes where it has one).
inline constexpr int option_value = 105;     // a value out of range, not a number, not a choice
inline constexpr int option_missing = 106;   // a required option (or one another needs) is missing
inline constexpr int option_conflict = 108;  // options that cannot be given together
inline constexpr int option_unknown = 109;   // an option or argument the command does not know

struct Meaning {
  int code;
  std::string_view meaning;
};

// Every code above, in ascending order, with its meaning (a process killed by signal N ends with
// 128 + N under a shell, which no table of ours can list).
std::span<const Meaning> table();
}  // namespace dptrain::exit_code
