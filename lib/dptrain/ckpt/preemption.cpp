#include "dptrain/ckpt/preemption.hpp"

#include <atomic>
#include <cerrno>
#include <cstring>

#include "dptrain/core/error.hpp"

namespace dptrain::ckpt {
namespace {
// Lock-free atomics are async-signal-safe (a volatile sig_atomic_t could not count without a race).
std::atomic<int> g_signal_count{0};
std::atomic<int> g_last_signal{0};
static_assert(std::atomic<int>::is_always_lock_free, "the signal flag must be lock-free");

extern "C" void on_preemption_signal(int signal_number) {
  g_last_signal.store(signal_number, std::memory_order_relaxed);
  g_signal_count.fetch_add(1, std::memory_order_relaxed);
}

void install(int signal_number, const char* name) {
  struct sigaction action {};
  action.sa_handler = on_preemption_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  if (sigaction(signal_number, &action, nullptr) != 0) {
    throw Error(detail::concat("sigaction(", name, ") failed: ", std::strerror(errno)));
  }
}
}  // namespace

void install_preemption_handlers() {
  install(SIGUSR1, "SIGUSR1");
  install(SIGTERM, "SIGTERM");
}

bool preemption_requested() { return g_signal_count.load(std::memory_order_relaxed) > 0; }
int preemption_signal_count() { return g_signal_count.load(std::memory_order_relaxed); }
int last_preemption_signal() { return g_last_signal.load(std::memory_order_relaxed); }

void reset_preemption_for_testing() {
  g_signal_count.store(0);
  g_last_signal.store(0);
}

}  // namespace dptrain::ckpt
