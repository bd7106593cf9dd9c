#include "dptrain/core/check_hdf5.hpp"

#include <string>

namespace dptrain::detail {
namespace {
struct StackCause {
  std::string innermost;  // the description of the frame where the error was first detected
  std::string system;     // the operating system's message (strerror) where a system call failed
};

// Walked upward: from the innermost frame (depth 0, where the error was detected) out to the API call.
herr_t collect_cause(unsigned depth, const H5E_error2_t* entry, void* out) {
  auto* cause = static_cast<StackCause*>(out);
  if (entry->desc == nullptr) return 0;
  if (depth == 0) cause->innermost = entry->desc;
  // HDF5 pushes strerror(errno) as its own frame (minor H5E_SYSERRSTR) under a failed read, write,
  // open or truncate: "No space left on device", "File too large". The innermost one is the cause.
  if (cause->system.empty() && entry->min_num == H5E_SYSERRSTR) cause->system = entry->desc;
  return 0;
}
}  // namespace

void throw_hdf5_error(const char* call, const char* file, int line) {
  StackCause cause;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, collect_cause, &cause);
  H5Eclear2(H5E_DEFAULT);
  std::string detail = !cause.system.empty() ? cause.system : cause.innermost;
  if (detail.empty()) detail = "HDF5 reported an error";
  throw_call_error("HDF5", call, detail, file, line);
}

}  // namespace dptrain::detail
