// Batch norm on our kernels (batch_norm_kernels.hpp). Memory-bound: a training step reads x three
// times (statistics, normalisation, backward sums) and dy twice and writes y and dx once each, about
// 16 bytes per bf16 element, where cuDNN on f32 copies of bf16 data moved about 62.
//
// Each channel's values, sample after sample, are a sequence of `channel_vectors` vectors of `width`
// consecutive elements of one H*W plane (width divides H*W, so no vector crosses a plane). The
// reductions give block (c, g) the vectors [g * group_vectors, (g + 1) * group_vectors) of channel c:
// consecutive threads read consecutive vectors, coalesced along the plane. The element-wise passes
// are grid-stride loops over the whole tensor's vectors.
#include <algorithm>
#include <climits>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "dptrain/backend/cuda/batch_norm_kernels.hpp"
#include "dptrain/backend/cuda/element.cuh"
#include "dptrain/backend/cuda/launch.cuh"
#include "dptrain/backend/cuda/vector_access.cuh"

namespace dptrain::cuda::kernels {
namespace {
static_assert((kThreads & (kThreads - 1)) == 0, "the shared-memory trees halve the block");
constexpr int kWarp = 32;
constexpr unsigned kFullWarp = 0xffffffffu;

// Where a launch finds its data: the reductions' blocks and the per-channel kernels' groups.
struct Geometry {
  std::int64_t channels = 0;
  std::int64_t width = 1;            // elements per vector
  std::int64_t plane_vectors = 0;    // vectors per H*W plane
  std::int64_t channel_vectors = 0;  // vectors per channel: samples * plane_vectors
  std::int64_t groups = 1;           // blocks per channel in the reductions
  std::int64_t group_vectors = 0;    // vectors per group (the last group may have fewer)
  std::int64_t total_vectors = 0;    // vectors of the whole tensor
};

// The element offset of vector k (in channel order) of channel c.
__device__ inline std::int64_t element_of(const Geometry& g, std::int64_t c, std::int64_t k) {
  const std::int64_t sample = k / g.plane_vectors, within = k - sample * g.plane_vectors;
  return ((sample * g.channels + c) * g.plane_vectors + within) * g.width;
}

// The channel of the whole tensor's vector i.
__device__ inline std::int64_t channel_of(const Geometry& g, std::int64_t i) {
  return (i / g.plane_vectors) % g.channels;
}

// (count, mean, M2 = sum of squared deviations from the mean) of some values.
struct Moments {
  float count = 0.f, mean = 0.f, m2 = 0.f;
};

// The moments of the union of a's and b's values (Chan, Golub and LeVeque); a with b's values after
// its own. Neither side's values are squared around anything but their own mean, so a large mean
// costs no precision.
__device__ inline Moments combine(const Moments& a, const Moments& b) {
  if (b.count == 0.f) return a;
  if (a.count == 0.f) return b;
  const float count = a.count + b.count;
  const float weight = b.count / count;
  const float delta = b.mean - a.mean;
  return {count, a.mean + delta * weight, a.m2 + b.m2 + delta * delta * a.count * weight};
}

// The first and one-past-last vector of block (c, group)'s share of its channel.
__device__ inline void group_range(const Geometry& g, std::int64_t group, std::int64_t& first, std::int64_t& last) {
  first = group * g.group_vectors;
  last = first + g.group_vectors < g.channel_vectors ? first + g.group_vectors : g.channel_vectors;
}

// Block (c, group): the moments of its share of channel c into partial_mean and partial_m2 at
// [c * groups + group]. Each thread folds its vectors in order (a vector's own moments first, then
// combined into the thread's), then a shared-memory tree of kThreads (the launch's block size).
template <typename T, int V, bool kAligned>
__global__ void moments_kernel(const T* x, Geometry g, float* partial_mean, float* partial_m2) {
  __shared__ float counts[kThreads], means[kThreads], m2s[kThreads];
  const std::int64_t c = blockIdx.x, group = blockIdx.y;
  std::int64_t first = 0, last = 0;
  group_range(g, group, first, last);
  Moments own;
  for (std::int64_t k = first + threadIdx.x; k < last; k += kThreads) {
    float v[V];
    load<T, V, kAligned>(x + element_of(g, c, k), v);
    float sum = 0.f;
#pragma unroll
    for (int e = 0; e < V; ++e) sum += v[e];
    Moments vector;
    vector.count = static_cast<float>(V);
    vector.mean = sum * (1.f / static_cast<float>(V));  // V is a power of two: exact
#pragma unroll
    for (int e = 0; e < V; ++e) vector.m2 += (v[e] - vector.mean) * (v[e] - vector.mean);
    own = combine(own, vector);
  }
  const unsigned t = threadIdx.x;
  counts[t] = own.count;
  means[t] = own.mean;
  m2s[t] = own.m2;
  __syncthreads();
  for (unsigned half = kThreads / 2; half > 0; half /= 2) {
    if (t < half) {
      const Moments merged = combine({counts[t], means[t], m2s[t]}, {counts[t + half], means[t + half], m2s[t + half]});
      counts[t] = merged.count;
      means[t] = merged.mean;
      m2s[t] = merged.m2;
    }
    __syncthreads();
  }
  if (t == 0) {
    partial_mean[c * g.groups + group] = means[0];
    partial_m2[c * g.groups + group] = m2s[0];
  }
}

// One warp per channel (blocks of kThreads): the channel's groups combined in a fixed order (lane l
// takes groups l, l + 32, ... in turn, then a shuffle tree), giving mean, biased variance and
// factor = scale / sqrt(variance + epsilon). A group's count comes from the geometry.
__global__ void statistics_kernel(const float* partial_mean, const float* partial_m2, Geometry g, float count,
                                  const float* scale, float epsilon, float* mean, float* variance, float* factor) {
  const std::int64_t c = static_cast<std::int64_t>(blockIdx.x) * (kThreads / kWarp) + threadIdx.x / kWarp;
  const int lane = static_cast<int>(threadIdx.x % kWarp);
  if (c >= g.channels) return;  // the whole warp: c is the same for all its lanes
  Moments own;
  for (std::int64_t group = lane; group < g.groups; group += kWarp) {
    std::int64_t first = 0, last = 0;
    group_range(g, group, first, last);
    const Moments part{static_cast<float>((last - first) * g.width), partial_mean[c * g.groups + group],
                       partial_m2[c * g.groups + group]};
    own = combine(own, part);
  }
  for (int offset = kWarp / 2; offset > 0; offset /= 2) {
    const Moments other{__shfl_down_sync(kFullWarp, own.count, offset), __shfl_down_sync(kFullWarp, own.mean, offset),
                        __shfl_down_sync(kFullWarp, own.m2, offset)};
    if (lane < offset) own = combine(own, other);
  }
  if (lane == 0) {
    const float biased = own.m2 / count;
    mean[c] = own.mean;
    variance[c] = biased;
    factor[c] = scale[c] / sqrtf(biased + epsilon);
  }
}

// factor = scale / sqrt(variance + epsilon) from given statistics (inference).
__global__ void inference_factor_kernel(const float* scale, const float* variance, float epsilon, float* factor,
                                        std::int64_t channels) {
  DPTRAIN_GRID_STRIDE(c, channels) factor[c] = scale[c] / sqrtf(variance[c] + epsilon);
}

// y = act((x - mean) * factor + shift [+ z]).
template <typename T, int V, bool kAligned>
__global__ void normalise_kernel(const T* x, const T* z, T* y, Geometry g, const float* mean, const float* factor,
                                 const float* shift, BatchNormActivation activation) {
  DPTRAIN_GRID_STRIDE(i, g.total_vectors) {
    const std::int64_t c = channel_of(g, i);
    const float mu = mean[c], f = factor[c], b = shift[c];
    float v[V];
    load<T, V, kAligned>(x + i * V, v);
#pragma unroll
    for (int e = 0; e < V; ++e) v[e] = (v[e] - mu) * f + b;
    if (activation == BatchNormActivation::add_relu) {
      float residual[V];
      load<T, V, kAligned>(z + i * V, residual);
#pragma unroll
      for (int e = 0; e < V; ++e) v[e] += residual[e];
    }
    if (activation != BatchNormActivation::none) {
#pragma unroll
      for (int e = 0; e < V; ++e) v[e] = v[e] <= 0.f ? 0.f : v[e];  // NaN stays NaN, as relu_forward
    }
    store<T, V, kAligned>(y + i * V, v);
  }
}

// g = dy, or 0 where the fused ReLU's output is not positive (relu_backward's rule).
template <typename T, int V, bool kAligned>
__device__ inline void load_gradient(const T* dy, const T* relu_output, std::int64_t at, float (&grad)[V]) {
  load<T, V, kAligned>(dy + at, grad);
  if (relu_output != nullptr) {
    float out[V];
    load<T, V, kAligned>(relu_output + at, out);
#pragma unroll
    for (int e = 0; e < V; ++e) grad[e] = out[e] > 0.f ? grad[e] : 0.f;
  }
}

// Block (c, group): sum(g) and sum(g * (x - mean)) over its share of channel c into partial_dy and
// partial_dyx at [c * groups + group]; each thread sums its vectors in order, then a shared tree.
template <typename T, int V, bool kAligned>
__global__ void backward_sums_kernel(const T* x, const T* dy, const T* relu_output, Geometry g, const float* mean,
                                     float* partial_dy, float* partial_dyx) {
  __shared__ float sums_dy[kThreads], sums_dyx[kThreads];
  const std::int64_t c = blockIdx.x, group = blockIdx.y;
  std::int64_t first = 0, last = 0;
  group_range(g, group, first, last);
  const float mu = mean[c];
  float sum_dy = 0.f, sum_dyx = 0.f;
  for (std::int64_t k = first + threadIdx.x; k < last; k += kThreads) {
    const std::int64_t at = element_of(g, c, k);
    float v[V], grad[V];
    load<T, V, kAligned>(x + at, v);
    load_gradient<T, V, kAligned>(dy, relu_output, at, grad);
#pragma unroll
    for (int e = 0; e < V; ++e) {
      sum_dy += grad[e];
      sum_dyx += grad[e] * (v[e] - mu);
    }
  }
  const unsigned t = threadIdx.x;
  sums_dy[t] = sum_dy;
  sums_dyx[t] = sum_dyx;
  __syncthreads();
  for (unsigned half = kThreads / 2; half > 0; half /= 2) {
    if (t < half) {
      sums_dy[t] += sums_dy[t + half];
      sums_dyx[t] += sums_dyx[t + half];
    }
    __syncthreads();
  }
  if (t == 0) {
    partial_dy[c * g.groups + group] = sums_dy[0];
    partial_dyx[c * g.groups + group] = sums_dyx[0];
  }
}

// One warp per channel, as statistics_kernel: the groups' sums added in a fixed order, then
// dshift = sum(g), dscale = sum(g * (x - mean)) * inv_std, and the input gradient's coefficients:
// dx = factor * (g - mean_dy - (x - mean) * slope) with factor = scale * inv_std, mean_dy = dshift / m
// and slope = inv_std * dscale / m.
__global__ void backward_coefficients_kernel(const float* partial_dy, const float* partial_dyx, Geometry g, float count,
                                             const float* scale, const float* variance, float epsilon, float* dscale,
                                             float* dshift, float* factor, float* mean_dy, float* slope) {
  const std::int64_t c = static_cast<std::int64_t>(blockIdx.x) * (kThreads / kWarp) + threadIdx.x / kWarp;
  const int lane = static_cast<int>(threadIdx.x % kWarp);
  if (c >= g.channels) return;  // the whole warp
  float sum_dy = 0.f, sum_dyx = 0.f;
  for (std::int64_t group = lane; group < g.groups; group += kWarp) {
    sum_dy += partial_dy[c * g.groups + group];
    sum_dyx += partial_dyx[c * g.groups + group];
  }
  for (int offset = kWarp / 2; offset > 0; offset /= 2) {
    const float other_dy = __shfl_down_sync(kFullWarp, sum_dy, offset);
    const float other_dyx = __shfl_down_sync(kFullWarp, sum_dyx, offset);
    if (lane < offset) {
      sum_dy += other_dy;
      sum_dyx += other_dyx;
    }
  }
  if (lane == 0) {
    const float inv_std = 1.f / sqrtf(variance[c] + epsilon);
    const float scale_gradient = sum_dyx * inv_std;
    dshift[c] = sum_dy;
    dscale[c] = scale_gradient;
    factor[c] = scale[c] * inv_std;
    mean_dy[c] = sum_dy / count;
    slope[c] = inv_std * scale_gradient / count;
  }
}

// dx = factor * (g - mean_dy - (x - mean) * slope); masked_dy (when given) = g.
template <typename T, int V, bool kAligned>
__global__ void input_gradient_kernel(const T* x, const T* dy, const T* relu_output, T* dx, T* masked_dy, Geometry g,
                                      const float* mean, const float* factor, const float* mean_dy,
                                      const float* slope) {
  DPTRAIN_GRID_STRIDE(i, g.total_vectors) {
    const std::int64_t c = channel_of(g, i);
    const float mu = mean[c], f = factor[c], md = mean_dy[c], s = slope[c];
    float v[V], grad[V];
    load<T, V, kAligned>(x + i * V, v);
    load_gradient<T, V, kAligned>(dy, relu_output, i * V, grad);
    if (masked_dy != nullptr) store<T, V, kAligned>(masked_dy + i * V, grad);
#pragma unroll
    for (int e = 0; e < V; ++e) v[e] = f * (grad[e] - md - (v[e] - mu) * s);
    store<T, V, kAligned>(dx + i * V, v);
  }
}

// A vector width and whether its loads may be vector loads, as types for the kernel templates.
template <int V, bool kAligned>
struct Width {
  static constexpr int size = V;
  static constexpr bool aligned = kAligned;
};

// Calls launch(Width<V, aligned>{}) for geometry g's width; aligned when every pointer given is a
// multiple of the vector's bytes (null pointers, unused, do not count).
template <typename T, typename Launch>
void with_width(const Geometry& g, std::initializer_list<const void*> pointers, Launch&& launch) {
  constexpr int kWide = 16 / static_cast<int>(sizeof(T)), kNarrow = 8 / static_cast<int>(sizeof(T));
  const bool aligned = all_aligned(static_cast<std::size_t>(g.width) * sizeof(T), pointers);
  if (g.width == kWide) return aligned ? launch(Width<kWide, true>{}) : launch(Width<kWide, false>{});
  if (g.width == kNarrow) return aligned ? launch(Width<kNarrow, true>{}) : launch(Width<kNarrow, false>{});
  DPTRAIN_CHECK(g.width == 1, "batch norm: no kernel for vectors of ", g.width, " elements");
  return launch(Width<1, true>{});
}

// The workspace's parts: two partial arrays of channels * groups floats, three per-channel arrays.
struct Workspace {
  float* partial_a;
  float* partial_b;
  float* factor;
  float* mean_dy;
  float* slope;
};

Workspace split(float* workspace, const Geometry& g) {
  const std::int64_t partials = g.channels * g.groups;
  return {workspace, workspace + partials, workspace + 2 * partials, workspace + 2 * partials + g.channels,
          workspace + 2 * partials + 2 * g.channels};
}

std::int64_t element_bytes(DType type) {
  switch (type) {
    case DType::f32: return 4;
    case DType::bf16:
    case DType::f16: return 2;
    default: break;
  }
  throw Error(std::string("batch norm: no kernel for element type ") + std::string(name_of(type)));
}

Geometry geometry_of(const BatchNormShape& shape, DType type, const char* who) {
  DPTRAIN_CHECK(shape.samples >= 0 && shape.channels >= 0 && shape.plane >= 0, who, ": negative shape [", shape.samples,
                ", ", shape.channels, ", ", shape.plane, "]");
  DPTRAIN_CHECK(shape.channels <= INT_MAX, who, ": ", shape.channels, " channels are more than a grid holds");
  // Per-thread counts stay exact in float (under 2^24) for any channel up to 2^31 - 1 values.
  DPTRAIN_CHECK(shape.plane == 0 || shape.samples <= INT_MAX / shape.plane, who, ": ", shape.samples, " x ",
                shape.plane, " values per channel are more than these kernels take (2^31 - 1)");
  Geometry g;
  g.channels = shape.channels;
  g.width = batch_norm_vector_width(shape, type);
  g.plane_vectors = shape.plane / g.width;
  g.channel_vectors = shape.samples * g.plane_vectors;
  g.groups = batch_norm_groups(shape, type);
  g.group_vectors = g.channel_vectors > 0 ? (g.channel_vectors + g.groups - 1) / g.groups : 0;
  g.total_vectors = g.channel_vectors * g.channels;
  return g;
}

// Blocks of kThreads for one warp per channel.
unsigned warp_per_channel_blocks(std::int64_t channels) {
  constexpr std::int64_t kPerBlock = kThreads / kWarp;
  return static_cast<unsigned>((channels + kPerBlock - 1) / kPerBlock);
}

void check_activation_arguments(BatchNormActivation activation, const void* z, const char* who) {
  DPTRAIN_CHECK(activation == BatchNormActivation::none || activation == BatchNormActivation::relu ||
                    activation == BatchNormActivation::add_relu,
                who, ": unknown activation ", static_cast<int>(activation));
  DPTRAIN_CHECK((activation == BatchNormActivation::add_relu) == (z != nullptr), who,
                ": the residual z is given exactly when the activation is add_relu");
}

void normalise(const void* x, const void* z, void* y, DType type, const Geometry& g, const float* mean,
               const float* factor, const float* shift, BatchNormActivation activation, cudaStream_t stream,
               const char* who) {
  with_element_type(type, who, [&](auto element) {
    using T = decltype(element);
    with_width<T>(g, {x, z, y}, [&](auto width) {
      using W = decltype(width);
      normalise_kernel<T, W::size, W::aligned><<<grid_for(g.total_vectors), kThreads, 0, stream>>>(
          typed<T>(x), typed<T>(z), typed<T>(y), g, mean, factor, shift, activation);
    });
  });
  DPTRAIN_CHECK_LAUNCH();
}
}  // namespace

int batch_norm_vector_width(const BatchNormShape& shape, DType type) {
  const auto bytes = element_bytes(type);
  for (const std::int64_t vector_bytes : {16, 8}) {
    const std::int64_t width = vector_bytes / bytes;
    if (width > 1 && shape.plane % width == 0) return static_cast<int>(width);
  }
  return 1;
}

std::int64_t batch_norm_groups(const BatchNormShape& shape, DType type) {
  constexpr std::int64_t kTargetBlocks = 1024, kMinGroupVectors = 2 * kThreads, kMaxGroups = 65535;
  const std::int64_t vectors = shape.samples * (shape.plane / batch_norm_vector_width(shape, type));
  if (shape.channels <= 0 || vectors <= 0) return 1;
  std::int64_t groups = std::clamp<std::int64_t>((kTargetBlocks + shape.channels - 1) / shape.channels, 1, kMaxGroups);
  groups = std::min(groups, std::max<std::int64_t>(1, vectors / kMinGroupVectors));
  // Equal groups of ceil(vectors / groups), and only as many as that needs: none is empty.
  const std::int64_t per_group = (vectors + groups - 1) / groups;
  return (vectors + per_group - 1) / per_group;
}

std::int64_t batch_norm_workspace_floats(const BatchNormShape& shape, DType type) {
  return shape.channels * (2 * batch_norm_groups(shape, type) + 3);
}

void batch_norm_forward_training(const void* x, const void* z, void* y, DType type, const BatchNormShape& shape,
                                 const float* scale, const float* shift, float epsilon, BatchNormActivation activation,
                                 float* batch_mean, float* batch_variance, float* workspace, cudaStream_t stream) {
  constexpr const char* kWho = "batch_norm_forward_training";
  check_activation_arguments(activation, z, kWho);
  const Geometry g = geometry_of(shape, type, kWho);
  if (g.channels == 0) return;
  DPTRAIN_CHECK(g.channel_vectors > 0, kWho, ": no values per channel to take statistics of");
  DPTRAIN_CHECK(workspace != nullptr, kWho, ": no workspace");
  const Workspace w = split(workspace, g);
  with_element_type(type, kWho, [&](auto element) {
    using T = decltype(element);
    with_width<T>(g, {x}, [&](auto width) {
      using W = decltype(width);
      const dim3 grid(static_cast<unsigned>(g.channels), static_cast<unsigned>(g.groups));
      moments_kernel<T, W::size, W::aligned><<<grid, kThreads, 0, stream>>>(typed<T>(x), g, w.partial_a, w.partial_b);
    });
  });
  DPTRAIN_CHECK_LAUNCH();
  const auto count = static_cast<float>(shape.samples * shape.plane);
  statistics_kernel<<<warp_per_channel_blocks(g.channels), kThreads, 0, stream>>>(
      w.partial_a, w.partial_b, g, count, scale, epsilon, batch_mean, batch_variance, w.factor);
  DPTRAIN_CHECK_LAUNCH();
  normalise(x, z, y, type, g, batch_mean, w.factor, shift, activation, stream, kWho);
}

void batch_norm_forward_inference(const void* x, const void* z, void* y, DType type, const BatchNormShape& shape,
                                  const float* scale, const float* shift, const float* mean, const float* variance,
                                  float epsilon, BatchNormActivation activation, float* workspace,
                                  cudaStream_t stream) {
  constexpr const char* kWho = "batch_norm_forward_inference";
  check_activation_arguments(activation, z, kWho);
  const Geometry g = geometry_of(shape, type, kWho);
  if (g.total_vectors == 0) return;
  DPTRAIN_CHECK(workspace != nullptr, kWho, ": no workspace");
  const Workspace w = split(workspace, g);
  inference_factor_kernel<<<grid_for(g.channels), kThreads, 0, stream>>>(scale, variance, epsilon, w.factor,
                                                                         g.channels);
  DPTRAIN_CHECK_LAUNCH();
  normalise(x, z, y, type, g, mean, w.factor, shift, activation, stream, kWho);
}

void batch_norm_backward(const void* x, const void* dy, const void* relu_output, void* dx, void* masked_dy, DType type,
                         const BatchNormShape& shape, const float* scale, const float* batch_mean,
                         const float* batch_variance, float epsilon, float* dscale, float* dshift, float* workspace,
                         cudaStream_t stream) {
  constexpr const char* kWho = "batch_norm_backward";
  DPTRAIN_CHECK(masked_dy == nullptr || relu_output != nullptr, kWho,
                ": the masked gradient needs the fused ReLU's output");
  const Geometry g = geometry_of(shape, type, kWho);
  if (g.channels == 0) return;
  DPTRAIN_CHECK(g.channel_vectors > 0, kWho, ": no values per channel");
  DPTRAIN_CHECK(workspace != nullptr, kWho, ": no workspace");
  const Workspace w = split(workspace, g);
  with_element_type(type, kWho, [&](auto element) {
    using T = decltype(element);
    with_width<T>(g, {x, dy, relu_output}, [&](auto width) {
      using W = decltype(width);
      const dim3 grid(static_cast<unsigned>(g.channels), static_cast<unsigned>(g.groups));
      backward_sums_kernel<T, W::size, W::aligned><<<grid, kThreads, 0, stream>>>(
          typed<T>(x), typed<T>(dy), typed<T>(relu_output), g, batch_mean, w.partial_a, w.partial_b);
    });
  });
  DPTRAIN_CHECK_LAUNCH();
  const auto count = static_cast<float>(shape.samples * shape.plane);
  backward_coefficients_kernel<<<warp_per_channel_blocks(g.channels), kThreads, 0, stream>>>(
      w.partial_a, w.partial_b, g, count, scale, batch_variance, epsilon, dscale, dshift, w.factor, w.mean_dy, w.slope);
  DPTRAIN_CHECK_LAUNCH();
  with_element_type(type, kWho, [&](auto element) {
    using T = decltype(element);
    with_width<T>(g, {x, dy, relu_output, dx, masked_dy}, [&](auto width) {
      using W = decltype(width);
      input_gradient_kernel<T, W::size, W::aligned><<<grid_for(g.total_vectors), kThreads, 0, stream>>>(
          typed<T>(x), typed<T>(dy), typed<T>(relu_output), typed<T>(dx), typed<T>(masked_dy), g, batch_mean, w.factor,
          w.mean_dy, w.slope);
    });
  });
  DPTRAIN_CHECK_LAUNCH();
}

}  // namespace dptrain::cuda::kernels
