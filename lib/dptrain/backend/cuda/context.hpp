#pragma once
// What every CUDA plan shares: the device, the compute stream, the cuDNN and cuBLAS handles bound to
// that stream, the caching allocator, one convolution workspace and the algorithms cuDNN found. Plans hold it by
// shared_ptr, so it lives as long as the last plan or tensor of the backend.
#include <cstddef>
#include <memory>
#include <string>

#include "dptrain/backend/cuda/algorithm_cache.hpp"
#include "dptrain/backend/cuda/caching_allocator.hpp"
#include "dptrain/backend/cuda/check_cuda.hpp"
#include "dptrain/backend/cuda/streams.hpp"
#include "dptrain/core/tensor.hpp"

namespace dptrain::cuda {

class CudaContext {
 public:
  // `activation` is the element type of activations and their gradients (f32, bf16 or f16): what
  // Backend::allocate_activation returns and what every plan accepts for x, y, dx and dy.
  explicit CudaContext(int device, DType activation = DType::f32);
  ~CudaContext();
  CudaContext(const CudaContext&) = delete;
  CudaContext& operator=(const CudaContext&) = delete;

  int device() const { return device_; }
  DType activation_dtype() const { return activation_; }
  // The layout of an activation of `shape` (backend/gpu_layout.hpp: NHWC for 4-D shapes when
  // DPTRAIN_LAYOUT, read when the context is made, says so for this activation type; plain otherwise).
  Layout activation_layout(const Shape& shape) const;
  bool nhwc() const { return nhwc_; }
  bool low_precision() const { return activation_ != DType::f32; }
  cudaStream_t stream() const { return stream_.get(); }
  cudnnHandle_t cudnn() const { return cudnn_; }
  cublasHandle_t cublas() const { return cublas_; }
  CachingAllocator& allocator() { return *allocator_; }
  // The convolution algorithms found so far, by shape: a shape's search runs once per backend.
  AlgorithmCache& algorithm_cache() { return algorithm_cache_; }

  // Device memory from the caching allocator, returned to it when the last view goes.
  Tensor allocate(const Shape& shape, DType dtype, Layout layout = Layout::plain);
  // An activation (or activation gradient) of `shape`: the activation type, in activation_layout().
  Tensor allocate_activation(const Shape& shape) { return allocate(shape, activation_, activation_layout(shape)); }
  // The shared scratch of convolutions, at least `bytes` large. Plans run one after another on one
  // stream, so one workspace serves them all; it grows (in the allocator's stream order) until
  // shrink_workspace gives back what only the searches needed.
  void* workspace(std::size_t bytes);
  std::size_t workspace_size() const { return workspace_bytes_; }
  // The most workspace a convolution's algorithm search may offer (backend/cudnn_workspace.hpp): set
  // at the first call from the memory then free on the device (the driver's free memory plus the
  // allocator's cached blocks, which it reuses), and kept, so every layer is searched under one cap.
  std::size_t workspace_cap();
  // What a search made now may offer: the cap, or less where less is free now (a search after
  // shrink_workspace, for another net's shapes, must not ask for memory the activations took).
  std::size_t search_workspace();
  // Gives back a workspace larger than `bytes` (the searches' cap, once the algorithms are chosen)
  // and the allocator's cached blocks: waits for the device.
  void shrink_workspace(std::size_t bytes);
  // The driver's free memory, the allocator's cached blocks and the workspace held: what this process
  // can still use (Backend::device_memory_free).
  std::size_t available_for_workspace() const;

 private:
  int device_;
  DType activation_;
  bool nhwc_ = false;
  Stream stream_;  // made after cudaSetDevice (see the constructor), destroyed after the handles
  cudnnHandle_t cudnn_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  std::shared_ptr<CachingAllocator> allocator_;
  AlgorithmCache algorithm_cache_;
  Tensor workspace_;
  std::size_t workspace_bytes_ = 0;
  std::size_t workspace_cap_ = 0;
  bool workspace_cap_set_ = false;
};

using CudaContextPtr = std::shared_ptr<CudaContext>;

// Fails with a message naming `who` unless `t` is f32 (or `dtype`), in `layout` (plain unless given),
// on this context's device and of `shape`.
void check_device_tensor(const CudaContext& ctx, const Tensor& t, const Shape& shape, const std::string& who,
                         const char* what, DType dtype = DType::f32, Layout layout = Layout::plain);

// check_device_tensor for an activation (or activation gradient): of the context's activation type and
// layout.
inline void check_activation(const CudaContext& ctx, const Tensor& t, const Shape& shape, const std::string& who,
                             const char* what) {
  check_device_tensor(ctx, t, shape, who, what, ctx.activation_dtype(), ctx.activation_layout(shape));
}

// Typed device pointers, for kernels and library calls (the layout and device are checked above).
inline float* device_floats(Tensor& t) { return static_cast<float*>(t.raw()); }
inline const float* device_floats(const Tensor& t) { return static_cast<const float*>(t.raw()); }

}  // namespace dptrain::cuda
