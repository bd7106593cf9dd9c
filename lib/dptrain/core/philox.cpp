#include "dptrain/core/philox.hpp"

#include <cmath>
#include <numbers>

namespace dptrain {
namespace {
constexpr std::uint32_t kMul0 = 0xD2511F53u;
constexpr std::uint32_t kMul1 = 0xCD9E8D57u;
constexpr std::uint32_t kWeyl0 = 0x9E3779B9u;
constexpr std::uint32_t kWeyl1 = 0xBB67AE85u;

inline void mulhilo(std::uint32_t a, std::uint32_t b, std::uint32_t& hi, std::uint32_t& lo) {
  const std::uint64_t product = static_cast<std::uint64_t>(a) * b;
  hi = static_cast<std::uint32_t>(product >> 32);
  lo = static_cast<std::uint32_t>(product);
}

inline PhiloxCounter round(const PhiloxCounter& c, const PhiloxKey& k) {
  std::uint32_t hi0, lo0, hi1, lo1;
  mulhilo(kMul0, c[0], hi0, lo0);
  mulhilo(kMul1, c[2], hi1, lo1);
  return {hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0};
}
}  // namespace

PhiloxCounter philox4x32_10(PhiloxCounter counter, PhiloxKey key) {
  counter = round(counter, key);
  for (int i = 1; i < 10; ++i) {
    key[0] += kWeyl0;
    key[1] += kWeyl1;
    counter = round(counter, key);
  }
  return counter;
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
