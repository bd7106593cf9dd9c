#pragma once
// The preemption flag: the one global of dptrain. Slurm sends SIGTERM (scancel, the time limit, a
// preemption) and, with `--signal=USR1@120`, SIGUSR1 a while before the end. A signal is only
// counted: the training loop polls preemption_requested() between steps, writes a checkpoint and exits
// with code 75 (EX_TEMPFAIL) so the sbatch script requeues. The first signal replaces the default
// action, so a second one (Slurm repeats SIGTERM before SIGKILL) cannot kill the process while the
// checkpoint is being written. The signals are taken by a thread of their own: every other thread
// blocks them, because a handler running on a thread inside oneDNN's JIT gemm corrupts the heap.
#include <csignal>

namespace dptrain::ckpt {

// The exit code of a run stopped by a signal or its time limit after writing its checkpoint:
// EX_TEMPFAIL from sysexits.h, "try again later", which the sbatch scripts turn into a requeue.
inline constexpr int kExitPreempted = 75;

// Blocks SIGUSR1 and SIGTERM in the calling thread, and so in every thread it starts afterwards, and
// starts the one thread that waits for them (sigwait) and counts them. Call it before any other thread
// starts (MPI, OpenMP, the loader): a thread that does not block them could run the handler (also
// installed, SA_RESTART, counting only) in the middle of a oneDNN kernel. A signal sent to one thread
// (raise, pthread_kill) rather than to the process stays pending there. Idempotent.
void install_preemption_handlers();
// Whether a signal arrived since start (or since reset_preemption_for_testing()).
bool preemption_requested();
// How many SIGUSR1/SIGTERM arrived.
int preemption_signal_count();
// The number of the last signal received, 0 when none.
int last_preemption_signal();
// Clears the flag (tests only: a real run stops at the first signal).
void reset_preemption_for_testing();

}  // namespace dptrain::ckpt
