#include "dptrain/backend/cuda/device_query.hpp"

#include <dlfcn.h>
#include <link.h>

#include <cstdlib>
#include <sstream>

#include "dptrain/backend/cuda/check_cuda.hpp"

namespace dptrain::cuda {
namespace {
// The file a loaded library came from, found through one of its symbols: a library on a machine
// may come from the toolkit, the driver's folder or a Python wheel, and a log must say which.
std::string file_of(const char* symbol) {
  void* address = dlsym(RTLD_DEFAULT, symbol);
  Dl_info info{};
  if (address == nullptr || dladdr(address, &info) == 0 || info.dli_fname == nullptr) return "not loaded";
  return info.dli_fname;
}

// The driver library is loaded by the runtime with dlopen, so it is found by name, not by symbol.
std::string driver_file() {
  void* handle = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (handle == nullptr) return "not loaded";
  link_map* map = nullptr;
  std::string file = "not loaded";
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr) file = map->l_name;
  dlclose(handle);
  return file;
}

// 91900 -> "9.19.0" (cuDNN 9 and NCCL 2.9+ encode major*10000 + minor*100 + patch).
std::string dotted(int version) {
  return std::to_string(version / 10000) + "." + std::to_string((version / 100) % 100) + "." +
         std::to_string(version % 100);
}
// 13000 -> "13.0" (the CUDA runtime and driver encode major*1000 + minor*10).
std::string cuda_version(int version) {
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}
}  // namespace

std::string DeviceProbe::reason() const {
  if (count > 0) return "";
  if (error_name.empty()) return "cudaGetDeviceCount found 0 devices";
  return "cudaGetDeviceCount: " + error_name + " (" + error_text + ")";
}

DeviceProbe probe_devices() {
  DeviceProbe probe;
  const cudaError_t status = cudaGetDeviceCount(&probe.count);
  if (status != cudaSuccess) {
    probe.count = 0;
    probe.error_name = cudaGetErrorName(status);
    probe.error_text = cudaGetErrorString(status);
    cudaGetLastError();  // the error is reported here, not left for the next call to trip on
  }
  return probe;
}

int usable_device_count() { return probe_devices().count; }

bool gpu_usable(std::string& why_not) {
  const DeviceProbe probe = probe_devices();
  if (probe.count > 0) return true;
  why_not = probe.reason();
  return false;
}

std::string tuning_fingerprint(int device, bool deterministic) {
  cudaDeviceProp properties{};
  DPTRAIN_CUDA_CHECK(cudaGetDeviceProperties(&properties, device));
  return std::string(properties.name) + " (sm_" + std::to_string(properties.major) + std::to_string(properties.minor) +
         "), cuDNN " + dotted(static_cast<int>(cudnnGetVersion())) + ", " +
         (deterministic ? "deterministic algorithms" : "any algorithm");
}

std::string describe_cuda_stack() {
  std::ostringstream out;
  const DeviceProbe probe = probe_devices();  // first: it makes the runtime load the driver
  int runtime = 0, driver = 0;
  DPTRAIN_CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
  DPTRAIN_CUDA_CHECK(cudaDriverGetVersion(&driver));
  int nccl = 0;
  DPTRAIN_NCCL_CHECK(ncclGetVersion(&nccl));
  int cublas_major = 0, cublas_minor = 0, cublas_patch = 0;
  DPTRAIN_CUBLAS_CHECK(cublasGetProperty(MAJOR_VERSION, &cublas_major));
  DPTRAIN_CUBLAS_CHECK(cublasGetProperty(MINOR_VERSION, &cublas_minor));
  DPTRAIN_CUBLAS_CHECK(cublasGetProperty(PATCH_LEVEL, &cublas_patch));
  out << "CUDA     runtime " << cuda_version(runtime) << " (" << file_of("cudaGetDeviceCount") << "), driver "
      << (driver ? cuda_version(driver) + " (" + driver_file() + ")" : std::string("none")) << "\n";
  out << "cuBLAS   " << cublas_major << "." << cublas_minor << "." << cublas_patch << " (" << file_of("cublasCreate_v2")
      << ")\n";
  out << "cuDNN    " << dotted(static_cast<int>(cudnnGetVersion())) << ", built with " << CUDNN_MAJOR << "."
      << CUDNN_MINOR << "." << CUDNN_PATCHLEVEL << " (" << file_of("cudnnGetVersion") << ")\n";
  out << "NCCL     " << dotted(nccl) << " (" << file_of("ncclGetVersion") << ")\n";
  // dptrain leaves the choice to the user; the warm-up step loads every kernel before overlap starts.
  const char* loading = std::getenv("CUDA_MODULE_LOADING");
  out << "modules  CUDA_MODULE_LOADING=" << (loading != nullptr ? loading : "unset (CUDA's default: lazy)") << "\n";
  if (probe.count == 0) {
    out << "GPUs     none: " << probe.reason() << "\n";
    return out.str();
  }
  out << "GPUs     " << probe.count << "\n";
  for (int d = 0; d < probe.count; ++d) {
    cudaDeviceProp prop{};
    DPTRAIN_CUDA_CHECK(cudaGetDeviceProperties(&prop, d));
    out << "  cuda:" << d << "  " << prop.name << ", sm_" << prop.major << prop.minor << ", "
        << prop.totalGlobalMem / (1024 * 1024) << " MiB, " << prop.multiProcessorCount << " SMs\n";
  }
  return out.str();
}

}  // namespace dptrain::cuda
