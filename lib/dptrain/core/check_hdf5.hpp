#pragma once
// DPTRAIN_H5_CHECK(call): HDF5 calls return a negative herr_t or hid_t on failure. The error stack HDF5 keeps
// is folded into the message (its innermost description says what really went wrong).
#include <hdf5.h>

#include "dptrain/core/error.hpp"

namespace dptrain::detail {
[[noreturn]] void throw_hdf5_error(const char* call, const char* file, int line);

template <typename T>
T hdf5_checked(T result, const char* call, const char* file, int line) {
  if (result < 0) throw_hdf5_error(call, file, line);
  return result;
}
}  // namespace dptrain::detail

// Evaluates to the call's result (an id or a status) when it succeeded.
#define DPTRAIN_H5_CHECK(call) ::dptrain::detail::hdf5_checked((call), #call, __FILE__, __LINE__)
