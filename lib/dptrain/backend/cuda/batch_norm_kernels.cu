// Batch norm on our kernels (batch_norm_kernels.hpp). Memory-bound: a training step reads x three
// times (statistics, normalisation, backward sums) and dy twice and writes y and dx once each, about
// 16 bytes per bf16 element, where cuDNN on f32 copies of bf16 data moved about 62.
//
// The reductions walk each channel's values in `channel_units` units, cut into groups of
// `group_units`:
// - NCHW: a unit is a vector of `width` consecutive elements of one H*W plane (width divides H*W, so
//   no vector crosses a plane), sample after sample. Block (c, g) takes the vectors
//   [g * group_units, (g + 1) * group_units) of channel c: consecutive threads read consecutive
//   vectors, coalesced along the plane.
// - NHWC: the tensor is a matrix of N*H*W rows of C values, a vector `width` consecutive channels of
//   one row (width divides C), and a unit is a row. Block (b, g) is kThreads / tile lanes of `tile`
//   columns: thread (lane, column) reads channel vector b * tile + column of the rows first + lane,
//   first + lane + lanes, ... of group g's rows, so consecutive threads read consecutive vectors of a
//   row and a warp whole rows after each other. Each thread keeps one result per channel of its
//   vector; the shared-memory tree then merges the lanes, column by column.
// Either way each block writes one partial result per channel (at [c * groups + g]) and a second
// kernel combines them in group order.
//
// The element-wise passes (normalisation, input gradient) compute each vector with one device
// function for both layouts. NCHW: a grid-stride loop over the whole tensor's vectors. NHWC: blocks of
// the same lanes and columns as the reductions', each thread one channel vector down the rows (a grid
// stride along gridDim.y), so that it loads its channels' coefficients once and not with every vector.
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
// NHWC: rows a thread folds into one set of moments before combining them into its own (a power of
// two: their mean is exact), and the fewest rows a group gives each thread.
constexpr int kRowChunk = 4;
constexpr std::int64_t kMinLaneRows = 2 * kRowChunk;
// Per-thread counts are exact in float below this.
constexpr std::int64_t kExactCount = std::int64_t{1} << 24;

// Where a launch finds its data: the reductions' blocks and the per-channel kernels' groups.
struct Geometry {
  bool channels_last = false;
  std::int64_t channels = 0;
  std::int64_t width = 1;          // elements per vector: along the plane (NCHW) or the channels (NHWC)
  std::int64_t plane_vectors = 0;  // NCHW: vectors per H*W plane
  std::int64_t row_vectors = 0;    // NHWC: vectors per row, channels / width
  std::int64_t tile = 1;           // NHWC: channel vectors (columns) per reduction block, a power of two <= 32
  std::int64_t channel_units = 0;  // units per channel: samples * plane_vectors (NCHW), samples * plane rows (NHWC)
  std::int64_t unit_values = 1;    // one channel's values in a unit: width (NCHW) or 1 (NHWC)
  std::int64_t groups = 1;         // blocks per channel in the reductions
  std::int64_t group_units = 0;    // units per group (the last group may have fewer)
  std::int64_t total_vectors = 0;  // vectors of the whole tensor
};

// NCHW: the element offset of vector k (in channel order) of channel c.
__device__ inline std::int64_t element_of(const Geometry& g, std::int64_t c, std::int64_t k) {
  const std::int64_t sample = k / g.plane_vectors, within = k - sample * g.plane_vectors;
  return ((sample * g.channels + c) * g.plane_vectors + within) * g.width;
}

// NCHW: the channel of the whole tensor's vector i.
__device__ inline std::int64_t channel_of(const Geometry& g, std::int64_t i) {
  return (i / g.plane_vectors) % g.channels;
}

