#include "dptrain/backend/cuda/check_cuda.hpp"

#include <string>

namespace dptrain::cuda::detail {

void throw_cuda(cudaError_t status, const char* call, const char* file, int line) {
  cudaGetLastError();  // clear the sticky non-fatal error so the next call does not report it again
  throw_call_error("CUDA", call, std::string(cudaGetErrorName(status)) + ": " + cudaGetErrorString(status), file, line);
}

void throw_cudnn(cudnnStatus_t status, const char* call, const char* file, int line) {
  throw_call_error("cuDNN", call, cudnnGetErrorString(status), file, line);
}

void throw_cublas(cublasStatus_t status, const char* call, const char* file, int line) {
  throw_call_error("cuBLAS", call, std::string(cublasGetStatusName(status)) + ": " + cublasGetStatusString(status),
                   file, line);
}

void throw_nccl(ncclResult_t status, const char* call, const char* file, int line) {
  throw_call_error("NCCL", call, ncclGetErrorString(status), file, line);
}

}  // namespace dptrain::cuda::detail
