#include "dptrain/backend/cudnn_workspace.hpp"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdlib>
#include <optional>
#include <string>

#include "dptrain/core/error.hpp"

namespace dptrain {
namespace {
// 1 TiB: more than any GPU holds, so a larger number is a typo (the unit given twice, say).
constexpr unsigned long long kMaxWorkspaceMb = 1ull << 20;

// DPTRAIN_CUDNN_WORKSPACE_MB in bytes, or nullopt where it is not set.
std::optional<std::size_t> workspace_override() {
  const char* mb = std::getenv("DPTRAIN_CUDNN_WORKSPACE_MB");
  if (mb == nullptr || *mb == '\0') return std::nullopt;
  // A whole number of MiB and nothing else: "1G" or "512MB" would otherwise read as 1 or 512 and
  // quietly starve (or flood) every convolution's algorithm search.
  errno = 0;
  char* end = nullptr;
  const unsigned long long parsed = std::strtoull(mb, &end, 10);
  if (end == mb || *end != '\0' || errno != 0 || *mb == '-' || *mb == '+' || parsed > kMaxWorkspaceMb) {
    throw Error("DPTRAIN_CUDNN_WORKSPACE_MB is \"" + std::string(mb) +
                "\"; give the cuDNN workspace cap as a whole number of MiB from 0 to " +
                std::to_string(kMaxWorkspaceMb) + " (for example 512)");
  }
  return static_cast<std::size_t>(parsed) << 20;
}
}  // namespace

std::size_t cudnn_workspace_cap_bytes(std::size_t free_bytes) {
  if (const auto fixed = workspace_override()) return *fixed;
  const std::size_t floor = std::min(kWorkspaceFloorBytes, free_bytes / 2);
  const std::size_t cap = std::min(kWorkspaceCeilingBytes, std::max(free_bytes / kWorkspaceShareDivisor, floor));
  return cap == 0 ? 0 : std::bit_floor(cap);
}

std::size_t cudnn_workspace_cap_bytes() { return workspace_override().value_or(kWorkspaceFloorBytes); }

}  // namespace dptrain