// A per-channel value for each element of a vector: p[c] for all (NCHW: one channel), or
// p[c], p[c + 1], ... (NHWC: V consecutive channels from c).
template <bool kChannelsLast, int V>
__device__ inline void per_channel(const float* p, std::int64_t c, float (&out)[V]) {
  if constexpr (kChannelsLast) {
#pragma unroll
    for (int e = 0; e < V; ++e) out[e] = p[c + e];
  } else {
    const float value = p[c];
#pragma unroll
    for (int e = 0; e < V; ++e) out[e] = value;
  }
}

// The per-element formulas, one definition for both layouts.
// The forward's normalised value before its activation.
__device__ inline float normalised(float x, float mean, float factor, float shift) {
  return (x - mean) * factor + shift;
}
// ReLU: NaN stays NaN, as relu_forward (and the CPU).
__device__ inline float rectified(float v) { return v <= 0.f ? 0.f : v; }
// The gradient behind a fused ReLU whose output was `out` (relu_backward's rule).
__device__ inline float masked(float grad, float out) { return out > 0.f ? grad : 0.f; }
// The backward sums: sum(g) and sum(g * (x - mean)).
__device__ inline void accumulate_gradient(float grad, float x, float mean, float& sum_dy, float& sum_dyx) {
  sum_dy += grad;
  sum_dyx += grad * (x - mean);
}
// dx = factor * (g - mean_dy - (x - mean) * slope).
__device__ inline float input_gradient(float grad, float x, float mean, float factor, float mean_dy, float slope) {
  return factor * (grad - mean_dy - (x - mean) * slope);
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

// The moments of N values of one channel (N a power of two: the mean's division is exact).
template <int N>
__device__ inline Moments moments_of(const float (&v)[N]) {
  float sum = 0.f;
#pragma unroll
  for (int e = 0; e < N; ++e) sum += v[e];
  Moments m;
  m.count = static_cast<float>(N);
  m.mean = sum * (1.f / static_cast<float>(N));
#pragma unroll
  for (int e = 0; e < N; ++e) m.m2 += (v[e] - m.mean) * (v[e] - m.mean);
  return m;
}

// Moments held in shared memory as three arrays, a thread's at [t].
struct SharedMoments {
  float* counts;
  float* means;
  float* m2s;
  __device__ Moments get(unsigned t) const { return {counts[t], means[t], m2s[t]}; }
  __device__ void set(unsigned t, const Moments& m) const {
    counts[t] = m.count;
    means[t] = m.mean;
    m2s[t] = m.m2;
  }
};

// A reduction block's shared-memory tree: merge(to, from) folds thread `from`'s partial result into
// thread `to`'s, halving the block until the first `stride` threads hold the results (thread t < stride
// that of the threads t, t + stride, t + 2 * stride, ...). Every thread has stored its own and
// synchronised before.
template <typename Merge>
__device__ inline void shared_tree(unsigned stride, Merge&& merge) {
  const unsigned t = threadIdx.x;
  for (unsigned half = kThreads / 2; half >= stride; half /= 2) {
    if (t < half) merge(t, t + half);
    __syncthreads();
  }
}

// The first and one-past-last unit of group `group`'s share of its channel.
__device__ inline void group_range(const Geometry& g, std::int64_t group, std::int64_t& first, std::int64_t& last) {
  first = group * g.group_units;
  last = first + g.group_units < g.channel_units ? first + g.group_units : g.channel_units;
}

// NHWC blocks (b, y) of kThreads / tile lanes of `tile` columns: the rows [row, last) in steps of
// `step` of the channel vector `column` are this thread's.
struct RowsThread {
  std::int64_t column;  // the channel vector this thread reads, a real one when < row_vectors
  std::int64_t row;     // its first row
  std::int64_t step;    // the rows from one of its rows to the next
  std::int64_t last;    // one past the last row it may take
};

// A reduction block (b, group) of an NHWC geometry: the group's rows, one lane's after another.
__device__ inline RowsThread group_rows(const Geometry& g) {
  const auto tile = static_cast<unsigned>(g.tile);
  std::int64_t first = 0, last = 0;
  group_range(g, blockIdx.y, first, last);
  return {static_cast<std::int64_t>(blockIdx.x) * tile + threadIdx.x % tile, first + threadIdx.x / tile,
          kThreads / tile, last};
}

// An element-wise block (b, y) of an NHWC geometry: every row, a grid stride along gridDim.y.
__device__ inline RowsThread all_rows(const Geometry& g) {
  const auto tile = static_cast<unsigned>(g.tile), lanes = kThreads / tile;
  return {static_cast<std::int64_t>(blockIdx.x) * tile + threadIdx.x % tile,
          static_cast<std::int64_t>(blockIdx.y) * lanes + threadIdx.x / tile,
          static_cast<std::int64_t>(gridDim.y) * lanes, g.channel_units};
}

// NHWC reductions, after the shared tree: thread t < tile writes its column's results, a[e * kThreads + t]
// and b[e * kThreads + t] for the column's channel e, to partial_a and partial_b at
// [c * groups + group].
template <int V>
__device__ inline void store_column_partials(const Geometry& g, const RowsThread& at, const float* a, const float* b,
                                             float* partial_a, float* partial_b) {
  const unsigned t = threadIdx.x;
  if (t >= g.tile || at.column >= g.row_vectors) return;
#pragma unroll
  for (int e = 0; e < V; ++e) {
    const std::int64_t c = at.column * V + e;
    partial_a[c * g.groups + blockIdx.y] = a[e * kThreads + t];
    partial_b[c * g.groups + blockIdx.y] = b[e * kThreads + t];
  }
}

// NCHW block (c, group): the moments of its share of channel c into partial_mean and partial_m2 at
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
    own = combine(own, moments_of(v));
  }
  const unsigned t = threadIdx.x;
  const SharedMoments shared{counts, means, m2s};
  shared.set(t, own);
  __syncthreads();
  shared_tree(1, [&](unsigned to, unsigned from) { shared.set(to, combine(shared.get(to), shared.get(from))); });
  if (t == 0) {
    partial_mean[c * g.groups + group] = means[0];
    partial_m2[c * g.groups + group] = m2s[0];
  }
}

