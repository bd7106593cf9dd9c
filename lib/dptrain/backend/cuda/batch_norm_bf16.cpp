#include "dptrain/backend/cuda/batch_norm_bf16.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "dptrain/backend/cuda/descriptors.hpp"
#include "dptrain/backend/cuda/kernels.hpp"
#include "dptrain/backend/cuda/precision_kernels.hpp"
#include "dptrain/core/error.hpp"

namespace dptrain::cuda {
namespace {
constexpr cudnnBatchNormMode_t kMode = CUDNN_BATCHNORM_SPATIAL;
constexpr double kEpsilon = 1e-5;

// What one path computes: the forward pass's output and batch statistics, and the backward pass's
// gradients, as f32 on the host (y and dx rounded to bf16 on both paths, so they compare at bf16's
// granularity).
struct PathResult {
  cudnnStatus_t status = CUDNN_STATUS_SUCCESS;
  const char* failed_call = "";
  std::vector<float> y, mean, variance, dx, dscale, dshift;
};

std::vector<float> download(CudaContext& ctx, const Tensor& t) {
  std::vector<float> host(static_cast<std::size_t>(t.numel()));
  DPTRAIN_CUDA_CHECK(cudaMemcpyAsync(host.data(), t.raw(), t.bytes(), cudaMemcpyDeviceToHost, ctx.stream()));
  DPTRAIN_CUDA_CHECK(cudaStreamSynchronize(ctx.stream()));
  return host;
}

Tensor upload(CudaContext& ctx, const Shape& shape, const std::vector<float>& host) {
  Tensor t = ctx.allocate(shape, DType::f32);
  DPTRAIN_CUDA_CHECK(cudaMemcpyAsync(t.raw(), host.data(), t.bytes(), cudaMemcpyHostToDevice, ctx.stream()));
  DPTRAIN_CUDA_CHECK(cudaStreamSynchronize(ctx.stream()));  // `host` may go after this
  return t;
}

// f32 `t` rounded to bf16 and back, in place.
void round_to_bf16(CudaContext& ctx, Tensor& t) {
  Tensor narrow = ctx.allocate(t.shape(), DType::bf16);
  kernels::convert(t.raw(), DType::f32, narrow.raw(), DType::bf16, t.numel(), ctx.stream());
  kernels::convert(narrow.raw(), DType::bf16, t.raw(), DType::f32, t.numel(), ctx.stream());
}

// Forward (training) and backward of spatial batch norm with data of `type` (f32 or bf16) on inputs
// given in f32; the per-channel tensors are f32 on both paths, as cuDNN requires for 16-bit data.
PathResult run_path(CudaContext& ctx, const Shape& shape, DType type, const Tensor& x32, const Tensor& dy32,
                    const Tensor& scale, const Tensor& shift) {
  PathResult result;
  const Shape channel{shape[1]};
  const TensorDescriptor data_desc = nchw_descriptor(shape, type, "batch-norm probe");
  const TensorDescriptor channel_desc = channel_descriptor(shape[1]);
  Tensor x = ctx.allocate(shape, type), dy = ctx.allocate(shape, type);
  Tensor y = ctx.allocate(shape, type), dx = ctx.allocate(shape, type);
  kernels::convert(x32.raw(), DType::f32, x.raw(), type, x.numel(), ctx.stream());
  kernels::convert(dy32.raw(), DType::f32, dy.raw(), type, dy.numel(), ctx.stream());
  Tensor mean = ctx.allocate(channel, DType::f32), variance = ctx.allocate(channel, DType::f32);
  Tensor inverse_std = ctx.allocate(channel, DType::f32);
  Tensor dscale = ctx.allocate(channel, DType::f32), dshift = ctx.allocate(channel, DType::f32);
  DPTRAIN_CUDA_CHECK(cudaMemsetAsync(mean.raw(), 0, mean.bytes(), ctx.stream()));
  DPTRAIN_CUDA_CHECK(cudaMemsetAsync(variance.raw(), 0, variance.bytes(), ctx.stream()));
  const float one = 1.f, zero = 0.f;
  // The plan's own calls (batch_norm.cpp): a running average with factor 1 is the batch's statistics.
  result.status = cudnnBatchNormalizationForwardTraining(
      ctx.cudnn(), kMode, &one, &zero, data_desc, x.raw(), data_desc, y.raw(), channel_desc, scale.raw(), shift.raw(),
      /*exponentialAverageFactor=*/1.0, mean.raw(), variance.raw(), kEpsilon, nullptr, nullptr);
  if (result.status != CUDNN_STATUS_SUCCESS) {
    result.failed_call = "cudnnBatchNormalizationForwardTraining";
    return result;
  }
  kernels::inverse_std(device_floats(variance), static_cast<float>(kEpsilon), device_floats(inverse_std), shape[1],
                       ctx.stream());
  result.status = cudnnBatchNormalizationBackward(ctx.cudnn(), kMode, &one, &zero, &one, &zero, data_desc, x.raw(),
                                                  data_desc, dy.raw(), data_desc, dx.raw(), channel_desc, scale.raw(),
                                                  dscale.raw(), dshift.raw(), kEpsilon, mean.raw(), inverse_std.raw());
  if (result.status != CUDNN_STATUS_SUCCESS) {
    result.failed_call = "cudnnBatchNormalizationBackward";
    return result;
  }
  Tensor y32 = ctx.allocate(shape, DType::f32), dx32 = ctx.allocate(shape, DType::f32);
  kernels::convert(y.raw(), type, y32.raw(), DType::f32, y.numel(), ctx.stream());
  kernels::convert(dx.raw(), type, dx32.raw(), DType::f32, dx.numel(), ctx.stream());
  if (type == DType::f32) {
    round_to_bf16(ctx, y32);
    round_to_bf16(ctx, dx32);
  }
  result.y = download(ctx, y32);
  result.dx = download(ctx, dx32);
  result.mean = download(ctx, mean);
  result.variance = download(ctx, variance);
  result.dscale = download(ctx, dscale);
  result.dshift = download(ctx, dshift);
  return result;
}

// The largest |a - b| over `allowed(b) = relative * |b| + absolute * max|b|`; above 1 fails (NaN too).
double worst_ratio(const std::vector<float>& a, const std::vector<float>& b, double relative, double absolute) {
  double largest = 0;
  for (float v : b) largest = std::max(largest, static_cast<double>(std::fabs(v)));
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double allowed = relative * std::fabs(b[i]) + absolute * largest + 1e-30;
    const double ratio = std::fabs(static_cast<double>(a[i]) - b[i]) / allowed;
    if (std::isnan(ratio)) return ratio;
    worst = std::max(worst, ratio);
  }
  return worst;
}

// Inputs whose values bf16 holds exactly (small multiples of 1/16), so both paths see the same data;
// statistics differ per channel.
std::vector<float> probe_values(const Shape& shape, int salt) {
  std::vector<float> values(static_cast<std::size_t>(shape.numel()));
  const std::int64_t plane = shape[2] * shape[3];
  for (std::size_t i = 0; i < values.size(); ++i) {
    const auto channel = static_cast<std::int64_t>(i) / plane % shape[1];
    const auto draw = static_cast<std::int64_t>((i * 2654435761u + static_cast<std::size_t>(salt) * 97u) % 61u);
    values[i] = static_cast<float>(draw - 30 + 8 * (channel % 5)) / 16.f;
  }
  return values;
}

// One shape: native bf16 against the f32 path; empty when they agree, else why not. `worst` collects
// the largest ratio of difference to tolerance seen.
std::string compare_paths(CudaContext& ctx, const Shape& shape, double& worst) {
  const std::vector<float> x_host = probe_values(shape, 1), dy_host = probe_values(shape, 2);
  std::vector<float> scale_host(static_cast<std::size_t>(shape[1])), shift_host(scale_host.size());
  for (std::size_t c = 0; c < scale_host.size(); ++c) {
    scale_host[c] = 0.5f + 0.25f * static_cast<float>(c % 4);
    shift_host[c] = -0.5f + 0.125f * static_cast<float>(c % 8);
  }
  const Tensor x32 = upload(ctx, shape, x_host), dy32 = upload(ctx, shape, dy_host);
  const Tensor scale = upload(ctx, Shape{shape[1]}, scale_host), shift = upload(ctx, Shape{shape[1]}, shift_host);
  const PathResult reference = run_path(ctx, shape, DType::f32, x32, dy32, scale, shift);
  if (reference.status != CUDNN_STATUS_SUCCESS) {
    detail::throw_cudnn(reference.status, reference.failed_call, __FILE__, __LINE__);  // the f32 path must work
  }
  PathResult native = run_path(ctx, shape, DType::bf16, x32, dy32, scale, shift);
  if (native.status != CUDNN_STATUS_SUCCESS) {
    (void)cudaGetLastError();  // a launch error cuDNN reported as its status must not linger
    return std::string(native.failed_call) + " on BFLOAT16 data returned " + cudnnGetErrorString(native.status);
  }
  // y and dx: both rounded to bf16 once, so two roundings apart at most (2^-7 relative), plus room for
  // another summation order. Statistics and per-channel gradients are f32 sums over the same values.
  struct Check {
    const char* name;
    const std::vector<float>& got;
    const std::vector<float>& want;
    double relative, absolute;
  };
  const Check checks[] = {{"output", native.y, reference.y, 1.0 / 64, 1.0 / 256},
                          {"batch mean", native.mean, reference.mean, 1e-3, 1e-5},
                          {"batch variance", native.variance, reference.variance, 1e-3, 1e-5},
                          {"input gradient", native.dx, reference.dx, 1.0 / 64, 1.0 / 256},
                          {"scale gradient", native.dscale, reference.dscale, 1e-3, 1e-4},
                          {"shift gradient", native.dshift, reference.dshift, 1e-3, 1e-4}};
  for (const Check& check : checks) {
    const double ratio = worst_ratio(check.got, check.want, check.relative, check.absolute);
    if (!(ratio <= 1)) {
      std::ostringstream why;
      why << "the " << check.name << " of shape " << shape.to_string() << " differs from the f32 path's by " << ratio
          << " times the tolerance";
      return why.str();
    }
    worst = std::max(worst, ratio);
  }
  return {};
}
}  // namespace

