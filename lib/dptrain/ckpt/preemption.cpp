#include "dptrain/ckpt/preemption.hpp"

#include <pthread.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <thread>

#include "dptrain/core/error.hpp"

namespace dptrain::ckpt {
namespace {
// Lock-free atomics are async-signal-safe (a volatile sig_atomic_t could not count without a race).
std::atomic<int> g_signal_count{0};
std::atomic<int> g_last_signal{0};
static_assert(std::atomic<int>::is_always_lock_free, "the signal flag must be lock-free");

void record(int signal_number) {
  g_last_signal.store(signal_number, std::memory_order_relaxed);
  g_signal_count.fetch_add(1, std::memory_order_relaxed);
}

extern "C" void on_preemption_signal(int signal_number) { record(signal_number); }

void install(int signal_number, const char* name) {
  struct sigaction action {};
  action.sa_handler = on_preemption_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  if (sigaction(signal_number, &action, nullptr) != 0) {
    throw Error(detail::concat("sigaction(", name, ") failed: ", std::strerror(errno)));
  }
}

sigset_t preemption_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGUSR1);
  sigaddset(&set, SIGTERM);
  return set;
}

// Takes the signals off the process's queue for the life of the process. It is the one thread that
// leaves them pending for sigwait; it inherits the blocked mask from the thread that starts it.
void watch_signals() {
  const sigset_t set = preemption_signals();
  for (;;) {
    int signal_number = 0;
    if (sigwait(&set, &signal_number) == 0) record(signal_number);
  }
}

std::once_flag g_watcher_started;
}  // namespace

void install_preemption_handlers() {
  // The handlers stay, for a thread started before this call (which does not block the signals).
  install(SIGUSR1, "SIGUSR1");
  install(SIGTERM, "SIGTERM");
  // No handler may run on a thread that computes: oneDNN's JIT sgemm kernels (the inner products'
  // gemm, on the main thread and OpenMP's) point rsp into a heap buffer while they run, and the
  // kernel writes a signal frame at rsp, over whatever the heap holds there (heap corruption found
  // later in some free(); oneDNN issue #4845, fixed in 3.11). So this thread and every thread it
  // starts from now on block the signals, and one thread of ours that never computes waits for them.
  const sigset_t set = preemption_signals();
  if (const int rc = pthread_sigmask(SIG_BLOCK, &set, nullptr); rc != 0) {
    throw Error(detail::concat("pthread_sigmask(SIG_BLOCK, SIGUSR1 SIGTERM) failed: ", std::strerror(rc)));
  }
  std::call_once(g_watcher_started, [] { std::thread(watch_signals).detach(); });
}

bool preemption_requested() { return g_signal_count.load(std::memory_order_relaxed) > 0; }
int preemption_signal_count() { return g_signal_count.load(std::memory_order_relaxed); }
int last_preemption_signal() { return g_last_signal.load(std::memory_order_relaxed); }

void reset_preemption_for_testing() {
  g_signal_count.store(0);
  g_last_signal.store(0);
}

}  // namespace dptrain::ckpt
