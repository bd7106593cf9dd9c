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
    CUDA_CHECK(cudaSetDevice(0));
    std::vector<float> host(1 << 20), back(host.size());
    for (std::size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>(i) * 0.5f;
    float* device = nullptr;
    CUDA_CHECK(cudaMalloc(&device, host.size() * sizeof(float)));
    CUDA_CHECK(cudaMemcpy(device, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(back.data(), device, host.size() * sizeof(float), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaFree(device));
    if (back != host) {
      std::puts("FAIL: data changed on its way through the GPU");
      return 1;
    }
    cudnnHandle_t cudnn = nullptr;
    CUDNN_CHECK(cudnnCreate(&cudnn));
    CUDNN_CHECK(cudnnDestroy(cudnn));
    cublasHandle_t cublas = nullptr;
    CUBLAS_CHECK(cublasCreate(&cublas));
    CUBLAS_CHECK(cublasDestroy(cublas));
    ncclComm_t comm = nullptr;
    int device_list[1] = {0};
    NCCL_CHECK(ncclCommInitAll(&comm, 1, device_list));
    NCCL_CHECK(ncclCommDestroy(comm));
    std::printf("PASS: %d device(s); memory, cuDNN, cuBLAS and NCCL work on cuda:0\n", devices);
    return 0;
  } catch (const std::exception& e) {
    std::printf("FAIL: %s\n", e.what());
    return 1;
  }
}
