#pragma once
// Kernels for mixed precision: element type conversion and the loss scaler's unscale-and-check.
// Plain C++ launchers (only the .cu needs nvcc); each queues on `stream` and checks the launch.
#include <cstdint>

#include <cuda_runtime.h>

#include "dptrain/core/dtype.hpp"

namespace dptrain::cuda::kernels {

// dst[i] = src[i] converted (round to nearest even) between f32, bf16 and f16; n elements.
void convert(const void* src, DType src_type, void* dst, DType dst_type, std::int64_t n, cudaStream_t stream);

// x[i] *= factor; sets *nonfinite to 1 if any result is inf or NaN (it is never cleared here).
void scale_and_flag_nonfinite(float* x, std::int64_t n, float factor, int* nonfinite, cudaStream_t stream);

}  // namespace dptrain::cuda::kernels
