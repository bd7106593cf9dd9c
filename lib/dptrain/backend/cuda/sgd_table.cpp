#include "dptrain/backend/cuda/sgd_table.hpp"

#include <cstring>
#include <limits>
#include <string>

#include "dptrain/backend/cuda/sgd_kernels.hpp"

namespace dptrain::cuda {
namespace {
void check_parameter_tensor(const CudaContext& ctx, const Tensor& t, const Tensor& weight, const char* what) {
  DPTRAIN_CHECK(t.device() == Device::cuda(ctx.device()), "sgd_update_all: a ", what, " in ", t.device().to_string(),
                " memory was given to the backend of cuda:", ctx.device());
  DPTRAIN_CHECK(t.layout() == Layout::plain, "sgd_update_all: the CUDA backend keeps tensors in the plain layout");
  DPTRAIN_CHECK(t.dtype() == DType::f32, "sgd_update_all: needs f32 tensors, not ", name_of(t.dtype()), " (", what,
                ")");
  DPTRAIN_CHECK(t.numel() == weight.numel(), "sgd_update_all: a weight of shape ", weight.shape().to_string(),
                " has a ", what, " of shape ", t.shape().to_string());
}

bool aligned_16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }
}  // namespace

void SgdTable::update(CudaContext& ctx, std::span<const SgdTensors> parameters, const SgdHyper& hyper) {
  // The key is rebuilt every call (a few hundred entries: far less than one launch costs) so that any
  // change of address, size or decay is seen.
  bool same = key_.size() == parameters.size();
  if (!same) key_.clear();
  for (std::size_t i = 0; i < parameters.size(); ++i) {
    const SgdTensors& p = parameters[i];
    DPTRAIN_CHECK(p.weight != nullptr && p.grad != nullptr && p.velocity != nullptr, "sgd_update_all: parameter ", i,
                  " lacks a tensor");
    check_parameter_tensor(ctx, *p.weight, *p.weight, "weight");
    check_parameter_tensor(ctx, *p.grad, *p.weight, "gradient");
    check_parameter_tensor(ctx, *p.velocity, *p.weight, "momentum buffer");
    const Key key{p.weight->raw(), p.grad->raw(), p.velocity->raw(), p.weight->numel(), p.weight_decay};
    if (same && key_[i] == key) continue;
    if (same) key_.resize(i);  // keep the entries that still match, replace the rest
    same = false;
    key_.push_back(key);
  }
  if (!same) {
    try {
      build(ctx);
    } catch (...) {
      key_.clear();  // the table is not what the key says: the next call builds it again
      throw;
    }
  }
  if (block_count_ == 0) return;
  kernels::sgd_update_all(
      static_cast<const kernels::SgdTensorEntry*>(device_.raw()),
      reinterpret_cast<const kernels::SgdBlockEntry*>(static_cast<const std::byte*>(device_.raw()) + blocks_offset_),
      block_count_, hyper.learning_rate, hyper.momentum, hyper.nesterov, ctx.stream());
}

void SgdTable::build(CudaContext& ctx) {
  std::vector<kernels::SgdTensorEntry> tensors;
  std::vector<kernels::SgdBlockEntry> blocks;
  for (const Key& k : key_) {
    const auto index = static_cast<std::int32_t>(tensors.size());
    DPTRAIN_CHECK(tensors.size() < static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()),
                  "sgd_update_all: too many parameters");
    const bool vectorised = aligned_16(k.weight) && aligned_16(k.grad) && aligned_16(k.velocity);
    tensors.push_back({static_cast<float*>(const_cast<void*>(k.weight)), static_cast<const float*>(k.grad),
                       static_cast<float*>(const_cast<void*>(k.velocity)), k.size, k.weight_decay, vectorised ? 1 : 0});
    const std::int64_t chunks = (k.size + kernels::kSgdChunk - 1) / kernels::kSgdChunk;
    DPTRAIN_CHECK(chunks <= std::numeric_limits<std::int32_t>::max(), "sgd_update_all: a parameter of ", k.size,
                  " elements is too large");
    for (std::int64_t c = 0; c < chunks; ++c) blocks.push_back({index, static_cast<std::int32_t>(c)});
  }
  // One buffer, one upload: the tensor entries (8-byte aligned), then the block entries.
  const std::size_t tensor_bytes = tensors.size() * sizeof(kernels::SgdTensorEntry);
  const std::size_t bytes = tensor_bytes + blocks.size() * sizeof(kernels::SgdBlockEntry);
  host_.resize(bytes);
  if (tensor_bytes) std::memcpy(host_.data(), tensors.data(), tensor_bytes);
  if (!blocks.empty()) std::memcpy(host_.data() + tensor_bytes, blocks.data(), bytes - tensor_bytes);
  blocks_offset_ = tensor_bytes;
  block_count_ = static_cast<std::int64_t>(blocks.size());
  ++builds_;
  if (bytes == 0) return;
  // A smaller table fits in the old buffer. A replaced buffer goes back to the caching allocator, which
  // reuses it in stream order, after the launches queued on it; the copy below is queued on the same
  // stream, after any launch still reading the old table.
  if (!device_.defined() || device_.bytes() < bytes) {
    device_ = ctx.allocate(Shape{static_cast<std::int64_t>(bytes)}, DType::u8);
  }
  // From pageable memory the call returns once the bytes are staged, so host_ may change afterwards.
  DPTRAIN_CUDA_CHECK(cudaMemcpyAsync(device_.raw(), host_.data(), bytes, cudaMemcpyHostToDevice, ctx.stream()));
}

}  // namespace dptrain::cuda