Bf16BatchNormPolicy bf16_batch_norm_policy() {
  const char* value = std::getenv("DPTRAIN_BF16_BATCH_NORM");
  const std::string text = value != nullptr ? value : "";
  if (text.empty() || text == "auto") return Bf16BatchNormPolicy::automatic;
  if (text == "native") return Bf16BatchNormPolicy::native;
  if (text == "f32") return Bf16BatchNormPolicy::f32_copies;
  throw Error("DPTRAIN_BF16_BATCH_NORM is \"" + text +
              "\"; give auto (probe cuDNN, the default), native (require cuDNN's bf16 batch norm) or f32 "
              "(run bf16 batch norm on f32 copies)");
}

Bf16BatchNormProbe probe_bf16_batch_norm(CudaContext& ctx) {
  // A tiny shape and a ResNet-like one: cuDNN picks its kernels by size.
  const Shape shapes[] = {Shape{4, 3, 5, 6}, Shape{16, 64, 14, 14}};
  double worst = 0;
  for (const Shape& shape : shapes) {
    std::string why = compare_paths(ctx, shape, worst);
    if (!why.empty()) return {false, why};
  }
  std::ostringstream detail;
  detail << "agrees with the f32 path (largest difference " << worst << " of its tolerance)";
  return {true, detail.str()};
}

