#pragma once
#include <string>

namespace dptrain::cuda {

// What cudaGetDeviceCount said: the device count, or the error that stands for "no device here".
struct DeviceProbe {
  int count = 0;
  std::string error_name;  // "cudaErrorNoDevice", "cudaErrorInsufficientDriver", ...; empty on success
  std::string error_text;  // the runtime's own sentence for that error
  // "" when a device is there, else "cudaGetDeviceCount: cudaErrorNoDevice (no CUDA-capable device
  // is detected)", or "cudaGetDeviceCount found 0 devices".
  std::string reason() const;
};
// Never throws: every error of cudaGetDeviceCount (no driver, a driver too old for the runtime, a
// broken install) is a probe with count 0 and the error named.
DeviceProbe probe_devices();

// How many CUDA devices this process can use; 0 (not an error) on a machine without a GPU or driver.
int usable_device_count();

// Whether a GPU test can run here: false, with DeviceProbe::reason() (naming the cudaError) in
// `why_not`, when there is no device or cudaGetDeviceCount fails in any way.
bool gpu_usable(std::string& why_not);

// Lines for `dptrain info`: CUDA runtime and driver, cuBLAS, cuDNN and NCCL versions with the file
// each was loaded from, and each GPU (or, with none, the cudaError that says why).
std::string describe_cuda_stack();

// What tuned choices (cuDNN's convolution algorithms) made on GPU `device` are valid for: its model
// and compute capability, the cuDNN version loaded, and the determinism policy, in words ("NVIDIA
// H200 (sm_90), cuDNN 9.19.0, deterministic algorithms"), as a refusal names them.
std::string tuning_fingerprint(int device, bool deterministic);

}  // namespace dptrain::cuda
