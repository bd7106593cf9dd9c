#pragma once
// Host buffers of one size, handed out again once their last user lets go. A batch of 64 ImageNet
// crops is 38 MB: freshly allocated for every batch, glibc maps it anew and the loader's threads
// spend a third of their time in page faults on first touch. Recycled, its pages stay mapped.
// The pool outlives the buffers it gave out (each holds a reference), so a batch may outlive the
// loader that made it. The memory comes from a HostMemory: page-locked on a GPU, so that the input
// stager copies a batch to the device straight from the buffer the loader filled.
#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "dptrain/core/host_memory.hpp"

namespace dptrain::data {

class BufferPool : public std::enable_shared_from_this<BufferPool> {
 public:
  // `keep`: free buffers kept for reuse; more than that are given back to the system. It should cover
  // every buffer out at once in steady state, so that none is allocated or released then (freeing
  // page-locked memory synchronises the device).
  static std::shared_ptr<BufferPool> create(std::size_t bytes, std::size_t keep,
                                            HostMemory memory = pageable_host_memory());
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // Allocates buffers until `count` are free (at most `keep`): up front, on the caller's thread. Page-
  // locked memory is slow to allocate and serialises the GPU's streams while it is, so a loader
  // allocates its buffers at construction, not in its workers during the first steps.
  void reserve(std::size_t count);
  // A 64-byte aligned buffer of the pool's size (contents undefined); it returns to the pool when
  // the last copy of the pointer goes.
  std::shared_ptr<void> take();

 private:
  BufferPool(std::size_t bytes, std::size_t keep, HostMemory memory)
      : bytes_(bytes), keep_(keep), memory_(std::move(memory)) {}
  void give_back(void* buffer);

  std::size_t bytes_, keep_;
  HostMemory memory_;
  std::mutex mutex_;
  std::vector<void*> free_;
};

}  // namespace dptrain::data
