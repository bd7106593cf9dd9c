#pragma once
// The preemption flag: the one global of dptrain. Slurm sends SIGTERM (scancel, the time limit, a
// preemption) and, with `--signal=USR1@120`, a warning signal a while before the end: SIGUSR1 unless
// `dptrain train --preempt-signal` names another (USR2, HUP, or TERM alone). A signal is only counted:
// the training loop polls preemption_requested() between steps, writes a checkpoint and exits with code
// 75 (EX_TEMPFAIL) so the sbatch script requeues. The first signal replaces the default action, so a
// second one (Slurm repeats SIGTERM before SIGKILL) cannot kill the process while the checkpoint is
// being written. Ctrl-C (SIGINT) asks for the same stop; a second Ctrl-C ends the process at once
// (exit status 130, nothing saved). The signals are taken by a thread of their own: every other
// thread blocks them, because a handler running on a thread inside oneDNN's JIT gemm corrupts the heap.
#include <csignal>
#include <string>

#include "dptrain/core/exit_codes.hpp"

namespace dptrain::ckpt {

// The exit code of a run stopped by a signal or its time limit after writing its checkpoint
// (core/exit_codes.hpp).
inline constexpr int kExitPreempted = exit_code::checkpointed_stop;

// The warning signal named as `--preempt-signal` and Slurm's `--signal` take it: USR1, USR2, HUP or
// TERM, with or without the SIG prefix. Throws dptrain::Error naming the choices otherwise.
int parse_preemption_signal(const std::string& name);
// "USR1", "USR2", "HUP", "TERM" (the name without SIG), or the number for another signal.
std::string preemption_signal_name(int signal_number);

// Blocks `warning_signal`, SIGTERM and SIGINT in the calling thread, and so in every thread it starts
// afterwards, and starts the one thread that waits for them (sigwait) and counts them. Call it before
// any other thread starts (MPI, OpenMP, the loader, NCCL's proxy threads): a thread that does not
// block them could run the handler (also installed, SA_RESTART, counting only) in the middle of a
// oneDNN kernel. A signal sent to one thread (raise, pthread_kill) rather than to the process stays
// pending there. The other warning signals keep their default action.
//
// It also sets NCCL_PROXY_DUMP_SIGNAL (and NCCL_RMA_PROXY_DUMP_SIGNAL) to -1, NCCL's "no signal",
// where the user has not set them: NCCL 2.12 and 2.13 took SIGUSR1 for their proxy-state dump
// (NVIDIA/nccl#704), swallowing Slurm's warning, and a dump signal that NCCL did take would
// get a handler that can run on any thread that does not block it.
//
// Idempotent for the same signal; another warning signal after the first is an Error (the waiting
// thread waits for one set for the life of the process).
void install_preemption_handlers(int warning_signal = SIGUSR1);
// Whether a signal arrived since start (or since reset_preemption_for_testing()).
bool preemption_requested();
// How many warning signals, SIGTERMs and SIGINTs arrived.
int preemption_signal_count();
// The number of the last signal received, 0 when none.
int last_preemption_signal();
// Clears the flag (tests only: a real run stops at the first signal).
void reset_preemption_for_testing();

}  // namespace dptrain::ckpt
