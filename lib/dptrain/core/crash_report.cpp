#include "dptrain/core/crash_report.hpp"

#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1  // dladdr, REG_RIP
#endif
#include <dlfcn.h>
#include <elf.h>
#include <execinfo.h>
#include <link.h>  // ElfW
#include <signal.h>
#include <ucontext.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

namespace dptrain {
namespace {
// Everything the handler prints is prepared here: it must not allocate (the heap may be what broke).
char g_host[128] = "?";
char g_prefix[256] = "dptrain: ";
// The main thread's stack overflowing leaves it no stack for the handler (other threads have no
// alternate stack: a stack overflow there dies unreported).
alignas(16) char g_alternate_stack[64 * 1024];

constexpr int kSignals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};

// write(2) of a whole string; a failed write is ignored (nothing else can be done while dying).
void say(const char* text) {
  std::size_t left = std::strlen(text);
  while (left > 0) {
    const ssize_t n = ::write(STDERR_FILENO, text, left);
    if (n <= 0) return;
    text += n;
    left -= static_cast<std::size_t>(n);
  }
}

void say_hex(std::uintptr_t value) {
  char digits[2 + 2 * sizeof value + 1];
  char* p = digits + sizeof digits - 1;
  *p = '\0';
  do {
    *--p = "0123456789abcdef"[value & 0xf];
    value >>= 4;
  } while (value != 0);
  *--p = 'x';
  *--p = '0';
  say(p);
}

void say_int(long value) {
  char digits[24];
  char* p = digits + sizeof digits - 1;
  *p = '\0';
  const bool negative = value < 0;
  unsigned long magnitude = negative ? 0UL - static_cast<unsigned long>(value) : static_cast<unsigned long>(value);
  do {
    *--p = static_cast<char>('0' + magnitude % 10);
    magnitude /= 10;
  } while (magnitude != 0);
  if (negative) *--p = '-';
  say(p);
}

const char* signal_name(int signal_number) {
  switch (signal_number) {
    case SIGSEGV: return "SIGSEGV (segmentation fault)";
    case SIGBUS: return "SIGBUS (bus error)";
    case SIGILL: return "SIGILL (illegal instruction)";
    case SIGFPE: return "SIGFPE (arithmetic exception)";
    case SIGABRT: return "SIGABRT (abort)";
  }
  return "a fatal signal";
}

// "  LABEL 0xADDR in LIB+0xOFFSET (SYMBOL)": LIB and OFFSET are what addr2line needs.
void say_location(const char* label, const void* address) {
  say(label);
  say_hex(reinterpret_cast<std::uintptr_t>(address));
  Dl_info info{};
  if (address != nullptr && ::dladdr(address, &info) != 0 && info.dli_fname != nullptr) {
    say(" in ");
    say(info.dli_fname);
    say("+");
    // addr2line wants the offset in a shared object or a position-independent executable, and the
    // address itself in an executable linked at a fixed address (ELF type ET_EXEC).
    const auto* header = static_cast<const ElfW(Ehdr)*>(info.dli_fbase);
    const bool fixed_address = header != nullptr && header->e_type == ET_EXEC;
    say_hex(reinterpret_cast<std::uintptr_t>(address) -
            (fixed_address ? 0 : reinterpret_cast<std::uintptr_t>(info.dli_fbase)));
    if (info.dli_sname != nullptr) {
      say(" (");
      say(info.dli_sname);
      say(")");
    }
  }
  say("\n");
}

std::uintptr_t program_counter(const void* context) {
  if (context == nullptr) return 0;
  const auto* uc = static_cast<const ucontext_t*>(context);
#if defined(__x86_64__)
  return static_cast<std::uintptr_t>(uc->uc_mcontext.gregs[REG_RIP]);
#elif defined(__aarch64__)
  return static_cast<std::uintptr_t>(uc->uc_mcontext.pc);
#else
  (void)uc;
  return 0;
#endif
}

// Where a call through a null pointer came from (pc is 0): the return address the call left, on the
// stack on x86_64, in the link register on aarch64. Read last: after a `ret` to 0 from a smashed stack
// the stack pointer itself may be bad, and this read would end the handler.
std::uintptr_t null_call_return_address(const void* context) {
  if (context == nullptr) return 0;
  const auto* uc = static_cast<const ucontext_t*>(context);
#if defined(__x86_64__)
  return *reinterpret_cast<const std::uintptr_t*>(uc->uc_mcontext.gregs[REG_RSP]);
#elif defined(__aarch64__)
  return static_cast<std::uintptr_t>(uc->uc_mcontext.regs[30]);
#else
  (void)uc;
  return 0;
#endif
}

extern "C" void on_crash(int signal_number, siginfo_t* info, void* context) {
  // SA_RESETHAND put the default action back: a fault inside this handler, or the raise() at its end,
  // ends the process as the signal would have. dladdr() and backtrace() take the loader's lock; should
  // the crash have left it held, the alarm ends the process instead of a hang.
  ::alarm(10);
  say(g_prefix);
  say("crashed: ");
  say(signal_name(signal_number));
  if (info != nullptr && info->si_code <= 0) {  // kill(), raise(), abort(): no fault address
    say(" sent by process ");
    say_int(info->si_pid);
  } else if (signal_number == SIGSEGV || signal_number == SIGBUS) {
    say(" at address ");
    say_hex(reinterpret_cast<std::uintptr_t>(info != nullptr ? info->si_addr : nullptr));
  }
  say("\n");
  const std::uintptr_t pc = program_counter(context);
  if (pc != 0) say_location("  pc ", reinterpret_cast<const void*>(pc));
  void* frames[48];
  const int count = ::backtrace(frames, 48);
  say("  backtrace (");
  say_int(count);
  say(" frames, the first is this handler):\n");
  for (int i = 0; i < count; ++i) {
    say_location("    ", frames[i]);
  }
  if (pc == 0) {
    say("  pc 0x0: a call through a null function pointer\n");
    // The return address is one instruction past the call.
    if (const std::uintptr_t caller = null_call_return_address(context); caller != 0) {
      say_location("  called from ", reinterpret_cast<const void*>(caller - 1));
    }
  }
  ::raise(signal_number);
}

void warn(const char* call) {
  say("dptrain: warning: ");
  say(call);
  say(" failed (");
  say(std::strerror(errno));
  say("); a crash will not be reported\n");
}

void format_prefix(const char* rank) {
  char* p = g_prefix;
  char* const end = g_prefix + sizeof g_prefix - 1;
  auto append = [&](const char* text) {
    while (*text != '\0' && p < end) *p++ = *text++;
  };
  append("dptrain: ");
  if (rank != nullptr) {
    append("rank ");
    append(rank);
    append(" ");
  }
  append("on ");
  append(g_host);
  append(": ");
  *p = '\0';
}
}  // namespace

