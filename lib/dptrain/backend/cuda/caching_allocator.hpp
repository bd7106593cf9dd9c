#pragma once
// A caching device allocator: freed blocks go back to a free list and the next request of a similar
// size reuses them, so a training step does no cudaMalloc (which synchronises the device) once the
// first step has shaped the pool. Blocks are reused in stream order: every op runs on the backend's
// one compute stream, so a block freed after a kernel was queued is only rewritten by work queued
// later. (Memory used on another stream, e.g. NCCL's, must be kept alive by its user until an event
// says that stream is done with it.)
#include <cstddef>
#include <map>
#include <mutex>
#include <unordered_map>

namespace dptrain::cuda {

struct MemoryStats {
  std::size_t in_use = 0;          // bytes handed out now
  std::size_t peak_in_use = 0;     // the most ever handed out at once
  std::size_t reserved = 0;        // bytes held from the driver: in use plus cached
  std::size_t device_mallocs = 0;  // cudaMalloc calls so far: flat from the third step on (the second
                                   // allocates again what release_search_memory gave back)
};

class CachingAllocator {
 public:
  explicit CachingAllocator(int device) : device_(device) {}
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  void* allocate(std::size_t bytes);
  void release(void* pointer) noexcept;
  // Returns every cached (unused) block to the driver.
  void empty_cache();
  MemoryStats stats() const;

 private:
  static std::size_t rounded(std::size_t bytes);
  void free_cached_locked() noexcept;

  int device_;
  mutable std::mutex mutex_;
  std::multimap<std::size_t, void*> free_;         // cached blocks by size
  std::unordered_map<void*, std::size_t> in_use_;  // live blocks and their sizes
  MemoryStats stats_;
};

}  // namespace dptrain::cuda
