#include "dptrain/core/check_hdf5.hpp"

#include <string>

namespace dptrain::detail {
namespace {
herr_t collect_innermost(unsigned depth, const H5E_error2_t* entry, void* out) {
  // The walk goes from the innermost frame outwards; the first description is the root cause.
  auto* text = static_cast<std::string*>(out);
  if (depth == 0 && entry->desc != nullptr) *text = entry->desc;
  return 0;
}
}  // namespace

void throw_hdf5_error(const char* call, const char* file, int line) {
  std::string detail;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, collect_innermost, &detail);
  H5Eclear2(H5E_DEFAULT);
  if (detail.empty()) detail = "HDF5 reported an error";
  throw_call_error("HDF5", call, detail, file, line);
}

}  // namespace dptrain::detail
