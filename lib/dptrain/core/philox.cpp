#include "dptrain/core/philox.hpp"

#include <cmath>
#include <numbers>

#include "dptrain/core/philox_block.hpp"

namespace dptrain {

PhiloxCounter philox4x32_10(PhiloxCounter counter, PhiloxKey key) {
  const philox::Words out = philox::block({{counter[0], counter[1], counter[2], counter[3]}}, key[0], key[1]);
  return {out.w[0], out.w[1], out.w[2], out.w[3]};
}

PhiloxCounter CounterRng::block(std::uint64_t counter) const {
  const PhiloxCounter c = {static_cast<std::uint32_t>(counter), static_cast<std::uint32_t>(counter >> 32),
                           static_cast<std::uint32_t>(stream_), static_cast<std::uint32_t>(stream_ >> 32)};
  const PhiloxKey k = {static_cast<std::uint32_t>(seed_), static_cast<std::uint32_t>(seed_ >> 32)};
  return philox4x32_10(c, k);
}

std::uint32_t CounterRng::bits(std::uint64_t index) const { return block(index / 4)[index % 4]; }

float CounterRng::uniform(std::uint64_t index) const {
  return static_cast<float>(bits(index) >> 8) * (1.0f / 16777216.0f);
}

float CounterRng::normal(std::uint64_t index) const {
  const PhiloxCounter words = block(index / 2);
  const std::uint32_t a = words[(index % 2) * 2];
  const std::uint32_t b = words[(index % 2) * 2 + 1];
  // u1 in (0, 1] so the logarithm is finite.
  const double u1 = (static_cast<double>(a) + 1.0) / 4294967296.0;
  const double u2 = static_cast<double>(b) / 4294967296.0;
  return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2));
}

std::uint64_t stream_id(const char* name) {
  std::uint64_t hash = 1469598103934665603ull;
  for (const char* p = name; *p; ++p) {
    hash ^= static_cast<unsigned char>(*p);
    hash *= 1099511628211ull;
  }
  return hash;
}

}  // namespace dptrain
