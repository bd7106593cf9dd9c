#pragma once
#include <string>

namespace dptrain::cuda {

// How many CUDA devices this process can use; 0 (not an error) on a machine without a GPU or driver.
int usable_device_count();

// Whether a GPU test can run here: false, with the reason in `why_not`, when there is no device or
// cudaGetDeviceCount fails in any way (no driver, a driver too old for the runtime, a broken install).
bool gpu_usable(std::string& why_not);

// Lines for `dptrain info`: CUDA runtime and driver, cuDNN, cuBLAS and NCCL versions, and each GPU.
std::string describe_cuda_stack();

}  // namespace dptrain::cuda
