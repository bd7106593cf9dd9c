#pragma once
// Element types of our kernels: activations are f32, bf16 or f16 in memory and fp32 in arithmetic.
// Loads widen to float and stores round to nearest even, so a kernel templated on T computes exactly
// what its fp32 version computes and rounds once, on the store. T = float is the identity both ways.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <string>

#include "dptrain/core/dtype.hpp"
#include "dptrain/core/error.hpp"

namespace dptrain::cuda::kernels {

__device__ inline float to_float(float v) { return v; }
__device__ inline float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ inline float to_float(__half v) { return __half2float(v); }

template <typename T>
__device__ inline T from_float(float v);
template <>
__device__ inline float from_float<float>(float v) {
  return v;
}
template <>
__device__ inline __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}
template <>
__device__ inline __half from_float<__half>(float v) {
  return __float2half_rn(v);
}

// A launcher's void pointer as its element type's (T from with_element_type below).
template <typename T>
T* typed(void* p) {
  return static_cast<T*>(p);
}
template <typename T>
const T* typed(const void* p) {
  return static_cast<const T*>(p);
}

// Calls launch(T{}) with the element type of `type` (f32, bf16 or f16); `what` names the op in the
// error for any other type.
template <typename Launch>
void with_element_type(DType type, const char* what, Launch&& launch) {
  switch (type) {
    case DType::f32: return launch(float{});
    case DType::bf16: return launch(__nv_bfloat16{});
    case DType::f16: return launch(__half{});
    default: break;
  }
  throw Error(std::string(what) + ": no kernel for element type " + std::string(name_of(type)));
}

}  // namespace dptrain::cuda::kernels
