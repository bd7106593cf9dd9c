#include "dptrain/data/buffer_pool.hpp"

#include <cstdlib>

#include "dptrain/core/error.hpp"

namespace dptrain::data {

std::shared_ptr<BufferPool> BufferPool::create(std::size_t bytes, std::size_t keep) {
  return std::shared_ptr<BufferPool>(new BufferPool(bytes, keep));
}

BufferPool::~BufferPool() {
  for (void* buffer : free_) std::free(buffer);
}

std::shared_ptr<void> BufferPool::take() {
  void* buffer = nullptr;
  {
    std::lock_guard lock(mutex_);
    if (!free_.empty()) {
      buffer = free_.back();
      free_.pop_back();
    }
  }
  if (buffer == nullptr) {
    constexpr std::size_t alignment = 64;
    const std::size_t rounded = (std::max<std::size_t>(bytes_, 1) + alignment - 1) / alignment * alignment;
    buffer = std::aligned_alloc(alignment, rounded);
    DPTRAIN_CHECK(buffer != nullptr, "out of host memory allocating a batch buffer of ", bytes_, " bytes");
  }
  return std::shared_ptr<void>(buffer, [pool = shared_from_this()](void* b) { pool->give_back(b); });
}

void BufferPool::give_back(void* buffer) {
  {
    std::lock_guard lock(mutex_);
    if (free_.size() < keep_) {
      free_.push_back(buffer);
      return;
    }
  }
  std::free(buffer);
}

}  // namespace dptrain::data
