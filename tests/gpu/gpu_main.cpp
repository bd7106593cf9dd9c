// The Catch2 runner of the GPU tests: exits 77 (CTest: skipped) when this machine has no usable CUDA
// device (no GPU, or no driver: cudaGetDeviceCount's error counts as "no GPU"), so a CPU-only run
// reports them skipped, never passed.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>
#include <memory>
#include <string>

#include "dptrain/backend/cuda/cuda_backend.hpp"
#include "dptrain/backend/cuda/device_query.hpp"
#include "gpu/gpu_testing.hpp"

namespace dptrain::gpu_testing {
namespace {
std::unique_ptr<Backend> cpu_backend, gpu_backend;
}
Backend& cpu() { return *cpu_backend; }
Backend& gpu() { return *gpu_backend; }
}  // namespace dptrain::gpu_testing

int main(int argc, char** argv) {
  std::string why_not;
  if (!dptrain::cuda::gpu_usable(why_not)) {
    std::printf("SKIP: %s\n", why_not.c_str());
    return 77;
  }
  dptrain::gpu_testing::cpu_backend = dptrain::make_cpu_backend();
  dptrain::gpu_testing::gpu_backend = dptrain::make_cuda_backend(0);
  const int failed = Catch::Session().run(argc, argv);
  dptrain::gpu_testing::gpu_backend.reset();
  dptrain::gpu_testing::cpu_backend.reset();
  return failed;
}
