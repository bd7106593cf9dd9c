// Batch normalization, CPU against GPU in every precision. In bf16, cuDNN's native path (kept only where
// the probe finds it agrees with the f32 path: lib/dptrain/backend/cuda/batch_norm_bf16.hpp) and the
// f32-copies fallback both agree with the CPU, and "native" required where the probe failed is an
// error that says so. Prints the probe's verdict and the time of both paths on ResNet-50's largest
// batch norm, for the GPU check's log.
#include <cuda_runtime.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "dptrain/backend/cuda/batch_norm_bf16.hpp"
#include "dptrain/backend/cuda/context.hpp"
#include "dptrain/core/error.hpp"
#include "gpu/gpu_testing.hpp"
#include "support/tensor_testing.hpp"

namespace dptrain {
namespace {
using gpu_testing::activation;
using gpu_testing::expect_agreement_in_all_precisions;
using gpu_testing::on;
using gpu_testing::on_activation;
using testing::random_tensor;

// DPTRAIN_BF16_BATCH_NORM set for one scope; the previous value (or none) comes back after.
class ScopedPolicy {
 public:
  explicit ScopedPolicy(const char* value) {
    if (const char* old = std::getenv(kName)) old_ = old;
    had_ = std::getenv(kName) != nullptr;
    REQUIRE(::setenv(kName, value, 1) == 0);
  }
  ~ScopedPolicy() { had_ ? ::setenv(kName, old_.c_str(), 1) : ::unsetenv(kName); }
  ScopedPolicy(const ScopedPolicy&) = delete;
  ScopedPolicy& operator=(const ScopedPolicy&) = delete;

 private:
  static constexpr const char* kName = "DPTRAIN_BF16_BATCH_NORM";
  std::string old_;
  bool had_ = false;
};

// Forward (training and inference) and backward of one batch norm, CPU against every GPU precision.
void check_batch_norm(const Shape& input) {
  BatchNormSpec spec;
  spec.input = input;
  const Shape channel{input[1]};
  const Tensor x = random_tensor(input, 21, -2.f, 3.f), scale = random_tensor(channel, 22, 0.5f, 1.5f);
  const Tensor shift = random_tensor(channel, 23), dy = random_tensor(input, 24);
  const Tensor running_mean = random_tensor(channel, 25), running_variance = random_tensor(channel, 26, 0.5f, 2.f);
  expect_agreement_in_all_precisions(
      [&](Backend& be) {
        auto plan = be.make_batch_norm(spec);
        Tensor X = on_activation(be, x), S = on(be, scale), B = on(be, shift), DY = on_activation(be, dy);
        Tensor RM = on(be, running_mean), RV = on(be, running_variance);
        Tensor y = activation(be, input), mean = be.allocate(channel), variance = be.allocate(channel);
        Tensor dx = activation(be, input), dscale = be.allocate(channel), dshift = be.allocate(channel);
        Tensor inference = activation(be, input);
        plan->forward_training(X, S, B, y, mean, variance);
        plan->backward(X, DY, S, B, mean, variance, dx, dscale, dshift);
        plan->forward_inference(X, S, B, RM, RV, inference);
        return gpu_testing::to_host(be, {&y, &mean, &variance, &dx, &dscale, &dshift, &inference});
      },
      {"output", "batch mean", "batch variance (biased)", "input gradient", "scale gradient", "shift gradient",
       "inference output"});
}

// Milliseconds per forward + backward of a bf16 batch norm of `input` made under the current policy.
double milliseconds_per_pass(Backend& bf16, const Shape& input) {
  BatchNormSpec spec;
  spec.input = input;
  const Shape channel{input[1]};
  auto plan = bf16.make_batch_norm(spec);
  Tensor x = activation(bf16, input), dy = activation(bf16, input), y = activation(bf16, input);
  Tensor dx = activation(bf16, input);
  bf16.fill(x, 0.5f);
  bf16.fill(dy, 0.25f);
  const Tensor scale = on(bf16, random_tensor(channel, 27, 0.5f, 1.5f)), shift = on(bf16, random_tensor(channel, 28));
  Tensor mean = bf16.allocate(channel), variance = bf16.allocate(channel);
  Tensor dscale = bf16.allocate(channel), dshift = bf16.allocate(channel);
  const auto pass = [&] {
    plan->forward_training(x, scale, shift, y, mean, variance);
    plan->backward(x, dy, scale, shift, mean, variance, dx, dscale, dshift);
  };
  pass();  // the first call allocates the scratch
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  constexpr int kPasses = 10;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kPasses; ++i) pass();
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() / kPasses;
}
}  // namespace

TEST_CASE("batch normalization: CPU and GPU agree", "[gpu][batch_norm]") {
  check_batch_norm(Shape{4, 8, 5, 5});
  check_batch_norm(Shape{2, 3, 1, 7});  // one row per image: m = 14 values per channel
}

TEST_CASE("bf16 batch norm: native where the probe passes, f32 copies otherwise, both agree with the CPU",
          "[gpu][batch_norm][bf16]") {
  Backend* bf16 = gpu_testing::gpu(Precision::bf16);
  if (bf16 == nullptr) {
    WARN("this GPU has no bf16: nothing to check");
    return;
  }
  auto context = std::make_shared<cuda::CudaContext>(0, DType::bf16);
  const cuda::Bf16BatchNormProbe probe = cuda::probe_bf16_batch_norm(*context);
  std::printf("bf16 batch norm: cuDNN's native path %s: %s\n", probe.native ? "passes" : "fails", probe.detail.c_str());
  CHECK_FALSE(probe.detail.empty());
  const Shape shapes[] = {Shape{4, 8, 5, 5}, Shape{8, 64, 14, 14}};
  for (const char* policy : {"f32", "auto"}) {
    INFO("DPTRAIN_BF16_BATCH_NORM=" << policy);
    const ScopedPolicy scoped(policy);
    for (const Shape& shape : shapes) check_batch_norm(shape);
  }
  {
    const ScopedPolicy scoped("native");
    if (probe.native) {
      for (const Shape& shape : shapes) check_batch_norm(shape);
    } else {
      BatchNormSpec spec;
      spec.input = shapes[0];
      CHECK_THROWS_WITH(bf16->make_batch_norm(spec),
                        Catch::Contains("DPTRAIN_BF16_BATCH_NORM=native") && Catch::Contains(probe.detail));
    }
  }
  // ResNet-50's largest batch norm (after conv1, batch 64): what the native path saves, for the log.
  const Shape resnet{64, 64, 112, 112};
  double copies = 0, automatic = 0;
  {
    const ScopedPolicy scoped("f32");
    copies = milliseconds_per_pass(*bf16, resnet);
  }
  {
    const ScopedPolicy scoped("auto");
    automatic = milliseconds_per_pass(*bf16, resnet);
  }
  std::printf("bf16 batch norm %s forward+backward: %.3f ms on f32 copies, %.3f ms %s (%.2fx)\n",
              resnet.to_string().c_str(), copies, automatic, probe.native ? "native" : "(copies again)",
              copies / automatic);
}

}  // namespace dptrain