void install_crash_reporter() {
  // UCX (Open MPI's InfiniBand transport) would put its own fault handlers over these in MPI_Init.
  if (::setenv("UCX_HANDLE_ERRORS", "none", 0) != 0) warn("setenv(UCX_HANDLE_ERRORS)");
  if (::gethostname(g_host, sizeof g_host - 1) != 0) std::strcpy(g_host, "?");
  const char* rank = nullptr;
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"}) {
    if (const char* value = std::getenv(name); value != nullptr && *value != '\0') {
      rank = value;
      break;
    }
  }
  format_prefix(rank);
  // backtrace() loads libgcc_s on its first call, which allocates: do that now, not while crashing.
  void* warm[4];
  (void)::backtrace(warm, 4);

  stack_t stack{};
  stack.ss_sp = g_alternate_stack;
  stack.ss_size = sizeof g_alternate_stack;
  // Without it, a stack overflow dies unreported.
  if (::sigaltstack(&stack, nullptr) != 0) warn("sigaltstack");

  struct sigaction action {};
  action.sa_sigaction = on_crash;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESETHAND | SA_NODEFER;
  for (int signal_number : kSignals) {
    if (::sigaction(signal_number, &action, nullptr) != 0) warn("sigaction");
  }
}

}  // namespace dptrain
