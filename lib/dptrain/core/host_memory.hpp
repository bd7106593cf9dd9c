#pragma once
// Where host buffers that a device reads come from: plain memory, or on a GPU page-locked memory, from
// which a copy runs asynchronously on a copy stream with no staging copy on the host first
// (Backend::batch_memory). The data loader fills its batches in the memory it is given.
#include <cstddef>
#include <functional>
#include <string>

namespace dptrain {

struct HostMemory {
  // `bytes` (at least 64-byte aligned); throws dptrain::Error when there is none.
  std::function<void*(std::size_t bytes)> allocate;
  // Gives back what allocate() returned. Must not throw: it runs when a buffer's last user lets go,
  // possibly during exit.
  std::function<void(void*)> release;
  std::string kind;  // "pageable" or "page-locked", for the start-up lines and tests
};

// Plain host memory (aligned_alloc), 64-byte aligned as oneDNN's vector kernels like.
HostMemory pageable_host_memory();

}  // namespace dptrain
