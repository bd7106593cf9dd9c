// Conversions between f32 and the 16-bit types, and the fused unscale + overflow check of the
// reduced gradients. Memory-bound grid-stride loops.
#include "dptrain/backend/cuda/element.cuh"
#include "dptrain/backend/cuda/launch.cuh"
#include "dptrain/backend/cuda/precision_kernels.hpp"
#include "dptrain/backend/cuda/vector_access.cuh"

namespace dptrain::cuda::kernels {
namespace {
template <typename From, typename To>
struct Convert {
  const From* src;
  To* dst;
  template <int V>
  __device__ void apply(std::int64_t at) const {
    float v[V];
    load<From, V>(src + at, v);
    store<To, V>(dst + at, v);
  }
};

// Four elements a thread where both addresses allow (16 bytes of f32, 8 of a 16-bit type).
template <typename From, typename To>
void launch_convert(const void* src, void* dst, std::int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  constexpr int kWide = 4;
  const Convert<From, To> op{static_cast<const From*>(src), static_cast<To*>(dst)};
  if (all_aligned(kWide * sizeof(From), {src}) && all_aligned(kWide * sizeof(To), {dst})) {
    map_kernel<kWide><<<grid_for(n / kWide + 1), kThreads, 0, stream>>>(n, op);
  } else {
    map_kernel<1><<<grid_for(n), kThreads, 0, stream>>>(n, op);
  }
  DPTRAIN_CHECK_LAUNCH();
}

template <typename From>
void convert_from(const void* src, void* dst, DType dst_type, std::int64_t n, cudaStream_t stream) {
  switch (dst_type) {
    case DType::f32: return launch_convert<From, float>(src, dst, n, stream);
    case DType::bf16: return launch_convert<From, __nv_bfloat16>(src, dst, n, stream);
    case DType::f16: return launch_convert<From, __half>(src, dst, n, stream);
    default: break;
  }
  throw Error(std::string("convert: no conversion to ") + std::string(name_of(dst_type)));
}

struct ChannelNormalisation {
  float mean[kMaxNormalisedChannels], stddev[kMaxNormalisedChannels];
};

// __fsub_rn / __fdiv_rn: IEEE round-to-nearest whatever the compile flags (no contraction, no fast
// division), so the floats are those of the host's (x - mean) / std.
// i runs over dst; with channels_last the source element of dst's (s, p, c) is NCHW's (s, c, p).
template <typename To>
__global__ void normalise_bytes_kernel(const std::uint8_t* src, To* dst, std::int64_t n, std::int64_t plane,
                                       int channels, ChannelNormalisation norm, bool channels_last) {
  DPTRAIN_GRID_STRIDE(i, n) {
    int c = 0;
    std::int64_t from = i;
    if (channels_last) {
      c = static_cast<int>(i % channels);
      const std::int64_t pixel = i / channels;  // s * plane + p
      from = ((pixel / plane) * channels + c) * plane + pixel % plane;
    } else {
      c = static_cast<int>((i / plane) % channels);
    }
    dst[i] = from_float<To>(__fdiv_rn(__fsub_rn(static_cast<float>(src[from]), norm.mean[c]), norm.stddev[c]));
  }
}

template <typename To>
void launch_normalise(const std::uint8_t* src, void* dst, std::int64_t n, std::int64_t plane, int channels,
                      const ChannelNormalisation& norm, bool channels_last, cudaStream_t stream) {
  normalise_bytes_kernel<To>
      <<<grid_for(n), kThreads, 0, stream>>>(src, static_cast<To*>(dst), n, plane, channels, norm, channels_last);
  DPTRAIN_CHECK_LAUNCH();
}

__global__ void scale_and_flag_kernel(float* x, std::int64_t n, float factor, int* nonfinite) {
  bool bad = false;
  DPTRAIN_GRID_STRIDE(i, n) {
    const float v = x[i] * factor;
    x[i] = v;
    bad = bad || !isfinite(v);
  }
  // Most threads see finite values: only the rare overflowing one writes (no atomics needed, any
  // writer stores the same 1).
  if (bad) *nonfinite = 1;
}
}  // namespace

void convert(const void* src, DType src_type, void* dst, DType dst_type, std::int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  switch (src_type) {
    case DType::f32: return convert_from<float>(src, dst, dst_type, n, stream);
    case DType::bf16: return convert_from<__nv_bfloat16>(src, dst, dst_type, n, stream);
    case DType::f16: return convert_from<__half>(src, dst, dst_type, n, stream);
    default: break;
  }
  throw Error(std::string("convert: no conversion from ") + std::string(name_of(src_type)));
}

void normalise_bytes(const std::uint8_t* src, void* dst, DType dst_type, std::int64_t n, std::int64_t plane,
                     int channels, const float* mean, const float* stddev, bool channels_last, cudaStream_t stream) {
  if (n == 0) return;
  if (channels < 1 || channels > kMaxNormalisedChannels || plane < 1) {
    throw Error("normalise_bytes: " + std::to_string(channels) + " channels of " + std::to_string(plane) +
                " pixels (1 to " + std::to_string(kMaxNormalisedChannels) + " channels)");
  }
  ChannelNormalisation norm{};
  for (int c = 0; c < channels; ++c) norm.mean[c] = mean[c], norm.stddev[c] = stddev[c];
  switch (dst_type) {
    case DType::f32: return launch_normalise<float>(src, dst, n, plane, channels, norm, channels_last, stream);
    case DType::bf16: return launch_normalise<__nv_bfloat16>(src, dst, n, plane, channels, norm, channels_last, stream);
    case DType::f16: return launch_normalise<__half>(src, dst, n, plane, channels, norm, channels_last, stream);
    default: break;
  }
  throw Error(std::string("normalise_bytes: no conversion to ") + std::string(name_of(dst_type)));
}

void scale_and_flag_nonfinite(float* x, std::int64_t n, float factor, int* nonfinite, cudaStream_t stream) {
  if (n == 0) return;
  scale_and_flag_kernel<<<grid_for(n), kThreads, 0, stream>>>(x, n, factor, nonfinite);
  DPTRAIN_CHECK_LAUNCH();
}

}  // namespace dptrain::cuda::kernels
