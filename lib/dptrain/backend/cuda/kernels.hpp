#pragma once
// Our own CUDA kernels, behind plain C++ launchers so that only the .cu files need nvcc. Every
// launcher queues work on `stream` and checks the launch; none synchronises.
//
// Activations may be f32, bf16 or f16 (`DType type`, void pointers): loads widen to float, the
// arithmetic is fp32 and stores round once. With f32 they compute exactly what the float-only
// kernels always did. Parameters, their gradients, masks and statistics are always f32.
#include <cuda_runtime.h>

#include <cstdint>

#include "dptrain/core/dtype.hpp"

namespace dptrain::cuda::kernels {

// elementwise_kernels.cu
void fill(float* y, std::int64_t n, float value, cudaStream_t stream);
void fill(void* y, DType type, std::int64_t n, float value, cudaStream_t stream);
// y = a + b; with `relu`, y = max(a + b, 0) (NaN -> 0, as relu_forward).
void add(const void* a, const void* b, void* y, DType type, std::int64_t n, bool relu, cudaStream_t stream);
void axpby(float alpha, const float* x, float beta, float* y, std::int64_t n, cudaStream_t stream);
void axpby(float alpha, const void* x, float beta, void* y, DType type, std::int64_t n, cudaStream_t stream);
void relu_forward(const void* x, void* y, DType type, std::int64_t n, cudaStream_t stream);
void relu_backward(const void* y, const void* dy, void* dx, DType type, std::int64_t n, cudaStream_t stream);
// y[r, c] = bias[c] for every row r of a row-major [rows, cols] matrix.
void broadcast_rows(const float* bias, float* y, std::int64_t rows, std::int64_t cols, cudaStream_t stream);
// y[s, c, p] += bias[c] for y of [samples, channels, plane] (a convolution's NCHW output with plane =
// H*W, a linear layer's [N, O] output with plane = 1, or an NHWC output as [N*H*W, C] with plane = 1).
void add_channel_bias(const float* bias, void* y, DType type, std::int64_t samples, std::int64_t channels,
                      std::int64_t plane, cudaStream_t stream);
// sums[c] = sum over s and p of dy[s, c, p], accumulated in fp32 in a fixed order (no atomics: the
// same bits every run): the bias gradient of a convolution or linear layer. The samples are cut into
// channel_sum_splits() groups so that a layer with few channels (GoogLeNet's conv1: 64) still fills
// every SM: with plane > 1 one block per channel and group; with plane = 1 (a linear layer's [N, O]
// gradient, an NHWC one as [N*H*W, C]) one block per 32 channels and group, its threads reading
// consecutive channels of a row. `partials` holds channels * splits floats (the groups' sums, added in
// order by a second kernel) and may be null when splits is 1.
std::int64_t channel_sum_splits(std::int64_t samples, std::int64_t channels, std::int64_t plane);
void channel_sums(const void* dy, DType type, float* sums, float* partials, std::int64_t samples, std::int64_t channels,
                  std::int64_t plane, cudaStream_t stream);
// mask[n, e] = keep_scale if Philox(seed, stream_id) word ((first_sample + n) * per_sample + e) is kept,
// else 0: the CPU backend's mask, element for element.
void dropout_mask(float* mask, std::int64_t samples, std::int64_t per_sample, std::uint64_t seed,
                  std::uint64_t stream_id, std::int64_t first_sample, float probability, float keep_scale,
                  cudaStream_t stream);
// y = a * mask (a and y of `type`, the mask f32).
void multiply(const void* a, const float* mask, void* y, DType type, std::int64_t n, cudaStream_t stream);
// inverse_std[c] = 1 / sqrt(variance[c] + epsilon): what cuDNN's batch-norm backward takes.
void inverse_std(const float* variance, float epsilon, float* inverse_std, std::int64_t n, cudaStream_t stream);

// loss_kernels.cu: softmax with (label-smoothed) cross-entropy, rows of `classes` logits (of
// `logits_type`); probabilities and losses are f32, the logits gradient is of `logits_type`.
// `row_loss` and `row_rank` are scratch of `rows` floats and ints; `loss` receives the mean over the
// first `counted_rows` rows, `correct` (two floats) how many of them have their label in the top 1
// and the top min(5, classes) probabilities (SoftmaxCrossEntropyPlan::forward).
void softmax_cross_entropy_forward(const void* logits, DType logits_type, const std::int32_t* labels,
                                   float* probabilities, float* row_loss, int* row_rank, float* loss, float* correct,
                                   std::int64_t rows, std::int64_t counted_rows, std::int64_t classes,
                                   float label_smoothing, cudaStream_t stream);
void softmax_cross_entropy_backward(const float* probabilities, const std::int32_t* labels, void* dlogits,
                                    DType logits_type, std::int64_t rows, std::int64_t classes, float label_smoothing,
                                    float scale, cudaStream_t stream);

// pooling_kernels.cu: 2-D pooling over `planes` = N*C planes with explicit padding before (pad_h,
// pad_w) and after (pad_h + extra_h, pad_w + extra_w), the oneDNN semantics of the CPU backend.
enum class PoolKind : int { max, average_include_padding, average_exclude_padding };
// `planes` = N * C. With `channels_last` the tensors are NHWC (`channels` = C): element (n, c, h, w) at
// ((n * H + h) * W + w) * C + c; otherwise NCHW, at ((n * C + c) * H + h) * W + w.
struct PoolGeometry {
  std::int64_t planes = 0;
  int height = 0, width = 0, out_height = 0, out_width = 0;
  int kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0;
  int channels = 1;
  bool channels_last = false;
};
// `argmax` (max pooling only): per output (in the output's memory order), the pixel h * W + w of its
// plane the maximum came from.
void pool_forward(const void* x, void* y, DType type, std::int32_t* argmax, const PoolGeometry& g, PoolKind kind,
                  cudaStream_t stream);
void pool_backward(const void* dy, const std::int32_t* argmax, void* dx, DType type, const PoolGeometry& g,
                   PoolKind kind, cudaStream_t stream);

}  // namespace dptrain::cuda::kernels
