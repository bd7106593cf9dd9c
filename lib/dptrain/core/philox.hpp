#pragma once
// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11): a counter-based
// generator. Each draw is a pure function of (key, counter), so a sample's augmentation or a dropout
// mask depends only on (seed, stream, index) and never on the rank, the world size or the order in
// which threads ran. That is what makes N ranks compute the same step as one and resumes exact.
#include <array>
#include <cstdint>

namespace dptrain {

using PhiloxCounter = std::array<std::uint32_t, 4>;
using PhiloxKey = std::array<std::uint32_t, 2>;

// The raw block function: 10 rounds over a 128-bit counter under a 64-bit key.
PhiloxCounter philox4x32_10(PhiloxCounter counter, PhiloxKey key);

// The generator keyed by (seed, stream): `stream` separates independent uses (a layer, an epoch, the
// augmentation of one sample), `counter` indexes the draws inside a stream.
class CounterRng {
 public:
  CounterRng(std::uint64_t seed, std::uint64_t stream) : seed_(seed), stream_(stream) {}

  // Four independent 32-bit words for one counter value.
  PhiloxCounter block(std::uint64_t counter) const;
  // The i-th 32-bit word of the stream (block i/4, lane i%4).
  std::uint32_t bits(std::uint64_t index) const;
  // Uniform in [0, 1) with 24 bits of precision, from the i-th word.
  float uniform(std::uint64_t index) const;
  // Standard normal from words 2i and 2i+1 (Box-Muller).
  float normal(std::uint64_t index) const;

 private:
  std::uint64_t seed_;
  std::uint64_t stream_;
};

// A stable 64-bit hash of a name (FNV-1a), to turn a layer or parameter name into a stream id.
std::uint64_t stream_id(const char* name);

}  // namespace dptrain
