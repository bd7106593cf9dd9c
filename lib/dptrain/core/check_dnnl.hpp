#pragma once
// DPTRAIN_DNNL_CHECK(expr): runs a oneDNN C++ API expression (which throws dnnl::error) or a C API call
// (which returns dnnl_status_t) and turns a failure into dptrain::Error naming the call.
#include <oneapi/dnnl/dnnl.hpp>
#include <type_traits>

#include "dptrain/core/error.hpp"

namespace dptrain::detail {
const char* dnnl_status_name(dnnl_status_t status);

template <typename Fn>
decltype(auto) dnnl_checked(Fn&& fn, const char* call, const char* file, int line) {
  try {
    if constexpr (std::is_same_v<std::invoke_result_t<Fn>, dnnl_status_t>) {
      const dnnl_status_t status = fn();
      if (status != dnnl_success) throw_call_error("oneDNN", call, dnnl_status_name(status), file, line);
      return status;
    } else {
      return fn();
    }
  } catch (const dnnl::error& e) {
    throw_call_error("oneDNN", call, concat(e.what(), " [", dnnl_status_name(e.status), "]"), file, line);
  }
}
}  // namespace dptrain::detail

#define DPTRAIN_DNNL_CHECK(...) \
  ::dptrain::detail::dnnl_checked([&]() -> decltype(auto) { return (__VA_ARGS__); }, #__VA_ARGS__, __FILE__, __LINE__)
