#pragma once
// Changes of layout on the device: NCHW <-> NHWC for activations (copies to and from the host, the
// layers that need NCHW), KCRS <-> KRSC for filters (the NHWC convolutions' weight copy and its
// gradient), each converting the element type on the way (f32, bf16, f16; rounding to nearest even,
// as convert() does). Plain C++ launchers (only the .cu needs nvcc); each queues on `stream` and checks
// its launch.
#include <cuda_runtime.h>

#include <cstdint>

#include "dptrain/core/dtype.hpp"

namespace dptrain::cuda::kernels {

// For each of `samples` row-major [rows][cols] matrices of `src`, its transpose [cols][rows] in `dst`,
// converted from `src_type` to `dst_type`. NCHW -> NHWC is rows = C, cols = H * W; NHWC -> NCHW is
// rows = H * W, cols = C; a filter KCRS -> KRSC is samples = K, rows = C, cols = R * S. `dst` must not
// overlap `src`.
void transpose_samples(const void* src, DType src_type, void* dst, DType dst_type, std::int64_t samples,
                       std::int64_t rows, std::int64_t cols, cudaStream_t stream);

}  // namespace dptrain::cuda::kernels