// NHWC block (b, group): the moments of its rows of the channels of its `tile` channel vectors, into
// partial_mean and partial_m2 at [c * groups + group]. Each thread folds its rows in order, kRowChunk
// rows at a time (their moments, then combined into the thread's) and the rest one by one, each
// channel of its vector on its own; then a shared-memory tree over the lanes, for each channel.
template <typename T, int V, bool kAligned>
__global__ void moments_rows_kernel(const T* x, Geometry g, float* partial_mean, float* partial_m2) {
  __shared__ float counts[V * kThreads], means[V * kThreads], m2s[V * kThreads];
  const RowsThread at = group_rows(g);
  Moments own[V];
  if (at.column < g.row_vectors) {
    const T* column = x + at.column * V;
    std::int64_t row = at.row;
    for (; row + (kRowChunk - 1) * at.step < at.last; row += kRowChunk * at.step) {
      float v[kRowChunk][V];
#pragma unroll
      for (int r = 0; r < kRowChunk; ++r) load<T, V, kAligned>(column + (row + r * at.step) * g.channels, v[r]);
#pragma unroll
      for (int e = 0; e < V; ++e) {
        float chunk[kRowChunk];
#pragma unroll
        for (int r = 0; r < kRowChunk; ++r) chunk[r] = v[r][e];
        own[e] = combine(own[e], moments_of(chunk));
      }
    }
    for (; row < at.last; row += at.step) {
      float v[V];
      load<T, V, kAligned>(column + row * g.channels, v);
#pragma unroll
      for (int e = 0; e < V; ++e) own[e] = combine(own[e], Moments{1.f, v[e], 0.f});
    }
  }
  const unsigned t = threadIdx.x;
#pragma unroll
  for (int e = 0; e < V; ++e)
    SharedMoments{counts + e * kThreads, means + e * kThreads, m2s + e * kThreads}.set(t, own[e]);
  __syncthreads();
  shared_tree(static_cast<unsigned>(g.tile), [&](unsigned to, unsigned from) {
#pragma unroll
    for (int e = 0; e < V; ++e) {
      const SharedMoments shared{counts + e * kThreads, means + e * kThreads, m2s + e * kThreads};
      shared.set(to, combine(shared.get(to), shared.get(from)));
    }
  });
  store_column_partials<V>(g, at, means, m2s, partial_mean, partial_m2);
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
    const Moments part{static_cast<float>((last - first) * g.unit_values), partial_mean[c * g.groups + group],
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

// The V elements at `at`: y = act((x - mean) * factor + shift [+ z]), with each element's channel's
// mean, factor and shift.
template <typename T, int V, bool kAligned>
__device__ inline void normalise_vector(const T* x, const T* z, T* y, std::int64_t at, const float (&mu)[V],
                                        const float (&f)[V], const float (&b)[V], BatchNormActivation activation) {
  float v[V];
  load<T, V, kAligned>(x + at, v);
#pragma unroll
  for (int e = 0; e < V; ++e) v[e] = normalised(v[e], mu[e], f[e], b[e]);
  if (activation == BatchNormActivation::add_relu) {
    float residual[V];
    load<T, V, kAligned>(z + at, residual);
#pragma unroll
    for (int e = 0; e < V; ++e) v[e] += residual[e];
  }
  if (activation != BatchNormActivation::none) {
#pragma unroll
    for (int e = 0; e < V; ++e) v[e] = rectified(v[e]);
  }
  store<T, V, kAligned>(y + at, v);
}

// NCHW: normalise_vector over the whole tensor's vectors, a grid stride.
template <typename T, int V, bool kAligned>
__global__ void normalise_kernel(const T* x, const T* z, T* y, Geometry g, const float* mean, const float* factor,
                                 const float* shift, BatchNormActivation activation) {
  DPTRAIN_GRID_STRIDE(i, g.total_vectors) {
    const std::int64_t c = channel_of(g, i);
    float mu[V], f[V], b[V];
    per_channel<false>(mean, c, mu);
    per_channel<false>(factor, c, f);
    per_channel<false>(shift, c, b);
    normalise_vector<T, V, kAligned>(x, z, y, i * V, mu, f, b, activation);
  }
}

// NHWC: normalise_vector down the rows of one channel vector a thread (all_rows), its channels'
// coefficients loaded once.
template <typename T, int V, bool kAligned>
__global__ void normalise_rows_kernel(const T* x, const T* z, T* y, Geometry g, const float* mean, const float* factor,
                                      const float* shift, BatchNormActivation activation) {
  const RowsThread at = all_rows(g);
  if (at.column >= g.row_vectors) return;
  const std::int64_t c = at.column * V;
  float mu[V], f[V], b[V];
  per_channel<true>(mean, c, mu);
  per_channel<true>(factor, c, f);
  per_channel<true>(shift, c, b);
  for (std::int64_t row = at.row; row < at.last; row += at.step) {
    normalise_vector<T, V, kAligned>(x, z, y, row * g.channels + c, mu, f, b, activation);
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
    for (int e = 0; e < V; ++e) grad[e] = masked(grad[e], out[e]);
  }
}

// NCHW block (c, group): sum(g) and sum(g * (x - mean)) over its share of channel c into partial_dy
// and partial_dyx at [c * groups + group]; each thread sums its vectors in order, then a shared tree.
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
    for (int e = 0; e < V; ++e) accumulate_gradient(grad[e], v[e], mu, sum_dy, sum_dyx);
  }
  const unsigned t = threadIdx.x;
  sums_dy[t] = sum_dy;
  sums_dyx[t] = sum_dyx;
  __syncthreads();
  shared_tree(1, [&](unsigned to, unsigned from) {
    sums_dy[to] += sums_dy[from];
    sums_dyx[to] += sums_dyx[from];
  });
  if (t == 0) {
    partial_dy[c * g.groups + group] = sums_dy[0];
    partial_dyx[c * g.groups + group] = sums_dyx[0];
  }
}

