#include "dptrain/core/host_memory.hpp"

#include <algorithm>
#include <cstdlib>

#include "dptrain/core/error.hpp"

namespace dptrain {

HostMemory pageable_host_memory() {
  HostMemory memory;
  memory.allocate = [](std::size_t bytes) {
    constexpr std::size_t alignment = 64;
    const std::size_t rounded = (std::max<std::size_t>(bytes, 1) + alignment - 1) / alignment * alignment;
    void* buffer = std::aligned_alloc(alignment, rounded);
    DPTRAIN_CHECK(buffer != nullptr, "out of host memory allocating ", bytes, " bytes");
    return buffer;
  };
  memory.release = [](void* buffer) { std::free(buffer); };
  memory.kind = "pageable";
  return memory;
}

}  // namespace dptrain
