#include "dptrain/backend/cuda/caching_allocator.hpp"

#include <algorithm>

#include "dptrain/backend/cuda/check_cuda.hpp"

namespace dptrain::cuda {
namespace {
constexpr std::size_t kSmall = 1 << 20;       // below: round to 512 bytes
constexpr std::size_t kLargeRound = 2 << 20;  // above: round to 2 MiB, so similar sizes share blocks

// Restores the calling thread's current device on scope exit: the allocator may be called from a
// thread bound to another GPU (a loader thread, a test).
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    DPTRAIN_CUDA_CHECK(cudaGetDevice(&previous_));
    if (previous_ != device) DPTRAIN_CUDA_CHECK(cudaSetDevice(device));
  }
  ~DeviceGuard() { cudaSetDevice(previous_); }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
};
}  // namespace

std::size_t CachingAllocator::rounded(std::size_t bytes) {
  if (bytes == 0) bytes = 1;
  const std::size_t unit = bytes < kSmall ? 512 : kLargeRound;
  return (bytes + unit - 1) / unit * unit;
}

CachingAllocator::~CachingAllocator() {
  std::lock_guard lock(mutex_);
  free_cached_locked();
  // Live blocks are owned by tensors that outlive us only through a bug; their memory goes with the context.
}

void* CachingAllocator::allocate(std::size_t bytes) {
  const std::size_t size = rounded(bytes);
  std::lock_guard lock(mutex_);
  // The smallest cached block that fits, unless it would waste more than half of itself.
  auto it = free_.lower_bound(size);
  if (it != free_.end() && it->first <= 2 * size) {
    void* pointer = it->second;
    const std::size_t block = it->first;
    free_.erase(it);
    in_use_.emplace(pointer, block);
    stats_.in_use += block;
    stats_.peak_in_use = std::max(stats_.peak_in_use, stats_.in_use);
    return pointer;
  }
  DeviceGuard guard(device_);
  void* pointer = nullptr;
  cudaError_t status = cudaMalloc(&pointer, size);
  if (status == cudaErrorMemoryAllocation) {
    // Out of memory: give the cache back to the driver and try once more.
    cudaGetLastError();
    DPTRAIN_CUDA_CHECK(cudaDeviceSynchronize());
    free_cached_locked();
    status = cudaMalloc(&pointer, size);
  }
  DPTRAIN_CUDA_CHECK(status);
  ++stats_.device_mallocs;
  stats_.reserved += size;
  in_use_.emplace(pointer, size);
  stats_.in_use += size;
  stats_.peak_in_use = std::max(stats_.peak_in_use, stats_.in_use);
  return pointer;
}

void CachingAllocator::release(void* pointer) noexcept {
  if (pointer == nullptr) return;
  std::lock_guard lock(mutex_);
  const auto it = in_use_.find(pointer);
  if (it == in_use_.end()) return;  // not ours: nothing sensible to do in a deleter
  stats_.in_use -= it->second;
  free_.emplace(it->second, pointer);
  in_use_.erase(it);
}

void CachingAllocator::empty_cache() {
  std::lock_guard lock(mutex_);
  DeviceGuard guard(device_);
  DPTRAIN_CUDA_CHECK(cudaDeviceSynchronize());
  free_cached_locked();
}

void CachingAllocator::free_cached_locked() noexcept {
  for (const auto& [size, pointer] : free_) {
    cudaFree(pointer);
    stats_.reserved -= size;
  }
  free_.clear();
}

MemoryStats CachingAllocator::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

}  // namespace dptrain::cuda
