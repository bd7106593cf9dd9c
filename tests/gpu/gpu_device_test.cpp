// The GPU smoke test: a device is found, memory round-trips through it, and cuDNN, cuBLAS and NCCL
// initialise on it. Exits 77 (CTest: skipped) when this machine has no usable GPU.
#include <cstdio>
#include <string>
#include <vector>

#include "dptrain/backend/cuda/check_cuda.hpp"
#include "dptrain/backend/cuda/device_query.hpp"

int main() {
  std::string why_not;
  if (!dptrain::cuda::gpu_usable(why_not)) {
    std::printf("SKIP: no usable GPU: %s\n", why_not.c_str());
    return 77;
  }
  try {
    const int devices = dptrain::cuda::usable_device_count();
    DPTRAIN_CUDA_CHECK(cudaSetDevice(0));
    std::vector<float> host(1 << 20), back(host.size());
    for (std::size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>(i) * 0.5f;
    float* device = nullptr;
    DPTRAIN_CUDA_CHECK(cudaMalloc(&device, host.size() * sizeof(float)));
    DPTRAIN_CUDA_CHECK(cudaMemcpy(device, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice));
    DPTRAIN_CUDA_CHECK(cudaMemcpy(back.data(), device, host.size() * sizeof(float), cudaMemcpyDeviceToHost));
    DPTRAIN_CUDA_CHECK(cudaFree(device));
    if (back != host) {
      std::puts("FAIL: data changed on its way through the GPU");
      return 1;
    }
    cudnnHandle_t cudnn = nullptr;
    DPTRAIN_CUDNN_CHECK(cudnnCreate(&cudnn));
    DPTRAIN_CUDNN_CHECK(cudnnDestroy(cudnn));
    cublasHandle_t cublas = nullptr;
    DPTRAIN_CUBLAS_CHECK(cublasCreate(&cublas));
    DPTRAIN_CUBLAS_CHECK(cublasDestroy(cublas));
    ncclComm_t comm = nullptr;
    int device_list[1] = {0};
    DPTRAIN_NCCL_CHECK(ncclCommInitAll(&comm, 1, device_list));
    DPTRAIN_NCCL_CHECK(ncclCommDestroy(comm));
    std::printf("PASS: %d device(s); memory, cuDNN, cuBLAS and NCCL work on cuda:0\n", devices);
    return 0;
  } catch (const std::exception& e) {
    std::printf("FAIL: %s\n", e.what());
    return 1;
  }
}
