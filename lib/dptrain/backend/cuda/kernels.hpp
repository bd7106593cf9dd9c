#pragma once
// Our own CUDA kernels, behind plain C++ launchers so that only the .cu files need nvcc. Every
// launcher queues work on `stream` and checks the launch; none synchronises.
#include <cstdint>

#include <cuda_runtime.h>

namespace dptrain::cuda::kernels {

// elementwise_kernels.cu
void fill(float* y, std::int64_t n, float value, cudaStream_t stream);
void add(const float* a, const float* b, float* y, std::int64_t n, cudaStream_t stream);
void axpby(float alpha, const float* x, float beta, float* y, std::int64_t n, cudaStream_t stream);
void sgd_update(float* weight, const float* grad, float* velocity, std::int64_t n, float learning_rate,
                float momentum, float weight_decay, bool nesterov, cudaStream_t stream);
void relu_forward(const float* x, float* y, std::int64_t n, cudaStream_t stream);
void relu_backward(const float* y, const float* dy, float* dx, std::int64_t n, cudaStream_t stream);
// y[r, c] = bias[c] for every row r of a row-major [rows, cols] matrix.
void broadcast_rows(const float* bias, float* y, std::int64_t rows, std::int64_t cols, cudaStream_t stream);
// mask[n, e] = keep_scale if Philox(seed, stream_id) word ((first_sample + n) * per_sample + e) is kept,
// else 0: the CPU backend's mask, element for element.
void dropout_mask(float* mask, std::int64_t samples, std::int64_t per_sample, std::uint64_t seed,
                  std::uint64_t stream_id, std::int64_t first_sample, float probability, float keep_scale,
                  cudaStream_t stream);
void multiply(const float* a, const float* b, float* y, std::int64_t n, cudaStream_t stream);
// inverse_std[c] = 1 / sqrt(variance[c] + epsilon): what cuDNN's batch-norm backward takes.
void inverse_std(const float* variance, float epsilon, float* inverse_std, std::int64_t n, cudaStream_t stream);

// loss_kernels.cu: softmax with (label-smoothed) cross-entropy, rows of `classes` logits.
// `row_loss` is scratch of `rows` floats; `loss` receives the batch mean.
void softmax_cross_entropy_forward(const float* logits, const std::int32_t* labels, float* probabilities,
                                   float* row_loss, float* loss, std::int64_t rows, std::int64_t classes,
                                   float label_smoothing, cudaStream_t stream);
void softmax_cross_entropy_backward(const float* probabilities, const std::int32_t* labels, float* dlogits,
                                    std::int64_t rows, std::int64_t classes, float label_smoothing, float scale,
                                    cudaStream_t stream);

// pooling_kernels.cu: 2-D pooling over `planes` = N*C planes with explicit padding before (pad_h,
// pad_w) and after (pad_h + extra_h, pad_w + extra_w), the oneDNN semantics of the CPU backend.
enum class PoolKind : int { max, average_include_padding, average_exclude_padding };
struct PoolGeometry {
  std::int64_t planes = 0;
  int height = 0, width = 0, out_height = 0, out_width = 0;
  int kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0;
};
// `argmax` (max pooling only): per output, the index within its plane of the input it came from.
void pool_forward(const float* x, float* y, std::int32_t* argmax, const PoolGeometry& g, PoolKind kind,
                  cudaStream_t stream);
void pool_backward(const float* dy, const std::int32_t* argmax, float* dx, const PoolGeometry& g, PoolKind kind,
                   cudaStream_t stream);

}  // namespace dptrain::cuda::kernels
