// Element-wise kernels: memory-bound one-liners, each a grid-stride loop.
#include "dptrain/backend/cuda/kernels.hpp"
#include "dptrain/backend/cuda/launch.cuh"
#include "dptrain/core/philox_block.hpp"

namespace dptrain::cuda::kernels {
namespace {
__global__ void fill_kernel(float* y, std::int64_t n, float value) {
  DPTRAIN_GRID_STRIDE(i, n) y[i] = value;
}
__global__ void add_kernel(const float* a, const float* b, float* y, std::int64_t n) {
  DPTRAIN_GRID_STRIDE(i, n) y[i] = a[i] + b[i];
}
__global__ void axpby_kernel(float alpha, const float* x, float beta, float* y, std::int64_t n) {
  // beta == 0 overwrites: y may hold garbage (NaN) that 0 * y would keep.
  DPTRAIN_GRID_STRIDE(i, n) y[i] = beta == 0.f ? alpha * x[i] : alpha * x[i] + beta * y[i];
}
// The CPU backend's formula: g' = g + wd w; v = m v + g'; w -= lr (nesterov ? g' + m v : v).
__global__ void sgd_kernel(float* w, const float* g, float* v, std::int64_t n, float lr, float m, float wd,
                           bool nesterov) {
  DPTRAIN_GRID_STRIDE(i, n) {
    const float decayed = g[i] + wd * w[i];
    const float velocity = m * v[i] + decayed;
    v[i] = velocity;
    w[i] -= lr * (nesterov ? decayed + m * velocity : velocity);
  }
}
__global__ void relu_forward_kernel(const float* x, float* y, std::int64_t n) {
  DPTRAIN_GRID_STRIDE(i, n) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
__global__ void relu_backward_kernel(const float* y, const float* dy, float* dx, std::int64_t n) {
  DPTRAIN_GRID_STRIDE(i, n) dx[i] = y[i] > 0.f ? dy[i] : 0.f;
}
__global__ void broadcast_rows_kernel(const float* bias, float* y, std::int64_t rows, std::int64_t cols) {
  DPTRAIN_GRID_STRIDE(i, rows * cols) y[i] = bias[i % cols];
}
__global__ void dropout_mask_kernel(float* mask, std::int64_t n, std::uint64_t seed, std::uint64_t stream_id,
                                    std::uint64_t first_word, float probability, float keep_scale) {
  DPTRAIN_GRID_STRIDE(i, n) {
    const float u = philox::uniform(seed, stream_id, first_word + static_cast<std::uint64_t>(i));
    mask[i] = u >= probability ? keep_scale : 0.f;
  }
}
__global__ void multiply_kernel(const float* a, const float* b, float* y, std::int64_t n) {
  DPTRAIN_GRID_STRIDE(i, n) y[i] = a[i] * b[i];
}
__global__ void inverse_std_kernel(const float* variance, float epsilon, float* inverse_std, std::int64_t n) {
  DPTRAIN_GRID_STRIDE(i, n) inverse_std[i] = rsqrtf(variance[i] + epsilon);
}
}  // namespace

void fill(float* y, std::int64_t n, float value, cudaStream_t stream) {
  if (n == 0) return;
  fill_kernel<<<grid_for(n), kThreads, 0, stream>>>(y, n, value);
  DPTRAIN_CHECK_LAUNCH();
}

void add(const float* a, const float* b, float* y, std::int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  add_kernel<<<grid_for(n), kThreads, 0, stream>>>(a, b, y, n);
  DPTRAIN_CHECK_LAUNCH();
}

void axpby(float alpha, const float* x, float beta, float* y, std::int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  axpby_kernel<<<grid_for(n), kThreads, 0, stream>>>(alpha, x, beta, y, n);
  DPTRAIN_CHECK_LAUNCH();
}

void sgd_update(float* weight, const float* grad, float* velocity, std::int64_t n, float learning_rate,
                float momentum, float weight_decay, bool nesterov, cudaStream_t stream) {
  if (n == 0) return;
  sgd_kernel<<<grid_for(n), kThreads, 0, stream>>>(weight, grad, velocity, n, learning_rate, momentum, weight_decay,
                                                   nesterov);
  DPTRAIN_CHECK_LAUNCH();
}

void relu_forward(const float* x, float* y, std::int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  relu_forward_kernel<<<grid_for(n), kThreads, 0, stream>>>(x, y, n);
  DPTRAIN_CHECK_LAUNCH();
}

void relu_backward(const float* y, const float* dy, float* dx, std::int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  relu_backward_kernel<<<grid_for(n), kThreads, 0, stream>>>(y, dy, dx, n);
  DPTRAIN_CHECK_LAUNCH();
}

void broadcast_rows(const float* bias, float* y, std::int64_t rows, std::int64_t cols, cudaStream_t stream) {
  if (rows * cols == 0) return;
  broadcast_rows_kernel<<<grid_for(rows * cols), kThreads, 0, stream>>>(bias, y, rows, cols);
  DPTRAIN_CHECK_LAUNCH();
}

void dropout_mask(float* mask, std::int64_t samples, std::int64_t per_sample, std::uint64_t seed,
                  std::uint64_t stream_id, std::int64_t first_sample, float probability, float keep_scale,
                  cudaStream_t stream) {
  const std::int64_t n = samples * per_sample;
  if (n == 0) return;
  // Sample s element e draws word s * per_sample + e; the batch's samples are consecutive, so the
  // whole batch is one run of words starting at first_sample * per_sample.
  const auto first_word = static_cast<std::uint64_t>(first_sample * per_sample);
  dropout_mask_kernel<<<grid_for(n), kThreads, 0, stream>>>(mask, n, seed, stream_id, first_word, probability,
                                                            keep_scale);
  DPTRAIN_CHECK_LAUNCH();
}

void multiply(const float* a, const float* b, float* y, std::int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  multiply_kernel<<<grid_for(n), kThreads, 0, stream>>>(a, b, y, n);
  DPTRAIN_CHECK_LAUNCH();
}

void inverse_std(const float* variance, float epsilon, float* inverse_std, std::int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  inverse_std_kernel<<<grid_for(n), kThreads, 0, stream>>>(variance, epsilon, inverse_std, n);
  DPTRAIN_CHECK_LAUNCH();
}

}  // namespace dptrain::cuda::kernels
