#pragma once
// Kernels for mixed precision: element type conversion (and the input batch's normalisation from
// bytes), and the loss scaler's unscale-and-check.
// Plain C++ launchers (only the .cu needs nvcc); each queues on `stream` and checks the launch.
#include <cuda_runtime.h>

#include <cstdint>

#include "dptrain/core/dtype.hpp"

namespace dptrain::cuda::kernels {

// dst[i] = src[i] converted (round to nearest even) between f32, bf16 and f16; n elements.
void convert(const void* src, DType src_type, void* dst, DType dst_type, std::int64_t n, cudaStream_t stream);

// The most channels normalise_bytes takes (their mean and std travel as kernel arguments).
constexpr int kMaxNormalisedChannels = 16;

// u8 [N, C, H, W] -> dst_type: dst[i] = (float(src[i]) - mean[c]) / stddev[c], c the channel of i,
// then rounded to dst_type as convert() does; n elements, `plane` = H * W, C = `channels` (at most
// kMaxNormalisedChannels). The float arithmetic is dptrain::normalise_planes', bit for bit. With
// `channels_last` dst is written NHWC (element (s, c, p) at (s * plane + p) * channels + c), src still
// being read NCHW.
void normalise_bytes(const std::uint8_t* src, void* dst, DType dst_type, std::int64_t n, std::int64_t plane,
                     int channels, const float* mean, const float* stddev, bool channels_last, cudaStream_t stream);

// x[i] *= factor; sets *nonfinite to 1 if any result is inf or NaN (it is never cleared here).
void scale_and_flag_nonfinite(float* x, std::int64_t n, float factor, int* nonfinite, cudaStream_t stream);

}  // namespace dptrain::cuda::kernels
