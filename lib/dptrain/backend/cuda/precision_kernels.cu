// Conversions between f32 and the 16-bit types, and the fused unscale + overflow check of the
// reduced gradients. Memory-bound grid-stride loops.
#include "dptrain/backend/cuda/element.cuh"
#include "dptrain/backend/cuda/launch.cuh"
#include "dptrain/backend/cuda/precision_kernels.hpp"

namespace dptrain::cuda::kernels {
namespace {
template <typename From, typename To>
__global__ void convert_kernel(const From* src, To* dst, std::int64_t n) {
  DPTRAIN_GRID_STRIDE(i, n) dst[i] = from_float<To>(to_float(src[i]));
}

template <typename From, typename To>
void launch_convert(const void* src, void* dst, std::int64_t n, cudaStream_t stream) {
  convert_kernel<From, To><<<grid_for(n), kThreads, 0, stream>>>(static_cast<const From*>(src),
                                                                  static_cast<To*>(dst), n);
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

void scale_and_flag_nonfinite(float* x, std::int64_t n, float factor, int* nonfinite, cudaStream_t stream) {
  if (n == 0) return;
  scale_and_flag_kernel<<<grid_for(n), kThreads, 0, stream>>>(x, n, factor, nonfinite);
  DPTRAIN_CHECK_LAUNCH();
}

}  // namespace dptrain::cuda::kernels
