#include "dptrain/backend/cudnn_workspace.hpp"

#include <cstdlib>

namespace dptrain {

std::size_t cudnn_workspace_cap_bytes() {
  if (const char* mb = std::getenv("DPTRAIN_CUDNN_WORKSPACE_MB")) return std::strtoull(mb, nullptr, 10) << 20;
  return std::size_t{512} << 20;
}

}  // namespace dptrain
