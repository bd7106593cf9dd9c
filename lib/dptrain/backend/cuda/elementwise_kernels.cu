// Element-wise kernels: memory-bound one-liners, each a grid-stride loop. The activation kernels are
// templated on the element type (element.cuh); with float they are the original fp32 kernels. The
// hottest (fill, add, axpby, ReLU) move 16 bytes a thread where the tensors' addresses allow
// (vector_access.cuh), with the same arithmetic per element.
#include "dptrain/backend/cuda/element.cuh"
#include "dptrain/backend/cuda/kernels.hpp"
#include "dptrain/backend/cuda/launch.cuh"
#include "dptrain/backend/cuda/vector_access.cuh"
#include "dptrain/core/philox_block.hpp"

namespace dptrain::cuda::kernels {
namespace {
// The element-wise maps of activations (vector_access.cuh: V elements a thread, each computed as alone).
template <typename T>
struct Fill {
  T* y;
  float value;
  template <int V>
  __device__ void apply(std::int64_t at) const {
    float v[V];
#pragma unroll
    for (int e = 0; e < V; ++e) v[e] = value;
    store<T, V>(y + at, v);
  }
};
template <typename T>
struct Add {
  const T *a, *b;
  T* y;
  bool relu;
  template <int V>
  __device__ void apply(std::int64_t at) const {
    float va[V], vb[V];
    load<T, V>(a + at, va);
    load<T, V>(b + at, vb);
#pragma unroll
    for (int e = 0; e < V; ++e) {
      const float sum = va[e] + vb[e];
      va[e] = relu ? (sum <= 0.f ? 0.f : sum) : sum;  // NaN stays NaN, as on the CPU
    }
    store<T, V>(y + at, va);
  }
};
// beta == 0 overwrites: y may hold garbage (NaN) that 0 * y would keep.
template <typename T>
struct Axpby {
  float alpha;
  const T* x;
  float beta;
  T* y;
  template <int V>
  __device__ void apply(std::int64_t at) const {
    float vx[V], vy[V] = {};
    load<T, V>(x + at, vx);
    if (beta != 0.f) load<T, V>(y + at, vy);
#pragma unroll
    for (int e = 0; e < V; ++e) vx[e] = beta == 0.f ? alpha * vx[e] : alpha * vx[e] + beta * vy[e];
    store<T, V>(y + at, vx);
  }
};
template <typename T>
struct ReluForward {
  const T* x;
  T* y;
  template <int V>
  __device__ void apply(std::int64_t at) const {
    float v[V];
    load<T, V>(x + at, v);
#pragma unroll
    for (int e = 0; e < V; ++e) v[e] = v[e] <= 0.f ? 0.f : v[e];  // NaN stays NaN, as on the CPU
    store<T, V>(y + at, v);
  }
};
template <typename T>
struct ReluBackward {
  const T *y, *dy;
  T* dx;
  template <int V>
  __device__ void apply(std::int64_t at) const {
    float out[V], grad[V];
    load<T, V>(y + at, out);
    load<T, V>(dy + at, grad);
#pragma unroll
    for (int e = 0; e < V; ++e) grad[e] = out[e] > 0.f ? grad[e] : 0.f;
    store<T, V>(dx + at, grad);
  }
};
__global__ void broadcast_rows_kernel(const float* bias, float* y, std::int64_t rows, std::int64_t cols) {
  DPTRAIN_GRID_STRIDE(i, rows * cols) y[i] = bias[i % cols];
}
template <typename T>
__global__ void add_channel_bias_kernel(const float* bias, T* y, std::int64_t n, std::int64_t channels,
                                        std::int64_t plane) {
  DPTRAIN_GRID_STRIDE(i, n) y[i] = from_float<T>(to_float(y[i]) + bias[(i / plane) % channels]);
}
// Block (c, g) sums channel c over group g of the samples: each thread a strided share, then a
// shared-memory tree. With one group it writes sums[c]; otherwise partials[c * groups + g].
template <typename T>
__global__ void channel_sums_kernel(const T* dy, float* out, std::int64_t samples, std::int64_t channels,
                                    std::int64_t plane) {
  __shared__ float shared[kThreads];
  const std::int64_t c = blockIdx.x, g = blockIdx.y, groups = gridDim.y;
  const std::int64_t per_group = (samples + groups - 1) / groups;
  const std::int64_t first = g * per_group, end = first + per_group, last = end < samples ? end : samples;
  const std::int64_t count = last > first ? (last - first) * plane : 0;
  float sum = 0.f;
  for (std::int64_t j = threadIdx.x; j < count; j += blockDim.x) {
    const std::int64_t s = first + j / plane, p = j % plane;
    sum += to_float(dy[(s * channels + c) * plane + p]);
  }
  shared[threadIdx.x] = sum;
  __syncthreads();
  for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) shared[threadIdx.x] += shared[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[c * groups + g] = shared[0];
}
// Rows of a row-major [rows, channels] matrix: block (t, g) sums channels [32t, 32t + 32) over group g
// of the rows, thread (x, y) channel 32t + x over rows first + y, first + y + 8, ... (a warp reads 32
// consecutive channels of a row), then the 8 row lanes added in order. Writes partials[c * groups + g]
// (sums[c] with one group).
constexpr int kChannelLanes = 32, kRowLanes = 8;
template <typename T>
__global__ void row_sums_kernel(const T* dy, float* out, std::int64_t rows, std::int64_t channels) {
  __shared__ float shared[kRowLanes][kChannelLanes + 1];
  const std::int64_t c = static_cast<std::int64_t>(blockIdx.x) * kChannelLanes + threadIdx.x;
  const std::int64_t g = blockIdx.y, groups = gridDim.y;
  const std::int64_t per_group = (rows + groups - 1) / groups;
  const std::int64_t first = g * per_group, end = first + per_group, last = end < rows ? end : rows;
  float sum = 0.f;
  if (c < channels) {
    for (std::int64_t r = first + threadIdx.y; r < last; r += kRowLanes) sum += to_float(dy[r * channels + c]);
  }
  shared[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y == 0 && c < channels) {
    float total = 0.f;
    for (int lane = 0; lane < kRowLanes; ++lane) total += shared[lane][threadIdx.x];
    out[c * groups + g] = total;
  }
}
// sums[c] = the groups' partial sums of channel c, added in group order.
__global__ void add_partials_kernel(const float* partials, float* sums, std::int64_t channels, std::int64_t groups) {
  DPTRAIN_GRID_STRIDE(c, channels) {
    float sum = 0.f;
    for (std::int64_t g = 0; g < groups; ++g) sum += partials[c * groups + g];
    sums[c] = sum;
  }
}
__global__ void dropout_mask_kernel(float* mask, std::int64_t n, std::uint64_t seed, std::uint64_t stream_id,
                                    std::uint64_t first_word, float probability, float keep_scale) {
  DPTRAIN_GRID_STRIDE(i, n) {
    const float u = philox::uniform(seed, stream_id, first_word + static_cast<std::uint64_t>(i));
    mask[i] = u >= probability ? keep_scale : 0.f;
  }
}
template <typename T>
__global__ void multiply_kernel(const T* a, const float* b, T* y, std::int64_t n) {
  DPTRAIN_GRID_STRIDE(i, n) y[i] = from_float<T>(to_float(a[i]) * b[i]);
}
__global__ void inverse_std_kernel(const float* variance, float epsilon, float* inverse_std, std::int64_t n) {
  DPTRAIN_GRID_STRIDE(i, n) inverse_std[i] = rsqrtf(variance[i] + epsilon);
}

}  // namespace

void fill(float* y, std::int64_t n, float value, cudaStream_t stream) { fill(y, DType::f32, n, value, stream); }

void fill(void* y, DType type, std::int64_t n, float value, cudaStream_t stream) {
  if (n == 0) return;
  with_element_type(type, "fill", [&](auto element) {
    using T = decltype(element);
    launch_map<T>(n, {y}, Fill<T>{typed<T>(y), value}, stream);
  });
}

void add(const void* a, const void* b, void* y, DType type, std::int64_t n, bool relu, cudaStream_t stream) {
  if (n == 0) return;
  with_element_type(type, "add", [&](auto element) {
    using T = decltype(element);
    launch_map<T>(n, {a, b, y}, Add<T>{typed<T>(a), typed<T>(b), typed<T>(y), relu}, stream);
  });
}

void axpby(float alpha, const float* x, float beta, float* y, std::int64_t n, cudaStream_t stream) {
  axpby(alpha, static_cast<const void*>(x), beta, static_cast<void*>(y), DType::f32, n, stream);
}

void axpby(float alpha, const void* x, float beta, void* y, DType type, std::int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  with_element_type(type, "axpby", [&](auto element) {
    using T = decltype(element);
    launch_map<T>(n, {x, y}, Axpby<T>{alpha, typed<T>(x), beta, typed<T>(y)}, stream);
  });
}

void relu_forward(const void* x, void* y, DType type, std::int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  with_element_type(type, "relu_forward", [&](auto element) {
    using T = decltype(element);
    launch_map<T>(n, {x, y}, ReluForward<T>{typed<T>(x), typed<T>(y)}, stream);
  });
}

void relu_backward(const void* y, const void* dy, void* dx, DType type, std::int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  with_element_type(type, "relu_backward", [&](auto element) {
    using T = decltype(element);
    launch_map<T>(n, {y, dy, dx}, ReluBackward<T>{typed<T>(y), typed<T>(dy), typed<T>(dx)}, stream);
  });
}

void broadcast_rows(const float* bias, float* y, std::int64_t rows, std::int64_t cols, cudaStream_t stream) {
  if (rows * cols == 0) return;
  broadcast_rows_kernel<<<grid_for(rows * cols), kThreads, 0, stream>>>(bias, y, rows, cols);
  DPTRAIN_CHECK_LAUNCH();
}

void add_channel_bias(const float* bias, void* y, DType type, std::int64_t samples, std::int64_t channels,
                      std::int64_t plane, cudaStream_t stream) {
  const std::int64_t n = samples * channels * plane;
  if (n == 0) return;
  with_element_type(type, "add_channel_bias", [&](auto element) {
    using T = decltype(element);
    add_channel_bias_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(bias, typed<T>(y), n, channels, plane);
  });
  DPTRAIN_CHECK_LAUNCH();
}

std::int64_t channel_sum_splits(std::int64_t samples, std::int64_t channels, std::int64_t plane) {
  // About 1024 blocks of 256 threads: every SM of an H100 or H200 (132) busy with several blocks.
  constexpr std::int64_t kTargetBlocks = 1024, kMaxGroups = 65535;  // gridDim.y's limit
  if (channels <= 0 || samples <= 1) return 1;
  if (plane == 1) {
    // Blocks of 32 channels; a group has at least 8 rows (one per row lane).
    const std::int64_t tiles = (channels + kChannelLanes - 1) / kChannelLanes;
    const std::int64_t most = std::min((samples + kRowLanes - 1) / kRowLanes, kMaxGroups);
    return std::clamp<std::int64_t>((kTargetBlocks + tiles - 1) / tiles, 1, most);
  }
  return std::clamp<std::int64_t>((kTargetBlocks + channels - 1) / channels, 1, std::min(samples, kMaxGroups));
}

void channel_sums(const void* dy, DType type, float* sums, float* partials, std::int64_t samples, std::int64_t channels,
                  std::int64_t plane, cudaStream_t stream) {
  if (channels == 0) return;
  const std::int64_t groups = channel_sum_splits(samples, channels, plane);
  DPTRAIN_CHECK(groups == 1 || partials != nullptr, "channel_sums: ", groups, " groups need a partials buffer");
  with_element_type(type, "channel_sums", [&](auto element) {
    using T = decltype(element);
    float* out = groups == 1 ? sums : partials;
    if (plane == 1) {
      const dim3 grid(static_cast<unsigned>((channels + kChannelLanes - 1) / kChannelLanes),
                      static_cast<unsigned>(groups));
      row_sums_kernel<T><<<grid, dim3(kChannelLanes, kRowLanes), 0, stream>>>(typed<T>(dy), out, samples, channels);
    } else {
      const dim3 grid(static_cast<unsigned>(channels), static_cast<unsigned>(groups));
      channel_sums_kernel<T><<<grid, kThreads, 0, stream>>>(typed<T>(dy), out, samples, channels, plane);
    }
  });
  DPTRAIN_CHECK_LAUNCH();
  if (groups > 1) {
    add_partials_kernel<<<grid_for(channels), kThreads, 0, stream>>>(partials, sums, channels, groups);
    DPTRAIN_CHECK_LAUNCH();
  }
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

void multiply(const void* a, const float* mask, void* y, DType type, std::int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  with_element_type(type, "multiply", [&](auto element) {
    using T = decltype(element);
    multiply_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(typed<T>(a), mask, typed<T>(y), n);
  });
  DPTRAIN_CHECK_LAUNCH();
}

void inverse_std(const float* variance, float epsilon, float* inverse_std, std::int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  inverse_std_kernel<<<grid_for(n), kThreads, 0, stream>>>(variance, epsilon, inverse_std, n);
  DPTRAIN_CHECK_LAUNCH();
}

}  // namespace dptrain::cuda::kernels
