#pragma once
// Launch helpers shared by our .cu files: a grid for a grid-stride loop over n elements, and the
// launch check.
#include <algorithm>
#include <cstdint>

#include "dptrain/backend/cuda/check_cuda.hpp"

namespace dptrain::cuda::kernels {

constexpr int kThreads = 256;

// Enough blocks to cover n (capped: the kernels loop with a grid stride past the cap).
inline unsigned grid_for(std::int64_t n) {
  const std::int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(std::clamp<std::int64_t>(blocks, 1, 65535));
}

#define DPTRAIN_GRID_STRIDE(i, n)                                                                  \
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += static_cast<std::int64_t>(blockDim.x) * gridDim.x)

#define DPTRAIN_CHECK_LAUNCH() DPTRAIN_CUDA_CHECK(cudaGetLastError())

}  // namespace dptrain::cuda::kernels