// NHWC block (b, group): sum(g) and sum(g * (x - mean)) over its rows of the channels of its `tile`
// channel vectors into partial_dy and partial_dyx at [c * groups + group]; each thread sums its rows
// in order, each channel of its vector on its own, then a shared tree over the lanes.
template <typename T, int V, bool kAligned>
__global__ void backward_sums_rows_kernel(const T* x, const T* dy, const T* relu_output, Geometry g, const float* mean,
                                          float* partial_dy, float* partial_dyx) {
  __shared__ float sums_dy[V * kThreads], sums_dyx[V * kThreads];
  const RowsThread at = group_rows(g);
  float sum_dy[V] = {}, sum_dyx[V] = {};
  if (at.column < g.row_vectors) {
    float mu[V];
    per_channel<true>(mean, at.column * V, mu);
#pragma unroll 4
    for (std::int64_t row = at.row; row < at.last; row += at.step) {
      const std::int64_t element = row * g.channels + at.column * V;
      float v[V], grad[V];
      load<T, V, kAligned>(x + element, v);
      load_gradient<T, V, kAligned>(dy, relu_output, element, grad);
#pragma unroll
      for (int e = 0; e < V; ++e) accumulate_gradient(grad[e], v[e], mu[e], sum_dy[e], sum_dyx[e]);
    }
  }
  const unsigned t = threadIdx.x;
#pragma unroll
  for (int e = 0; e < V; ++e) {
    sums_dy[e * kThreads + t] = sum_dy[e];
    sums_dyx[e * kThreads + t] = sum_dyx[e];
  }
  __syncthreads();
  shared_tree(static_cast<unsigned>(g.tile), [&](unsigned to, unsigned from) {
#pragma unroll
    for (int e = 0; e < V; ++e) {
      sums_dy[e * kThreads + to] += sums_dy[e * kThreads + from];
      sums_dyx[e * kThreads + to] += sums_dyx[e * kThreads + from];
    }
  });
  store_column_partials<V>(g, at, sums_dy, sums_dyx, partial_dy, partial_dyx);
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

// A vector's per-channel coefficients of the input gradient (backward_coefficients_kernel's).
template <int V>
struct GradientCoefficients {
  float mean[V], factor[V], mean_dy[V], slope[V];
};

template <bool kChannelsLast, int V>
__device__ inline void load_coefficients(const float* mean, const float* factor, const float* mean_dy,
                                         const float* slope, std::int64_t c, GradientCoefficients<V>& k) {
  per_channel<kChannelsLast>(mean, c, k.mean);
  per_channel<kChannelsLast>(factor, c, k.factor);
  per_channel<kChannelsLast>(mean_dy, c, k.mean_dy);
  per_channel<kChannelsLast>(slope, c, k.slope);
}

// The V elements at `at`: dx = factor * (g - mean_dy - (x - mean) * slope); masked_dy (when given) = g.
template <typename T, int V, bool kAligned>
__device__ inline void input_gradient_vector(const T* x, const T* dy, const T* relu_output, T* dx, T* masked_dy,
                                             std::int64_t at, const GradientCoefficients<V>& k) {
  float v[V], grad[V];
  load<T, V, kAligned>(x + at, v);
  load_gradient<T, V, kAligned>(dy, relu_output, at, grad);
  if (masked_dy != nullptr) store<T, V, kAligned>(masked_dy + at, grad);
#pragma unroll
  for (int e = 0; e < V; ++e) v[e] = input_gradient(grad[e], v[e], k.mean[e], k.factor[e], k.mean_dy[e], k.slope[e]);
  store<T, V, kAligned>(dx + at, v);
}

// NCHW: input_gradient_vector over the whole tensor's vectors, a grid stride.
template <typename T, int V, bool kAligned>
__global__ void input_gradient_kernel(const T* x, const T* dy, const T* relu_output, T* dx, T* masked_dy, Geometry g,
                                      const float* mean, const float* factor, const float* mean_dy,
                                      const float* slope) {
  DPTRAIN_GRID_STRIDE(i, g.total_vectors) {
    GradientCoefficients<V> k;
    load_coefficients<false>(mean, factor, mean_dy, slope, channel_of(g, i), k);
    input_gradient_vector<T, V, kAligned>(x, dy, relu_output, dx, masked_dy, i * V, k);
  }
}

// NHWC: input_gradient_vector down the rows of one channel vector a thread (all_rows), its channels'
// coefficients loaded once.
template <typename T, int V, bool kAligned>
__global__ void input_gradient_rows_kernel(const T* x, const T* dy, const T* relu_output, T* dx, T* masked_dy,
                                           Geometry g, const float* mean, const float* factor, const float* mean_dy,
                                           const float* slope) {
  const RowsThread at = all_rows(g);
  if (at.column >= g.row_vectors) return;
  const std::int64_t c = at.column * V;
  GradientCoefficients<V> k;
  load_coefficients<true>(mean, factor, mean_dy, slope, c, k);
  for (std::int64_t row = at.row; row < at.last; row += at.step) {
    input_gradient_vector<T, V, kAligned>(x, dy, relu_output, dx, masked_dy, row * g.channels + c, k);
  }
}

// A vector width and whether its loads may be vector loads, as types for the kernel templates.
template <int V, bool kAligned>
struct Width {
  static constexpr int size = V;
  static constexpr bool aligned = kAligned;
};

// Calls launch(Width<V, aligned>{}) for geometry g's width; aligned when every pointer given is a
// multiple of the vector's bytes (null pointers, unused, do not count). Either layout's vectors start
// at a multiple of the width, so the pointers alone decide.
template <typename T, typename Launch>
void with_width(const Geometry& g, std::initializer_list<const void*> pointers, Launch&& launch) {
  constexpr int kWide = 16 / static_cast<int>(sizeof(T)), kNarrow = 8 / static_cast<int>(sizeof(T));
  const bool aligned = all_aligned(static_cast<std::size_t>(g.width) * sizeof(T), pointers);
  if (g.width == kWide) return aligned ? launch(Width<kWide, true>{}) : launch(Width<kWide, false>{});
  if (g.width == kNarrow) return aligned ? launch(Width<kNarrow, true>{}) : launch(Width<kNarrow, false>{});
  DPTRAIN_CHECK(g.width == 1, "batch norm: no kernel for vectors of ", g.width, " elements");
  return launch(Width<1, true>{});
}

// NHWC: the blocks across a row, each `tile` channel vectors.
unsigned row_tiles(const Geometry& g) { return static_cast<unsigned>((g.row_vectors + g.tile - 1) / g.tile); }

// The reductions' grid: (channels, groups) for NCHW, (tiles of channel vectors, groups) for NHWC.
dim3 reduction_grid(const Geometry& g) {
  return dim3(g.channels_last ? row_tiles(g) : static_cast<unsigned>(g.channels), static_cast<unsigned>(g.groups));
}

// NHWC element-wise grid: the row's tiles, and blocks down the rows for kMinLaneRows rows a lane (so
// that a thread's coefficient loads are few against its rows), at least 1 and at most 65535
// (gridDim.y's bound; the kernels stride past it).
dim3 rows_grid(const Geometry& g) {
  constexpr std::int64_t kMaxY = 65535;
  const std::int64_t rows_per_block = kThreads / g.tile * kMinLaneRows;
  const std::int64_t y = std::clamp<std::int64_t>((g.channel_units + rows_per_block - 1) / rows_per_block, 1, kMaxY);
  return dim3(row_tiles(g), static_cast<unsigned>(y));
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

// NHWC: the channel vectors of a reduction block, the fewest powers of two that hold a row's vectors,
// at most a warp's worth (then blocks of 8 lanes of 32 columns tile the row).
std::int64_t column_tile(std::int64_t row_vectors) {
  std::int64_t tile = 1;
  while (tile < row_vectors && tile < kWarp) tile *= 2;
  return tile;
}

Geometry geometry_of(const BatchNormShape& shape, DType type, const char* who) {
  DPTRAIN_CHECK(shape.samples >= 0 && shape.channels >= 0 && shape.plane >= 0, who, ": negative shape [", shape.samples,
                ", ", shape.channels, ", ", shape.plane, "]");
  DPTRAIN_CHECK(shape.channels <= INT_MAX, who, ": ", shape.channels, " channels are more than a grid holds");
  // NCHW: per-thread counts stay exact in float (under 2^24) for any channel up to 2^31 - 1 values.
  DPTRAIN_CHECK(shape.plane == 0 || shape.samples <= INT_MAX / shape.plane, who, ": ", shape.samples, " x ",
                shape.plane, " values per channel are more than these kernels take (2^31 - 1)");
  Geometry g;
  g.channels_last = shape.channels_last;
  g.channels = shape.channels;
  g.width = batch_norm_vector_width(shape, type);
  if (shape.channels_last) {
    g.row_vectors = g.channels / g.width;
    g.tile = column_tile(g.row_vectors);
    g.channel_units = shape.samples * shape.plane;
    g.unit_values = 1;
    g.total_vectors = g.channel_units * g.row_vectors;
  } else {
    g.plane_vectors = shape.plane / g.width;
    g.channel_units = shape.samples * g.plane_vectors;
    g.unit_values = g.width;
    g.total_vectors = g.channel_units * g.channels;
  }
  g.groups = batch_norm_groups(shape, type);
  g.group_units = g.channel_units > 0 ? (g.channel_units + g.groups - 1) / g.groups : 0;
  // NHWC: a thread's rows of a group; only a tensor far beyond any GPU's memory reaches this.
  DPTRAIN_CHECK(!shape.channels_last || g.group_units / (kThreads / g.tile) < kExactCount - kRowChunk, who, ": ",
                g.group_units, " rows a group are more than these kernels count exactly");
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
      if (g.channels_last) {
        normalise_rows_kernel<T, W::size, W::aligned><<<rows_grid(g), kThreads, 0, stream>>>(
            typed<T>(x), typed<T>(z), typed<T>(y), g, mean, factor, shift, activation);
      } else {
        normalise_kernel<T, W::size, W::aligned><<<grid_for(g.total_vectors), kThreads, 0, stream>>>(
            typed<T>(x), typed<T>(z), typed<T>(y), g, mean, factor, shift, activation);
      }
    });
  });
  DPTRAIN_CHECK_LAUNCH();
}
}  // namespace

