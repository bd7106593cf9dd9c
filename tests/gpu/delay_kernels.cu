#include "dptrain/backend/cuda/launch.cuh"
#include "gpu/delay_kernels.hpp"

namespace dptrain::gpu_testing {
namespace {
// The GPU's global timer in nanoseconds (PTX's %globaltimer: the same clock on every SM).
__device__ std::uint64_t global_nanoseconds() {
  std::uint64_t now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now)::"memory");
  return now;
}

__global__ void spin_kernel(std::uint64_t nanoseconds) {
  const std::uint64_t start = global_nanoseconds();
  while (global_nanoseconds() - start < nanoseconds) {
  }
}

__global__ void add_constant_kernel(float* data, std::int64_t count, float value) {
  DPTRAIN_GRID_STRIDE(i, count) data[i] += value;
}
}  // namespace

void spin(cudaStream_t stream, std::uint64_t nanoseconds) {
  spin_kernel<<<1, 1, 0, stream>>>(nanoseconds);
  DPTRAIN_CHECK_LAUNCH();
}

void add_constant(float* data, std::size_t count, float value, cudaStream_t stream) {
  const auto n = static_cast<std::int64_t>(count);
  add_constant_kernel<<<cuda::kernels::grid_for(n), cuda::kernels::kThreads, 0, stream>>>(data, n, value);
  DPTRAIN_CHECK_LAUNCH();
}

}  // namespace dptrain::gpu_testing
