#include "dptrain/ckpt/finite_state.hpp"

#include <cmath>
#include <cstdint>

#include "dptrain/core/error.hpp"

namespace dptrain::ckpt {
namespace {
std::optional<std::string> check(const std::vector<NamedTensor>& tensors, const char* kind) {
  for (const NamedTensor& t : tensors) {
    const std::int64_t count = t.value.numel();
    if (count == 0) continue;
    DPTRAIN_CHECK(t.value.device().is_cpu(), kind, " ", t.name, " must be a host tensor to be checked");
    const float* values = t.value.elements<float>();  // memory order: only which values, not where
    std::int64_t bad = 0, first = -1;
    for (std::int64_t i = 0; i < count; ++i) {
      if (!std::isfinite(values[i])) {
        if (bad++ == 0) first = i;
      }
    }
    if (bad > 0) {
      return detail::concat(kind, " ", t.name, " holds ", bad, bad == 1 ? " value that is" : " values that are",
                            " not finite (the first, ", values[first], ", at index ", first, ")");
    }
  }
  return std::nullopt;
}
}  // namespace

std::optional<std::string> find_non_finite(const TrainingState& state) {
  if (auto bad = check(state.parameters, "parameter")) return bad;
  if (auto bad = check(state.buffers, "buffer")) return bad;
  return check(state.optimizer.momentum, "the momentum buffer of");
}

void require_finite(const TrainingState& state, const std::string& path) {
  const std::optional<std::string> bad = find_non_finite(state);
  DPTRAIN_CHECK(!bad, "checkpoint ", path, ": its ", bad.value_or(""), " (the run had diverged)");
}

}  // namespace dptrain::ckpt
