#include "dptrain/core/error.hpp"

namespace dptrain {

void throw_call_error(const char* library, const char* call, const std::string& detail, const char* file, int line) {
  throw Error(detail::concat(library, " call failed: ", call, ": ", detail, " (at ", file, ":", line, ")"));
}

}  // namespace dptrain
