#include "dptrain/core/check_dnnl.hpp"

namespace dptrain::detail {

const char* dnnl_status_name(dnnl_status_t status) {
  switch (status) {
    case dnnl_success: return "success";
    case dnnl_out_of_memory: return "out of memory";
    case dnnl_invalid_arguments: return "invalid arguments";
    case dnnl_unimplemented: return "unimplemented (no implementation for these shapes or formats)";
    case dnnl_iterator_ends: return "iterator ends";
    case dnnl_runtime_error: return "runtime error";
    case dnnl_not_required: return "not required";
    default: return "unknown status";
  }
}

}  // namespace dptrain::detail
