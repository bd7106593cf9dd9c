#pragma once
#include <string>

namespace dptrain::cuda {

// How many CUDA devices this process can use; 0 (not an error) on a machine without a GPU or driver.
int usable_device_count();

// Lines for `dptrain info`: CUDA runtime and driver, cuDNN, cuBLAS and NCCL versions, and each GPU.
std::string describe_cuda_stack();

}  // namespace dptrain::cuda
