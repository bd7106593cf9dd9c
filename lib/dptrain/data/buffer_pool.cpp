#include "dptrain/data/buffer_pool.hpp"

#include <algorithm>

#include "dptrain/core/error.hpp"

namespace dptrain::data {

std::shared_ptr<BufferPool> BufferPool::create(std::size_t bytes, std::size_t keep, HostMemory memory) {
  DPTRAIN_CHECK(memory.allocate && memory.release, "a buffer pool needs memory to allocate and release");
  return std::shared_ptr<BufferPool>(new BufferPool(bytes, keep, std::move(memory)));
}

BufferPool::~BufferPool() {
  for (void* buffer : free_) memory_.release(buffer);
}

void BufferPool::reserve(std::size_t count) {
  count = std::min(count, keep_);
  for (;;) {
    {
      std::lock_guard lock(mutex_);
      if (free_.size() >= count) return;
    }
    void* buffer = memory_.allocate(bytes_);
    std::lock_guard lock(mutex_);
    free_.push_back(buffer);
  }
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
  if (buffer == nullptr) buffer = memory_.allocate(bytes_);
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
  memory_.release(buffer);
}

}  // namespace dptrain::data
