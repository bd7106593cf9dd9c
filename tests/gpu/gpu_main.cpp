// The Catch2 runner of the GPU tests: exits 77 (CTest: skipped) when this machine has no usable CUDA
// device (no GPU, or no driver: cudaGetDeviceCount's error counts as "no GPU"), so a CPU-only run
// reports them skipped, never passed.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>

#include "dptrain/backend/cuda/cuda_backend.hpp"
#include "dptrain/backend/cuda/device_query.hpp"
#include "dptrain/core/error.hpp"
#include "gpu/gpu_testing.hpp"

namespace dptrain::gpu_testing {
namespace {
std::unique_ptr<Backend> cpu_backend, gpu_backend, bf16_backend, fp16_backend;
bool bf16_tried = false;
}  // namespace
Backend& cpu() { return *cpu_backend; }
Backend& gpu() { return *gpu_backend; }
Backend* gpu(Precision precision) {
  switch (precision) {
    case Precision::fp32: return gpu_backend.get();
    case Precision::fp16:
      if (!fp16_backend) fp16_backend = make_cuda_backend(0, Precision::fp16);
      return fp16_backend.get();
    case Precision::bf16:
      if (!bf16_tried) {
        bf16_tried = true;
        try {
          bf16_backend = make_cuda_backend(0, Precision::bf16);
        } catch (const Error& e) {  // a GPU before compute capability 8.0
          std::printf("no bf16 comparisons: %s\n", e.what());
        }
      }
      return bf16_backend.get();
  }
  return nullptr;
}
}  // namespace dptrain::gpu_testing

int main(int argc, char** argv) {
  // Line by line into gpu-check's log files, so a test its time limit kills keeps what it printed.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  std::string why_not;
  if (!dptrain::cuda::gpu_usable(why_not)) {
    std::printf("SKIP: no usable GPU: %s\n", why_not.c_str());
    return 77;
  }
  dptrain::gpu_testing::cpu_backend = dptrain::make_cpu_backend();
  dptrain::gpu_testing::gpu_backend = dptrain::make_cuda_backend(0);
  const int failed = Catch::Session().run(argc, argv);
  dptrain::gpu_testing::print_worst_agreement();
  // What cuDNN's algorithm searches cost in this run: scripts/gpu-check.sh gives this test a time cap
  // and shows these lines beside it.
  using dptrain::gpu_testing::gpu_backend, dptrain::gpu_testing::bf16_backend, dptrain::gpu_testing::fp16_backend;
  for (const auto& [name, backend] : {std::pair{"fp32", gpu_backend.get()}, std::pair{"bf16", bf16_backend.get()},
                                      std::pair{"fp16", fp16_backend.get()}}) {
    if (!backend) continue;
    const dptrain::AlgorithmSearchStats stats = backend->algorithm_search();
    std::printf("algorithm searches %s: %d searches in %.1f s, %d reused, %d without a deterministic algorithm\n", name,
                stats.searches, stats.seconds, stats.reused, stats.nondeterministic_fallbacks);
  }
  dptrain::gpu_testing::bf16_backend.reset();
  dptrain::gpu_testing::fp16_backend.reset();
  dptrain::gpu_testing::gpu_backend.reset();
  dptrain::gpu_testing::cpu_backend.reset();
  return failed;
}
