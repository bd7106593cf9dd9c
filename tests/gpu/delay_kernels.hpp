#pragma once
// Kernels the GPU tests queue on streams of their own: a delay of a known length, and a write that
// reads what it changes (so a missing order between streams shows in its result).
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace dptrain::gpu_testing {

// Keeps `stream` busy for `nanoseconds` of device time (one thread polling the GPU's global timer):
// work queued behind it on `stream` starts no earlier.
void spin(cudaStream_t stream, std::uint64_t nanoseconds);
// data[i] += value for every i < count, on `stream`.
void add_constant(float* data, std::size_t count, float value, cudaStream_t stream);

}  // namespace dptrain::gpu_testing
