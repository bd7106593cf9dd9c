// Softmax with label-smoothed cross-entropy: one block per row (classes are at most a few thousand),
// then one block averages the row losses and counts the rows whose label is in the top 1 and top k,
// so the loss and the counts are deterministic (no atomics) and take no launch of their own.
#include <cfloat>
#include <climits>

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

struct SumInt {
  __device__ int operator()(int a, int b) const { return a + b; }
};

template <typename T>
__global__ void softmax_cross_entropy_rows(const T* logits, const std::int32_t* labels, float* probabilities,
                                           float* row_loss, int* row_rank, std::int64_t classes, float smoothing) {
  __shared__ float shared_max[kThreads];
  __shared__ double shared_sum[kThreads];
  __shared__ int shared_count[kThreads];
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
  // The label's rank among the f32 probabilities just written (block_reduce ended in __syncthreads,
  // which makes every thread's writes to p visible to the block): the classes other than the label
  // that score at least as high, core/accuracy.cpp's rule. A label whose probability is not finite
  // is never correct; neither is it when any class scores NaN (NaN is not below it).
  const float mine = label >= 0 && label < classes ? p[label] : NAN;  // device labels come unchecked
  int at_least = 0;
  for (std::int64_t c = threadIdx.x; c < classes; c += blockDim.x) {
    if (c != label && !(p[c] < mine)) ++at_least;
  }
  at_least = block_reduce(at_least, SumInt{}, shared_count);
  if (threadIdx.x == 0) row_rank[row] = isfinite(mine) ? at_least : INT_MAX;
}

// loss = the mean of the first n row losses; correct = {rows of rank < 1, rows of rank < k} of them.
__global__ void score_kernel(const float* row_loss, const int* row_rank, std::int64_t n, int k, float* loss,
                             float* correct) {
  __shared__ double shared[kThreads];
  __shared__ int shared_count[kThreads];
  double sum = 0;
  int top1 = 0, topk = 0;
  for (std::int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    sum += row_loss[i];
    top1 += row_rank[i] < 1;
    topk += row_rank[i] < k;
  }
  sum = block_reduce(sum, Sum{}, shared);
  top1 = block_reduce(top1, SumInt{}, shared_count);
  topk = block_reduce(topk, SumInt{}, shared_count);
  if (threadIdx.x == 0) {
    *loss = n ? static_cast<float>(sum / static_cast<double>(n)) : 0.f;
    correct[0] = static_cast<float>(top1);
    correct[1] = static_cast<float>(topk);
  }
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
                                   float* probabilities, float* row_loss, int* row_rank, float* loss, float* correct,
                                   std::int64_t rows, std::int64_t counted_rows, std::int64_t classes,
                                   float label_smoothing, cudaStream_t stream) {
  if (rows > 0) {
    with_element_type(logits_type, "softmax_cross_entropy_forward", [&](auto element) {
      using T = decltype(element);
      softmax_cross_entropy_rows<T><<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(
          static_cast<const T*>(logits), labels, probabilities, row_loss, row_rank, classes, label_smoothing);
    });
    DPTRAIN_CHECK_LAUNCH();
  }
  // Over the counted rows only: the padding of a short batch counts neither in the loss nor the top-k.
  const int k = static_cast<int>(classes < 5 ? classes : 5);
  score_kernel<<<1, kThreads, 0, stream>>>(row_loss, row_rank, counted_rows, k, loss, correct);
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
