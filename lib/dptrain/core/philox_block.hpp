#pragma once
// The Philox4x32-10 block function as one inline function that both the host (core/philox.cpp) and the
// CUDA kernels (backend/cuda) compile, so a dropout mask drawn on the GPU is bit-for-bit the CPU's.
// Plain structs instead of std::array: device code may not call std::array's members without
// nvcc's --expt-relaxed-constexpr.
#include <cstdint>

#if defined(__CUDACC__)
#define DPTRAIN_HOST_DEVICE __host__ __device__
#else
#define DPTRAIN_HOST_DEVICE
#endif

namespace dptrain::philox {

struct Words {
  std::uint32_t w[4];
};

DPTRAIN_HOST_DEVICE inline Words round(const Words& c, std::uint32_t k0, std::uint32_t k1) {
  const std::uint64_t p0 = static_cast<std::uint64_t>(0xD2511F53u) * c.w[0];
  const std::uint64_t p1 = static_cast<std::uint64_t>(0xCD9E8D57u) * c.w[2];
  const auto hi0 = static_cast<std::uint32_t>(p0 >> 32), lo0 = static_cast<std::uint32_t>(p0);
  const auto hi1 = static_cast<std::uint32_t>(p1 >> 32), lo1 = static_cast<std::uint32_t>(p1);
  return {{hi1 ^ c.w[1] ^ k0, lo1, hi0 ^ c.w[3] ^ k1, lo0}};
}

// 10 rounds over a 128-bit counter under a 64-bit key (k0, k1), the key bumped by the Weyl constants.
DPTRAIN_HOST_DEVICE inline Words block(Words counter, std::uint32_t k0, std::uint32_t k1) {
  counter = round(counter, k0, k1);
  for (int i = 1; i < 10; ++i) {
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
    counter = round(counter, k0, k1);
  }
  return counter;
}

// Word `index` of the stream (seed, stream): what CounterRng::bits returns.
DPTRAIN_HOST_DEVICE inline std::uint32_t bits(std::uint64_t seed, std::uint64_t stream, std::uint64_t index) {
  const std::uint64_t counter = index / 4;
  const Words c{{static_cast<std::uint32_t>(counter), static_cast<std::uint32_t>(counter >> 32),
                 static_cast<std::uint32_t>(stream), static_cast<std::uint32_t>(stream >> 32)}};
  return block(c, static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)).w[index % 4];
}

// Uniform in [0, 1) with 24 bits: what CounterRng::uniform returns.
DPTRAIN_HOST_DEVICE inline float uniform(std::uint64_t seed, std::uint64_t stream, std::uint64_t index) {
  return static_cast<float>(bits(seed, stream, index) >> 8) * (1.0f / 16777216.0f);
}

}  // namespace dptrain::philox
