#include "dptrain/backend/cuda/context.hpp"

#include <algorithm>

#include "dptrain/backend/cudnn_workspace.hpp"
#include "dptrain/backend/gpu_layout.hpp"
#include "dptrain/core/error.hpp"

namespace dptrain::cuda {

namespace {
// The device must be current before the stream (a member) is made.
int made_current(int device) {
  DPTRAIN_CUDA_CHECK(cudaSetDevice(device));
  return device;
}
}  // namespace

CudaContext::CudaContext(int device, DType activation)
    : device_(made_current(device)), activation_(activation), nhwc_(uses_nhwc(gpu_layout_policy(), activation)) {
  DPTRAIN_CHECK(activation == DType::f32 || activation == DType::bf16 || activation == DType::f16,
                "CUDA backend: activations must be f32, bf16 or f16, not ", name_of(activation));
  allocator_ = std::make_shared<CachingAllocator>(device);
  try {
    DPTRAIN_CUDNN_CHECK(cudnnCreate(&cudnn_));
    DPTRAIN_CUDNN_CHECK(cudnnSetStream(cudnn_, stream()));
    DPTRAIN_CUBLAS_CHECK(cublasCreate(&cublas_));
    DPTRAIN_CUBLAS_CHECK(cublasSetStream(cublas_, stream()));
    // Scalars (alpha, beta) come from host memory; fp32 stays fp32 (no TF32), so results match the CPU's.
    DPTRAIN_CUBLAS_CHECK(cublasSetPointerMode(cublas_, CUBLAS_POINTER_MODE_HOST));
    DPTRAIN_CUBLAS_CHECK(cublasSetMathMode(cublas_, CUBLAS_DEFAULT_MATH));
  } catch (...) {
    if (cublas_) cublasDestroy(cublas_);
    if (cudnn_) cudnnDestroy(cudnn_);
    throw;
  }
}

CudaContext::~CudaContext() {
  cudaStreamSynchronize(stream());
  workspace_ = Tensor();
  cublasDestroy(cublas_);
  cudnnDestroy(cudnn_);
}

Layout CudaContext::activation_layout(const Shape& shape) const { return gpu_activation_layout(nhwc_, shape); }

Tensor CudaContext::allocate(const Shape& shape, DType dtype, Layout layout) {
  const std::size_t bytes = static_cast<std::size_t>(shape.numel()) * size_of(dtype);
  std::shared_ptr<CachingAllocator> allocator = allocator_;
  void* pointer = allocator->allocate(bytes);
  std::shared_ptr<void> owner(pointer, [allocator](void* p) { allocator->release(p); });
  return Tensor::adopt(std::move(owner), shape, dtype, Device::cuda(device_), layout);
}

void* CudaContext::workspace(std::size_t bytes) {
  if (bytes > workspace_bytes_) {
    workspace_ = Tensor();  // back to the cache first, so the larger block may reuse its memory
    workspace_bytes_ = 0;   // and none held should the allocation throw
    workspace_ = allocate(Shape{static_cast<std::int64_t>(bytes)}, DType::u8);
    workspace_bytes_ = bytes;
  }
  return workspace_bytes_ ? workspace_.raw() : nullptr;
}

std::size_t CudaContext::available_for_workspace() const {
  std::size_t free = 0, total = 0;
  DPTRAIN_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  const MemoryStats held = allocator_->stats();
  const std::size_t cached = held.reserved > held.in_use ? held.reserved - held.in_use : 0;
  return free + cached + workspace_bytes_;
}

std::size_t CudaContext::workspace_cap() {
  if (!workspace_cap_set_) {
    workspace_cap_ = cudnn_workspace_cap_bytes(available_for_workspace());
    workspace_cap_set_ = true;
  }
  return workspace_cap_;
}

std::size_t CudaContext::search_workspace() {
  const std::size_t cap = workspace_cap();
  if (workspace_bytes_ >= cap) return cap;  // held already
  return std::min(cap, available_for_workspace() / 2);
}

void CudaContext::shrink_workspace(std::size_t bytes) {
  if (workspace_bytes_ <= bytes) return;
  workspace_ = Tensor();
  workspace_bytes_ = 0;
  allocator_->empty_cache();  // synchronises the device first: the old block is no longer read
  (void)workspace(bytes);
}

void check_device_tensor(const CudaContext& ctx, const Tensor& t, const Shape& shape, const std::string& who,
                         const char* what, DType dtype, Layout layout) {
  check_shape(t, shape, who, what);
  DPTRAIN_CHECK(t.device() == Device::cuda(ctx.device()), who, ": the ", what, " is in ", t.device().to_string(),
                " memory but the backend runs on cuda:", ctx.device());
  DPTRAIN_CHECK(t.dtype() == dtype, who, ": the ", what, " is ", name_of(t.dtype()), " but ", name_of(dtype),
                " is needed");
  DPTRAIN_CHECK(t.layout() == layout, who, ": the ", what, " is in the ", layout_name(t.layout()), " layout but the ",
                layout_name(layout), " layout is needed");
}

}  // namespace dptrain::cuda