bool bf16_batch_norm_native(CudaContext& ctx) {
  const Bf16BatchNormPolicy policy = bf16_batch_norm_policy();
  if (policy == Bf16BatchNormPolicy::f32_copies) return false;
  static std::mutex mutex;
  static std::map<int, Bf16BatchNormProbe> probes;  // by device: the answer is the device's and cuDNN's
  const std::lock_guard<std::mutex> lock(mutex);
  auto found = probes.find(ctx.device());
  if (found == probes.end()) {
    found = probes.emplace(ctx.device(), probe_bf16_batch_norm(ctx)).first;
    if (!found->second.native && policy == Bf16BatchNormPolicy::automatic) {
      std::cerr << "dptrain: note: bf16 batch norm on GPU " << ctx.device()
                << " runs on f32 copies: " << found->second.detail
                << " (DPTRAIN_BF16_BATCH_NORM=f32 skips this check)\n";
    }
  }
  if (!found->second.native && policy == Bf16BatchNormPolicy::native) {
    throw Error("DPTRAIN_BF16_BATCH_NORM=native, but cuDNN's bf16 batch norm failed its check on GPU " +
                std::to_string(ctx.device()) + ": " + found->second.detail +
                "; unset the variable to fall back to f32 copies");
  }
  return found->second.native;
}

}  // namespace dptrain::cuda
