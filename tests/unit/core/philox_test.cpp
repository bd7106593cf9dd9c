#include "dptrain/core/philox.hpp"

#include <catch2/catch.hpp>
#include <cmath>
#include <set>

#include "dptrain/core/philox_block.hpp"

using namespace dptrain;

// Known-answer vectors from Random123's tests/kat_vectors (philox4x32, 10 rounds).
TEST_CASE("philox4x32-10 matches the Random123 known answers", "[core][rng]") {
  CHECK(philox4x32_10({0, 0, 0, 0}, {0, 0}) == PhiloxCounter{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8});
  CHECK(philox4x32_10({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}) ==
        PhiloxCounter{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd});
  CHECK(philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}) ==
        PhiloxCounter{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1});
}

TEST_CASE("CounterRng is a pure function of seed, stream and counter", "[core][rng]") {
  const CounterRng a(42, 7), b(42, 7), other_stream(42, 8), other_seed(43, 7);
  for (std::uint64_t i = 0; i < 100; ++i) CHECK(a.bits(i) == b.bits(i));
  int same_stream = 0, same_seed = 0;
  for (std::uint64_t i = 0; i < 100; ++i) {
    same_stream += a.bits(i) == other_stream.bits(i);
    same_seed += a.bits(i) == other_seed.bits(i);
  }
  CHECK(same_stream < 2);
  CHECK(same_seed < 2);
  // Lane i%4 of block i/4.
  CHECK(a.bits(6) == a.block(1)[2]);
}

TEST_CASE("uniform and normal draws have the right moments", "[core][rng]") {
  const CounterRng rng(1234, 0);
  const int n = 200000;
  double sum = 0, sum_sq = 0, nsum = 0, nsum_sq = 0;
  float low = 1, high = 0;
  for (int i = 0; i < n; ++i) {
    const float u = rng.uniform(static_cast<std::uint64_t>(i));
    low = std::min(low, u);
    high = std::max(high, u);
    sum += u;
    sum_sq += static_cast<double>(u) * u;
    const float z = rng.normal(static_cast<std::uint64_t>(i));
    REQUIRE(std::isfinite(z));
    nsum += z;
    nsum_sq += static_cast<double>(z) * z;
  }
  CHECK(low >= 0.f);
  CHECK(high < 1.f);
  CHECK(sum / n == Approx(0.5).margin(0.005));
  CHECK(sum_sq / n - (sum / n) * (sum / n) == Approx(1.0 / 12).margin(0.002));
  CHECK(nsum / n == Approx(0.0).margin(0.01));
  CHECK(nsum_sq / n == Approx(1.0).margin(0.02));
}

TEST_CASE("stream_id separates names and is stable", "[core][rng]") {
  CHECK(stream_id("conv1/weight") == stream_id("conv1/weight"));
  CHECK(stream_id("conv1/weight") != stream_id("conv1/bias"));
  CHECK(stream_id("") == 1469598103934665603ull);  // the FNV-1a offset basis: the hash is pinned
}

TEST_CASE("the inline Philox the GPU kernels compile draws the generator's words", "[core][rng]") {
  for (std::uint64_t seed : {0ull, 7ull, 0x123456789abcdefull}) {
    const CounterRng rng(seed, stream_id("dropout/fc6"));
    for (std::uint64_t index : {0ull, 1ull, 3ull, 4ull, 1000003ull, (1ull << 40) + 5}) {
      CHECK(philox::bits(seed, stream_id("dropout/fc6"), index) == rng.bits(index));
      CHECK(philox::uniform(seed, stream_id("dropout/fc6"), index) == rng.uniform(index));
    }
  }
}
