#include "dptrain/backend/cuda/device_query.hpp"

#include <sstream>

#include "dptrain/backend/cuda/check_cuda.hpp"

namespace dptrain::cuda {

int usable_device_count() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status == cudaErrorNoDevice || status == cudaErrorInsufficientDriver) {
    cudaGetLastError();
    return 0;
  }
  CUDA_CHECK(status);
  return count;
}

bool gpu_usable(std::string& why_not) {
  try {
    if (usable_device_count() > 0) return true;
    why_not = "no CUDA device on this machine";
  } catch (const std::exception& e) {
    why_not = std::string("no usable CUDA device (") + e.what() + ")";
  }
  return false;
}

std::string describe_cuda_stack() {
  std::ostringstream out;
  int runtime = 0, driver = 0;
  CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
  CUDA_CHECK(cudaDriverGetVersion(&driver));
  int nccl = 0;
  NCCL_CHECK(ncclGetVersion(&nccl));
  out << "CUDA     runtime " << runtime / 1000 << "." << (runtime % 1000) / 10 << ", driver "
      << (driver ? std::to_string(driver / 1000) + "." + std::to_string((driver % 1000) / 10) : "none") << "\n";
  out << "cuDNN    " << cudnnGetVersion() << "\n";
  out << "NCCL     " << nccl << "\n";
  const int devices = usable_device_count();
  out << "GPUs     " << devices << "\n";
  for (int d = 0; d < devices; ++d) {
    cudaDeviceProp prop{};
    CUDA_CHECK(cudaGetDeviceProperties(&prop, d));
    out << "  cuda:" << d << "  " << prop.name << ", sm_" << prop.major << prop.minor << ", "
        << prop.totalGlobalMem / (1024 * 1024) << " MiB\n";
  }
  return out.str();
}

}  // namespace dptrain::cuda
