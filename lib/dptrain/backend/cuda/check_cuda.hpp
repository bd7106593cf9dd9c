#pragma once
// DPTRAIN_CUDA_CHECK, DPTRAIN_CUDNN_CHECK, DPTRAIN_CUBLAS_CHECK, DPTRAIN_NCCL_CHECK: one macro per library, each
// turning a failed call into dptrain::Error with the library's own error string, the call, the file and the line.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <nccl.h>

#include "dptrain/core/error.hpp"

namespace dptrain::cuda::detail {
[[noreturn]] void throw_cuda(cudaError_t status, const char* call, const char* file, int line);
[[noreturn]] void throw_cudnn(cudnnStatus_t status, const char* call, const char* file, int line);
[[noreturn]] void throw_cublas(cublasStatus_t status, const char* call, const char* file, int line);
[[noreturn]] void throw_nccl(ncclResult_t status, const char* call, const char* file, int line);
}  // namespace dptrain::cuda::detail

#define DPTRAIN_LIBRARY_CHECK_(call, type, ok, thrower)                               \
  do {                                                                                \
    const type dptrain_status_ = (call);                                              \
    if (dptrain_status_ != (ok)) thrower(dptrain_status_, #call, __FILE__, __LINE__); \
  } while (0)

#define DPTRAIN_CUDA_CHECK(call) \
  DPTRAIN_LIBRARY_CHECK_(call, cudaError_t, cudaSuccess, ::dptrain::cuda::detail::throw_cuda)
#define DPTRAIN_CUDNN_CHECK(call) \
  DPTRAIN_LIBRARY_CHECK_(call, cudnnStatus_t, CUDNN_STATUS_SUCCESS, ::dptrain::cuda::detail::throw_cudnn)
#define DPTRAIN_CUBLAS_CHECK(call) \
  DPTRAIN_LIBRARY_CHECK_(call, cublasStatus_t, CUBLAS_STATUS_SUCCESS, ::dptrain::cuda::detail::throw_cublas)
#define DPTRAIN_NCCL_CHECK(call) \
  DPTRAIN_LIBRARY_CHECK_(call, ncclResult_t, ncclSuccess, ::dptrain::cuda::detail::throw_nccl)