int batch_norm_vector_width(const BatchNormShape& shape, DType type) {
  const auto bytes = element_bytes(type);
  const std::int64_t innermost = shape.channels_last ? shape.channels : shape.plane;
  for (const std::int64_t vector_bytes : {16, 8}) {
    const std::int64_t width = vector_bytes / bytes;
    if (width > 1 && innermost % width == 0) return static_cast<int>(width);
  }
  return 1;
}

std::int64_t batch_norm_groups(const BatchNormShape& shape, DType type) {
  constexpr std::int64_t kTargetBlocks = 1024, kMinGroupVectors = 2 * kThreads, kMaxGroups = 65535;
  const std::int64_t width = batch_norm_vector_width(shape, type);
  if (shape.channels <= 0) return 1;
  // The units each channel's values are walked in, the blocks a group takes, and the fewest units of
  // a group (NCHW: two vectors a thread; NHWC: kMinLaneRows rows a lane).
  std::int64_t units = 0, blocks_per_group = 0, min_group_units = 0;
  if (shape.channels_last) {
    const std::int64_t row_vectors = shape.channels / width, tile = column_tile(row_vectors);
    units = shape.samples * shape.plane;
    blocks_per_group = (row_vectors + tile - 1) / tile;
    min_group_units = kMinLaneRows * (kThreads / tile);
  } else {
    units = shape.samples * (shape.plane / width);
    blocks_per_group = shape.channels;
    min_group_units = kMinGroupVectors;
  }
  if (units <= 0) return 1;
  std::int64_t groups =
      std::clamp<std::int64_t>((kTargetBlocks + blocks_per_group - 1) / blocks_per_group, 1, kMaxGroups);
  groups = std::min(groups, std::max<std::int64_t>(1, units / min_group_units));
  // Equal groups of ceil(units / groups), and only as many as that needs: none is empty.
  const std::int64_t per_group = (units + groups - 1) / groups;
  return (units + per_group - 1) / per_group;
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
  DPTRAIN_CHECK(g.channel_units > 0, kWho, ": no values per channel to take statistics of");
  DPTRAIN_CHECK(workspace != nullptr, kWho, ": no workspace");
  const Workspace w = split(workspace, g);
  with_element_type(type, kWho, [&](auto element) {
    using T = decltype(element);
    with_width<T>(g, {x}, [&](auto width) {
      using W = decltype(width);
      if (g.channels_last) {
        moments_rows_kernel<T, W::size, W::aligned>
            <<<reduction_grid(g), kThreads, 0, stream>>>(typed<T>(x), g, w.partial_a, w.partial_b);
      } else {
        moments_kernel<T, W::size, W::aligned>
            <<<reduction_grid(g), kThreads, 0, stream>>>(typed<T>(x), g, w.partial_a, w.partial_b);
      }
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
  DPTRAIN_CHECK(g.channel_units > 0, kWho, ": no values per channel");
  DPTRAIN_CHECK(workspace != nullptr, kWho, ": no workspace");
  const Workspace w = split(workspace, g);
  with_element_type(type, kWho, [&](auto element) {
    using T = decltype(element);
    with_width<T>(g, {x, dy, relu_output}, [&](auto width) {
      using W = decltype(width);
      if (g.channels_last) {
        backward_sums_rows_kernel<T, W::size, W::aligned><<<reduction_grid(g), kThreads, 0, stream>>>(
            typed<T>(x), typed<T>(dy), typed<T>(relu_output), g, batch_mean, w.partial_a, w.partial_b);
      } else {
        backward_sums_kernel<T, W::size, W::aligned><<<reduction_grid(g), kThreads, 0, stream>>>(
            typed<T>(x), typed<T>(dy), typed<T>(relu_output), g, batch_mean, w.partial_a, w.partial_b);
      }
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
      if (g.channels_last) {
        input_gradient_rows_kernel<T, W::size, W::aligned>
            <<<rows_grid(g), kThreads, 0, stream>>>(typed<T>(x), typed<T>(dy), typed<T>(relu_output), typed<T>(dx),
                                                    typed<T>(masked_dy), g, batch_mean, w.factor, w.mean_dy, w.slope);
      } else {
        input_gradient_kernel<T, W::size, W::aligned><<<grid_for(g.total_vectors), kThreads, 0, stream>>>(
            typed<T>(x), typed<T>(dy), typed<T>(relu_output), typed<T>(dx), typed<T>(masked_dy), g, batch_mean,
            w.factor, w.mean_dy, w.slope);
      }
    });
  });
  DPTRAIN_CHECK_LAUNCH();
}

}  // namespace dptrain::cuda::kernels
