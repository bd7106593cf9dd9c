#pragma once
// One exception type for every failure; the check macros of each library turn a failed call into it,
// naming the call, the file and the line, so a log line from any rank says exactly what failed.
#include <sstream>
#include <stdexcept>
#include <string>

namespace dptrain {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// A command-line option refused after parsing (a rule over several options, a value only the run can
// judge): the command ends with `code` (exit_code::option_value, option_missing) instead of 1.
class OptionError : public Error {
 public:
  OptionError(int code, const std::string& message) : Error(message), code_(code) {}
  int code() const { return code_; }

 private:
  int code_;
};

// Builds "what: detail (at file:line)" and throws it. Out of line to keep call sites small.
[[noreturn]] void throw_call_error(const char* library, const char* call, const std::string& detail, const char* file,
                                   int line);

namespace detail {
template <typename... Parts>
std::string concat(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}
}  // namespace detail

}  // namespace dptrain

// A user-facing or invariant check: throws dptrain::Error with the streamed message parts.
#define DPTRAIN_CHECK(condition, ...)                                                 \
  do {                                                                                \
    if (!(condition)) throw ::dptrain::Error(::dptrain::detail::concat(__VA_ARGS__)); \
  } while (0)
