#pragma once
// The SGD step of every parameter in one kernel launch. The launch reads a table in device memory
// (sgd_table.hpp builds and caches it): one entry per tensor, and one per block naming the tensor
// and the chunk of it that block updates, so a block finds its work with two loads and no search.
#include <cuda_runtime.h>

#include <cstdint>

namespace dptrain::cuda::kernels {

// Elements a block updates: 256 threads, 4 floats each, 4 times. Large enough that ResNet-50's 25.6M
// parameters make about 6,400 blocks (every SM busy), small enough that a bias of 64 wastes one block.
constexpr std::int64_t kSgdChunk = 4096;

// One parameter: f32 weight, gradient and momentum of `size` elements, and its weight decay.
struct SgdTensorEntry {
  float* weight;
  const float* grad;
  float* velocity;
  std::int64_t size;
  float weight_decay;
  std::int32_t vectorised;  // 1 where all three addresses are 16-byte aligned: 4 floats a thread
};

// One block's work: elements [chunk * kSgdChunk, min((chunk + 1) * kSgdChunk, size)) of tensor `tensor`.
struct SgdBlockEntry {
  std::int32_t tensor;
  std::int32_t chunk;
};

// One block per entry of `blocks` (both tables in device memory): per element, with the parameter's
// own decay wd, g' = g + wd w; v = m v + g'; w -= lr (nesterov ? g' + m v : v).
void sgd_update_all(const SgdTensorEntry* tensors, const SgdBlockEntry* blocks, std::int64_t block_count,
                    float learning_rate, float momentum, bool nesterov, cudaStream_t stream);

}  // namespace dptrain::cuda::kernels
