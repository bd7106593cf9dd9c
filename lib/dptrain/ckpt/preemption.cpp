#include "dptrain/ckpt/preemption.hpp"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <utility>

#include "dptrain/core/error.hpp"

namespace dptrain::ckpt {
namespace {
// Lock-free atomics are async-signal-safe (a volatile sig_atomic_t could not count without a race).
std::atomic<int> g_signal_count{0};
std::atomic<int> g_last_signal{0};
static_assert(std::atomic<int>::is_always_lock_free, "the signal flag must be lock-free");

// The signals a run may take as its warning, those Slurm's --signal is usually given. Not INT (the
// terminal's, and srun's: twice kills the step), nor KILL and STOP, which cannot be caught.
constexpr std::array<std::pair<int, const char*>, 4> kWarningSignals{
    {{SIGUSR1, "USR1"}, {SIGUSR2, "USR2"}, {SIGHUP, "HUP"}, {SIGTERM, "TERM"}}};

std::atomic<int> g_interrupts{0};

// A second Ctrl-C (SIGINT) ends the process at once, as a terminal user expects when the first one's
// checkpoint takes too long. Only async-signal-safe calls: this may run inside a handler.
void end_at_once_on_second_interrupt(int signal_number) {
  if (signal_number != SIGINT || g_interrupts.fetch_add(1, std::memory_order_relaxed) == 0) return;
  static const char message[] = "dptrain: second interrupt (Ctrl-C): stopping at once, nothing saved\n";
  const ssize_t written = ::write(STDERR_FILENO, message, sizeof message - 1);
  static_cast<void>(written);  // nothing can be done about a lost message here
  ::_exit(128 + SIGINT);
}

void record(int signal_number) {
  end_at_once_on_second_interrupt(signal_number);
  g_last_signal.store(signal_number, std::memory_order_relaxed);
  g_signal_count.fetch_add(1, std::memory_order_relaxed);
}

extern "C" void on_preemption_signal(int signal_number) { record(signal_number); }

void install(int signal_number) {
  struct sigaction action {};
  action.sa_handler = on_preemption_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  if (sigaction(signal_number, &action, nullptr) != 0) {
    throw Error(
        detail::concat("sigaction(SIG", preemption_signal_name(signal_number), ") failed: ", std::strerror(errno)));
  }
}

sigset_t preemption_signals(int warning_signal) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, warning_signal);
  sigaddset(&set, SIGTERM);  // always: Slurm's own last word (scancel, the time limit, preemption)
  sigaddset(&set, SIGINT);   // Ctrl-C: a stop like the others; a second one ends at once
  return set;
}

// Takes the signals off the process's queue for the life of the process. It is the one thread that
// leaves them pending for sigwait; it inherits the blocked mask from the thread that starts it.
void watch_signals(sigset_t set) {
  for (;;) {
    int signal_number = 0;
    if (sigwait(&set, &signal_number) == 0) record(signal_number);
  }
}

// NCCL 2.12 and 2.13 installed a SIGUSR1 handler from their proxy thread (NVIDIA/nccl#704), which took
// Slurm's warning away from us; later versions dump the proxy state on NCCL_PROXY_DUMP_SIGNAL (off, -1,
// by default), newer ones their RMA proxy's on NCCL_RMA_PROXY_DUMP_SIGNAL. -1 keeps them off even
// where a site's NCCL changes the default: a dump signal that NCCL takes gets a handler, which may run
// on any thread that does not block it. A value the user set is kept: NCCL's threads inherit our
// blocked mask, so even a dump signal equal to the warning signal stays pending for our waiting thread
// (and NCCL does not dump). setenv is not thread-safe: this runs before the program starts any thread
// that reads the environment.
void keep_nccl_off_signals() {
  for (const char* name : {"NCCL_PROXY_DUMP_SIGNAL", "NCCL_RMA_PROXY_DUMP_SIGNAL"}) {
    if (::setenv(name, "-1", /*overwrite=*/0) != 0) {
      throw Error(detail::concat("setenv(", name, ") failed: ", std::strerror(errno)));
    }
  }
}

std::mutex g_install_mutex;
int g_installed_signal = 0;  // the warning signal of the first install, under g_install_mutex
}  // namespace

int parse_preemption_signal(const std::string& name) {
  std::string upper;
  for (char c : name) upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  const std::string bare = upper.rfind("SIG", 0) == 0 ? upper.substr(3) : upper;
  for (const auto& [number, known] : kWarningSignals) {
    if (bare == known) return number;
  }
  throw Error(detail::concat("--preempt-signal '", name, "' is not one of USR1, USR2, HUP and TERM"));
}

std::string preemption_signal_name(int signal_number) {
  for (const auto& [number, known] : kWarningSignals) {
    if (number == signal_number) return known;
  }
  return std::to_string(signal_number);
}

void install_preemption_handlers(int warning_signal) {
  DPTRAIN_CHECK(std::any_of(kWarningSignals.begin(), kWarningSignals.end(),
                            [&](const auto& known) { return known.first == warning_signal; }),
                "signal ", warning_signal, " cannot be the preemption signal: use USR1, USR2, HUP or TERM");
  const std::lock_guard<std::mutex> lock(g_install_mutex);
  DPTRAIN_CHECK(g_installed_signal == 0 || g_installed_signal == warning_signal,
                "the preemption handlers already wait for SIG", preemption_signal_name(g_installed_signal),
                "; one process has one preemption signal, not also SIG", preemption_signal_name(warning_signal));
  keep_nccl_off_signals();
  // The handlers stay, for a thread started before this call (which does not block the signals).
  install(warning_signal);
  if (warning_signal != SIGTERM) install(SIGTERM);
  install(SIGINT);
  // No handler may run on a thread that computes: oneDNN's JIT sgemm kernels (the inner products'
  // gemm, on the main thread and OpenMP's) point rsp into a heap buffer while they run, and the
  // kernel writes a signal frame at rsp, over whatever the heap holds there (heap corruption found
  // later in some free(); oneDNN issue #4845, fixed in 3.11). So this thread and every thread it
  // starts from now on block the signals, and one thread of ours that never computes waits for them.
  const sigset_t set = preemption_signals(warning_signal);
  if (const int rc = pthread_sigmask(SIG_BLOCK, &set, nullptr); rc != 0) {
    throw Error(detail::concat("pthread_sigmask(SIG_BLOCK, SIG", preemption_signal_name(warning_signal),
                               " SIGTERM) failed: ", std::strerror(rc)));
  }
  if (g_installed_signal == 0) {
    std::thread(watch_signals, set).detach();
    g_installed_signal = warning_signal;
  }
}

bool preemption_requested() { return g_signal_count.load(std::memory_order_relaxed) > 0; }
int preemption_signal_count() { return g_signal_count.load(std::memory_order_relaxed); }
int last_preemption_signal() { return g_last_signal.load(std::memory_order_relaxed); }

void reset_preemption_for_testing() {
  g_signal_count.store(0);
  g_last_signal.store(0);
  g_interrupts.store(0);
}

}  // namespace dptrain::ckpt
