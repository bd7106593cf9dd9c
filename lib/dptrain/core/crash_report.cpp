#include "dptrain/core/crash_report.hpp"

#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1  // dladdr, REG_RIP
#endif
#include <dlfcn.h>
#include <elf.h>
#include <execinfo.h>
#include <fcntl.h>
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
const char* g_rank = nullptr;  // the launcher's rank (its environment outlives the handler's use)
// record_crashes_in(): the file the handler writes, and its line up to the signal's name.
char g_record_path[4096] = "";
char g_record_line[256] = "";
// The main thread's stack overflowing leaves it no stack for the handler (other threads have no
// alternate stack: a stack overflow there dies unreported).
alignas(16) char g_alternate_stack[64 * 1024];

constexpr int kSignals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};

// write(2) of a whole string; a failed write is ignored (nothing else can be done while dying).
void write_all(int fd, const char* text) {
  std::size_t left = std::strlen(text);
  while (left > 0) {
    const ssize_t n = ::write(fd, text, left);
    if (n <= 0) return;
    text += n;
    left -= static_cast<std::size_t>(n);
  }
}

void say(const char* text) { write_all(STDERR_FILENO, text); }

// Copies `text` into `buffer` after `used` characters, cutting it short at the end; returns the length.
std::size_t append_to(char* buffer, std::size_t size, std::size_t used, const char* text) {
  while (*text != '\0' && used + 1 < size) buffer[used++] = *text++;
  buffer[used] = '\0';
  return used;
}

// The record of record_crashes_in(), written before the backtrace (which may hang on the loader's lock).
void write_crash_record(const char* signal) {
  if (g_record_path[0] == '\0') return;
  const int fd = ::open(g_record_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return;
  write_all(fd, g_record_line);
  write_all(fd, signal);
  write_all(fd, "\n");
  ::close(fd);
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
  write_crash_record(signal_name(signal_number));
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
  std::size_t used = append_to(g_prefix, sizeof g_prefix, 0, "dptrain: ");
  if (rank != nullptr) {
    used = append_to(g_prefix, sizeof g_prefix, used, "rank ");
    used = append_to(g_prefix, sizeof g_prefix, used, rank);
    used = append_to(g_prefix, sizeof g_prefix, used, " ");
  }
  used = append_to(g_prefix, sizeof g_prefix, used, "on ");
  used = append_to(g_prefix, sizeof g_prefix, used, g_host);
  append_to(g_prefix, sizeof g_prefix, used, ": ");
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
  g_rank = rank;
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

void record_crashes_in(const std::string& path) {
  g_record_path[0] = '\0';
  if (path.empty()) return;
  const std::string file = g_rank != nullptr ? path + "." + g_rank : path;
  if (file.size() >= sizeof g_record_path) {
    say("dptrain: warning: the crash record's path is too long; a crash will not be recorded\n");
    return;
  }
  std::size_t used = append_to(g_record_line, sizeof g_record_line, 0, "rank=");
  used = append_to(g_record_line, sizeof g_record_line, used, g_rank != nullptr ? g_rank : "0");
  used = append_to(g_record_line, sizeof g_record_line, used, " host=");
  used = append_to(g_record_line, sizeof g_record_line, used, g_host);
  append_to(g_record_line, sizeof g_record_line, used, " signal=");
  // The path goes last: the handler reads it, and a crash before this point finds it empty.
  std::memcpy(g_record_path, file.c_str(), file.size() + 1);
}

}  // namespace dptrain
