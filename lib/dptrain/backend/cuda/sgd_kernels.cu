// The one-launch SGD step (sgd_kernels.hpp). Every element is computed with the expressions the
// per-parameter kernel used, in the same order (nvcc's default contraction then makes the same FMAs),
// whether a thread moves 4 floats or 1.
#include <limits>

#include "dptrain/backend/cuda/launch.cuh"
#include "dptrain/backend/cuda/sgd_kernels.hpp"
#include "dptrain/backend/cuda/vector_access.cuh"

namespace dptrain::cuda::kernels {
namespace {
// The update of V consecutive elements from `at` of one tensor (the only copy of the formula).
struct SgdElements {
  float* w;
  const float* g;
  float* v;
  float lr, m, wd;
  bool nesterov;
  template <int V>
  __device__ void apply(std::int64_t at) const {
    float weight[V], grad[V], velocity[V];
    load<float, V>(w + at, weight);
    load<float, V>(g + at, grad);
    load<float, V>(v + at, velocity);
#pragma unroll
    for (int e = 0; e < V; ++e) {
      const float decayed = grad[e] + wd * weight[e];
      velocity[e] = m * velocity[e] + decayed;
      weight[e] -= lr * (nesterov ? decayed + m * velocity[e] : velocity[e]);
    }
    store<float, V>(v + at, velocity);
    store<float, V>(w + at, weight);
  }
};

__global__ void __launch_bounds__(kThreads)
    sgd_all_kernel(const SgdTensorEntry* __restrict__ tensors, const SgdBlockEntry* __restrict__ blocks, float lr,
                   float m, bool nesterov) {
  const SgdBlockEntry block = blocks[blockIdx.x];
  const SgdTensorEntry t = tensors[block.tensor];
  const std::int64_t first = static_cast<std::int64_t>(block.chunk) * kSgdChunk;
  const std::int64_t left = t.size - first, count = left < kSgdChunk ? left : kSgdChunk;
  const SgdElements op{t.weight + first, t.grad + first, t.velocity + first, lr, m, t.weight_decay, nesterov};
  // A chunk starts at a multiple of kSgdChunk elements, so it keeps its tensor's 16-byte alignment.
  std::int64_t done = 0;
  if (t.vectorised) {
    const std::int64_t vectors = count / 4;
    for (std::int64_t k = threadIdx.x; k < vectors; k += blockDim.x) op.apply<4>(k * 4);
    done = vectors * 4;
  }
  for (std::int64_t i = done + threadIdx.x; i < count; i += blockDim.x) op.apply<1>(i);
}
}  // namespace

void sgd_update_all(const SgdTensorEntry* tensors, const SgdBlockEntry* blocks, std::int64_t block_count,
                    float learning_rate, float momentum, bool nesterov, cudaStream_t stream) {
  if (block_count == 0) return;
  DPTRAIN_CHECK(block_count <= std::numeric_limits<std::int32_t>::max(), "sgd_update_all: ", block_count,
                " blocks exceed the grid's limit");
  sgd_all_kernel<<<static_cast<unsigned>(block_count), kThreads, 0, stream>>>(tensors, blocks, learning_rate, momentum,
                                                                              nesterov);
  DPTRAIN_CHECK_LAUNCH();
}

}  // namespace dptrain::cuda::kernels
