#pragma once
// The message of the dptrain::Error that a call throws, for tests that check what a user is told.
#include <string>

#include "dptrain/core/error.hpp"

namespace dptrain::testing {

// Runs `f` and returns the message of the dptrain::Error it throws ("" when it throws nothing).
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace dptrain::testing
