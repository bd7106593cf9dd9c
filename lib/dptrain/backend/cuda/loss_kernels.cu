// Softmax with label-smoothed cross-entropy: one block per row (classes are at most a few thousand),
// then one block averages the row losses, so the loss is deterministic (no atomics).
#include <cfloat>

#include "dptrain/backend/cuda/element.cuh"
#include "dptrain/backend/cuda/kernels.hpp"
#include "dptrain/backend/cuda/launch.cuh"

namespace dptrain::cuda::kernels {
namespace {
// Block-wide reduction of one value per thread; every thread gets the result.
template <typename T, typename Op>
__device__ T block_reduce(T value, Op op, T* shared) {
  shared[threadIdx.x] = value;
  __syncthreads();
  for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) shared[threadIdx.x] = op(shared[threadIdx.x], shared[threadIdx.x + half]);
    __syncthreads();
  }
  const T result = shared[0];
  __syncthreads();  // shared is reused by the next reduction
  return result;
}

struct Max {
  __device__ float operator()(float a, float b) const { return a > b ? a : b; }
};
struct Sum {
  __device__ double operator()(double a, double b) const { return a + b; }
};

template <typename T>
__global__ void softmax_cross_entropy_rows(const T* logits, const std::int32_t* labels, float* probabilities,
                                           float* row_loss, std::int64_t classes, float smoothing) {
  __shared__ float shared_max[kThreads];
  __shared__ double shared_sum[kThreads];
  const std::int64_t row = blockIdx.x;
  const T* z = logits + row * classes;
  float* p = probabilities + row * classes;
  float top = -FLT_MAX;
  for (std::int64_t c = threadIdx.x; c < classes; c += blockDim.x) {
    const float v = to_float(z[c]);
    top = v > top ? v : top;
  }
  top = block_reduce(top, Max{}, shared_max);
  // Sums in double, as the CPU reference does, so the two agree to fp32 rounding.
  double sum = 0;
  for (std::int64_t c = threadIdx.x; c < classes; c += blockDim.x) {
    sum += exp(static_cast<double>(to_float(z[c]) - top));
  }
  sum = block_reduce(sum, Sum{}, shared_sum);
  const double log_sum = log(sum) + top;
  const int label = labels[row];
  const double off_target = static_cast<double>(smoothing) / static_cast<double>(classes);
  double loss = 0;
  for (std::int64_t c = threadIdx.x; c < classes; c += blockDim.x) {
    const double log_p = to_float(z[c]) - log_sum;
    p[c] = static_cast<float>(exp(log_p));
    const double target = off_target + (c == label ? 1.0 - smoothing : 0.0);
    if (target != 0) loss -= target * log_p;
  }
  loss = block_reduce(loss, Sum{}, shared_sum);
  if (threadIdx.x == 0) row_loss[row] = static_cast<float>(loss);
}

__global__ void mean_kernel(const float* values, std::int64_t n, float* mean) {
  __shared__ double shared[kThreads];
  double sum = 0;
  for (std::int64_t i = threadIdx.x; i < n; i += blockDim.x) sum += values[i];
  sum = block_reduce(sum, Sum{}, shared);
  if (threadIdx.x == 0) *mean = n ? static_cast<float>(sum / static_cast<double>(n)) : 0.f;
}

template <typename T>
__global__ void softmax_cross_entropy_backward_kernel(const float* probabilities, const std::int32_t* labels,
                                                      T* dlogits, std::int64_t rows, std::int64_t classes,
                                                      float smoothing, float scale) {
  const float off_target = smoothing / static_cast<float>(classes);
  DPTRAIN_GRID_STRIDE(i, rows * classes) {
    const std::int64_t row = i / classes, c = i % classes;
    const float target = off_target + (c == labels[row] ? 1.f - smoothing : 0.f);
    dlogits[i] = from_float<T>(scale * (probabilities[i] - target));
  }
}
}  // namespace

void softmax_cross_entropy_forward(const void* logits, DType logits_type, const std::int32_t* labels,
                                   float* probabilities, float* row_loss, float* loss, std::int64_t rows,
                                   std::int64_t counted_rows, std::int64_t classes, float label_smoothing,
                                   cudaStream_t stream) {
  if (rows > 0) {
    with_element_type(logits_type, "softmax_cross_entropy_forward", [&](auto element) {
      using T = decltype(element);
      softmax_cross_entropy_rows<T><<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(
          static_cast<const T*>(logits), labels, probabilities, row_loss, classes, label_smoothing);
    });
    DPTRAIN_CHECK_LAUNCH();
  }
  mean_kernel<<<1, kThreads, 0, stream>>>(row_loss, counted_rows, loss);  // the padding of a short batch is not
  DPTRAIN_CHECK_LAUNCH();
}

void softmax_cross_entropy_backward(const float* probabilities, const std::int32_t* labels, void* dlogits,
                                    DType logits_type, std::int64_t rows, std::int64_t classes, float label_smoothing,
                                    float scale, cudaStream_t stream) {
  if (rows * classes == 0) return;
  with_element_type(logits_type, "softmax_cross_entropy_backward", [&](auto element) {
    using T = decltype(element);
    softmax_cross_entropy_backward_kernel<T><<<grid_for(rows * classes), kThreads, 0, stream>>>(
        probabilities, labels, static_cast<T*>(dlogits), rows, classes, label_smoothing, scale);
  });
  DPTRAIN_CHECK_LAUNCH();
}

}  // namespace dptrain::cuda::kernels
