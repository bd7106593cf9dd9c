#pragma once
// The CUDA backend's SGD step over all parameters in one kernel launch. The parameters, their
// gradients and momentum buffers stay where they are from step to step, so the table the kernel reads
// (sgd_kernels.hpp: pointers, sizes and decay per tensor, and each block's tensor and chunk) is built
// and uploaded once and kept; a call with another list (other addresses, sizes or decays) rebuilds it.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "dptrain/backend/backend.hpp"
#include "dptrain/backend/cuda/context.hpp"

namespace dptrain::cuda {

class SgdTable {
 public:
  // Queues the update of every parameter on the context's stream. The tensors must be f32, plain, on
  // the context's device, the three of a parameter of one size (checked every call).
  void update(CudaContext& ctx, std::span<const SgdTensors> parameters, const SgdHyper& hyper);
  // How many times the table was built (a test's view of the cache).
  std::int64_t builds() const { return builds_; }

 private:
  // What the table was built from: a parameter's addresses, size and decay.
  struct Key {
    const void* weight;
    const void* grad;
    const void* velocity;
    std::int64_t size;
    float weight_decay;
    bool operator==(const Key&) const = default;
  };
  void build(CudaContext& ctx);

  std::vector<Key> key_;
  std::vector<std::byte> host_;  // the table as uploaded (the tensor entries, then the block entries)
  Tensor device_;                // its device copy
  std::size_t blocks_offset_ = 0;
  std::int64_t block_count_ = 0;
  std::int64_t builds_ = 0;
};

}  // namespace dptrain::cuda
