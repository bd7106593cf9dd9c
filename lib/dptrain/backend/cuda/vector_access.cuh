#pragma once
// Vector loads and stores for memory-bound kernels: V consecutive elements moved as one access of V *
// sizeof(T) bytes (16 where the pointers allow), widened to float and rounded back one by one, so a
// vectorised kernel computes every element exactly as its one-element version does (the same bits).
// map_kernel runs an element-wise operation V elements a thread, with the tail one by one.
#include <cstddef>
#include <cstdint>
#include <initializer_list>

#include "dptrain/backend/cuda/element.cuh"
#include "dptrain/backend/cuda/launch.cuh"

namespace dptrain::cuda::kernels {

// V consecutive elements, as one load or store of V * sizeof(T) bytes.
template <typename T, int V>
struct alignas(sizeof(T) * V) Pack {
  T e[V];
};

// Loads V elements at p widened to float: one vector load when kAligned, else V element loads (the
// same values in the same order, for a tensor whose address is not a multiple of the vector size).
template <typename T, int V, bool kAligned = true>
__device__ inline void load(const T* p, float (&out)[V]) {
  if constexpr (kAligned) {
    const Pack<T, V> pack = *reinterpret_cast<const Pack<T, V>*>(p);
#pragma unroll
    for (int e = 0; e < V; ++e) out[e] = to_float(pack.e[e]);
  } else {
#pragma unroll
    for (int e = 0; e < V; ++e) out[e] = to_float(p[e]);
  }
}

template <typename T, int V, bool kAligned = true>
__device__ inline void store(T* p, const float (&in)[V]) {
  if constexpr (kAligned) {
    Pack<T, V> pack;
#pragma unroll
    for (int e = 0; e < V; ++e) pack.e[e] = from_float<T>(in[e]);
    *reinterpret_cast<Pack<T, V>*>(p) = pack;
  } else {
#pragma unroll
    for (int e = 0; e < V; ++e) p[e] = from_float<T>(in[e]);
  }
}

// Whether every pointer given is a multiple of `bytes` (null pointers, unused, count as aligned).
inline bool all_aligned(std::size_t bytes, std::initializer_list<const void*> pointers) {
  for (const void* p : pointers) {
    if (reinterpret_cast<std::uintptr_t>(p) % bytes != 0) return false;
  }
  return true;
}

// op.template apply<V>(at) for the elements [at, at + V): every full vector of [0, n), then the tail
// one element at a time.
template <int V, typename Op>
__global__ void map_kernel(std::int64_t n, Op op) {
  const std::int64_t vectors = n / V;
  DPTRAIN_GRID_STRIDE(v, vectors) op.template apply<V>(v * V);
  if constexpr (V > 1) {
    DPTRAIN_GRID_STRIDE(i, n - vectors * V) op.template apply<1>(vectors * V + i);
  }
}

// Launches map_kernel over n elements: 16-byte vectors of T where every pointer allows them (a view
// into an arena may start anywhere), one element a thread otherwise. Checks the launch.
template <typename T, typename Op>
void launch_map(std::int64_t n, std::initializer_list<const void*> pointers, const Op& op, cudaStream_t stream) {
  if (n <= 0) return;
  constexpr int kWide = sizeof(T) >= 16 ? 1 : static_cast<int>(16 / sizeof(T));
  if (all_aligned(kWide * sizeof(T), pointers)) {
    map_kernel<kWide, Op><<<grid_for(n / kWide + 1), kThreads, 0, stream>>>(n, op);
  } else {
    map_kernel<1, Op><<<grid_for(n), kThreads, 0, stream>>>(n, op);
  }
  DPTRAIN_CHECK_LAUNCH();
}

}  // namespace dptrain::cuda::kernels
