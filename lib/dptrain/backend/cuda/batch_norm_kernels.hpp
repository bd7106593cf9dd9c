#pragma once
// Our batch-norm kernels (spatial: statistics per channel over N, H and W) on NCHW or NHWC
// (channels-last) activations of f32, bf16 or f16, behind plain C++ launchers (only
// batch_norm_kernels.cu needs nvcc). Every launcher queues work on `stream` and checks its launches;
// none synchronises.
//
// Statistics, scale, shift and their gradients are f32; activations are loaded as their type,
// widened to float, and stored rounded once. Reductions run in a fixed order: each channel's N*H*W
// values are cut into batch_norm_groups() groups, one block per group and channel (NCHW) or per
// group and tile of channels (NHWC), each block a shared-memory tree; a second kernel combines the
// groups in group order. No atomics: the same inputs give the same bits at every run. The two layouts
// compute every element with the same formulas; their statistics and gradient sums differ only by
// the order of the additions (float rounding).
//
// The mean and variance are a per-thread Chan/Welford combination of (count, mean, M2) triples, so a
// channel whose mean is large against its spread (values in [100, 104]) keeps its variance; a plain
// sum of squares in fp32 would lose it.
//
// `workspace` holds batch_norm_workspace_floats(shape, type) = channels * (2 * groups + 3) floats (the
// groups' partial results and per-channel coefficients), which depends on the layout; a caller
// allocates it once for a shape and may reuse it for every call queued on one stream.
#include <cuda_runtime.h>

#include <cstdint>

#include "dptrain/core/dtype.hpp"

namespace dptrain::cuda::kernels {

// An activation as batch norm sees it: `plane` = H * W. Element (n, c, p), p in [0, plane), lives at
// (n * channels + c) * plane + p (NCHW), or at (n * plane + p) * channels + c when `channels_last`
// (NHWC: a matrix of samples * plane rows of `channels` values).
struct BatchNormShape {
  std::int64_t samples = 0, channels = 0, plane = 0;
  bool channels_last = false;
};

// What the forward pass applies after normalising: nothing, a ReLU, or the sum with a residual z (of
// the activation's type and shape) and then a ReLU: y = relu(bn(x) + z), rounded once.
enum class BatchNormActivation : int { none, relu, add_relu };

// Elements each thread loads at once: 16 bytes of `type` where the innermost dimension (H*W in
// NCHW, C in NHWC) is a multiple of that, else 8 bytes, else 1 element. Depends on the shape and type
// only (never on pointers: a misaligned tensor is read element by element in the same order, so
// alignment does not change a result's bits).
int batch_norm_vector_width(const BatchNormShape& shape, DType type);
// The groups each channel's values are cut into: about 1024 blocks in all (every SM of an H100 or
// H200 busy even with 64 channels), at most 65535 (gridDim.y), none empty, and no group but the last
// under 512 vectors (NCHW) or under 8 rows for each of its block's threads (NHWC).
std::int64_t batch_norm_groups(const BatchNormShape& shape, DType type);
// The floats of `workspace` every launcher below needs for `shape` and `type`.
std::int64_t batch_norm_workspace_floats(const BatchNormShape& shape, DType type);

// Training forward: batch_mean and batch_variance (biased) of x per channel, then
// y = act((x - mean) * scale / sqrt(variance + epsilon) + shift [+ z]). `z` is read only for
// add_relu (and must be given for it). y may be x (or z) itself.
void batch_norm_forward_training(const void* x, const void* z, void* y, DType type, const BatchNormShape& shape,
                                 const float* scale, const float* shift, float epsilon, BatchNormActivation activation,
                                 float* batch_mean, float* batch_variance, float* workspace, cudaStream_t stream);

// Inference forward with given statistics:
// y = act((x - mean) * scale / sqrt(variance + epsilon) + shift [+ z]).
void batch_norm_forward_inference(const void* x, const void* z, void* y, DType type, const BatchNormShape& shape,
                                  const float* scale, const float* shift, const float* mean, const float* variance,
                                  float epsilon, BatchNormActivation activation, float* workspace, cudaStream_t stream);

// Backward from the statistics the forward pass returned. With g = dy (or, when `relu_output` is
// given, the forward's output y of a fused relu/add_relu: g = y > 0 ? dy : 0):
// dshift = sum(g), dscale = sum(g * xhat) with xhat = (x - mean) / sqrt(variance + epsilon), and
// dx = scale / sqrt(variance + epsilon) / m * (m * g - dshift - xhat * dscale), m = N*H*W.
// `masked_dy` (only with `relu_output`; may be null) receives g itself: add_relu's gradient of z.
// dx may be dy itself.
void batch_norm_backward(const void* x, const void* dy, const void* relu_output, void* dx, void* masked_dy, DType type,
                         const BatchNormShape& shape, const float* scale, const float* batch_mean,
                         const float* batch_variance, float epsilon, float* dscale, float* dshift, float* workspace,
                         cudaStream_t stream);

}  // namespace dptrain::cuda::kernels
