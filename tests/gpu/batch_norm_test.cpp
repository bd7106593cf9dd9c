// Batch normalization on the GPU. Both implementations (DPTRAIN_BATCH_NORM=own: our kernels,
// lib/dptrain/backend/cuda/batch_norm_kernels.hpp; =cudnn: cuDNN) agree with the CPU in every precision,
// on shapes that take each of the kernels' vector widths, one row per image, and a channel whose mean
// is large against its spread (where a sum of squares in fp32 loses the variance). Our kernels give the
// same bits twice, and their fused ReLU and add+ReLU match batch norm followed by our ReLU and add
// kernels. On NHWC (channels-last) activations our kernels match their NCHW results on the same values
// to float reassociation (the same bits in inference), and give the same bits at every run and at any
// alignment. Under cuDNN in bf16, its native path (kept only where the probe finds it agrees with the f32
// path: batch_norm_bf16.hpp) and the f32-copies fallback both agree with the CPU, and "native" required
// where the probe failed is an error that says so. Prints the probe's verdict and the time of each
// implementation on ResNet-50's largest batch norm in bf16 and fp16, for the GPU check's log.
#include <cuda_runtime.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "dptrain/backend/cuda/batch_norm_bf16.hpp"
#include "dptrain/backend/cuda/batch_norm_kernels.hpp"
#include "dptrain/backend/cuda/context.hpp"
#include "dptrain/backend/cuda/kernels.hpp"
#include "dptrain/backend/cuda/precision_kernels.hpp"
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

// An environment variable set for one scope; the previous value (or none) comes back after.
class ScopedVariable {
 public:
  ScopedVariable(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    had_ = std::getenv(name) != nullptr;
    REQUIRE(::setenv(name, value, 1) == 0);
  }
  ~ScopedVariable() { had_ ? ::setenv(name_, old_.c_str(), 1) : ::unsetenv(name_); }
  ScopedVariable(const ScopedVariable&) = delete;
  ScopedVariable& operator=(const ScopedVariable&) = delete;

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

constexpr const char* kPolicy = "DPTRAIN_BATCH_NORM";
constexpr const char* kBf16Policy = "DPTRAIN_BF16_BATCH_NORM";

// Forward (training and inference) and backward of one batch norm, CPU against every GPU precision,
// with x drawn from [low, high) (rounded to bf16, so that every precision normalises the same values).
void check_batch_norm(const Shape& input, float low = -2.f, float high = 3.f) {
  BatchNormSpec spec;
  spec.input = input;
  const Shape channel{input[1]};
  const Tensor x = gpu_testing::in_16_bits(random_tensor(input, 21, low, high));
  const Tensor scale = random_tensor(channel, 22, 0.5f, 1.5f), shift = random_tensor(channel, 23);
  const Tensor dy = random_tensor(input, 24);
  const Tensor running_mean = random_tensor(channel, 25), running_variance = random_tensor(channel, 26, 0.5f, 2.f);
  INFO("batch norm of shape " << input.to_string() << ", x in [" << low << ", " << high << ")");
  expect_agreement_in_all_precisions(
      [&](Backend& be) {
        auto plan = be.make_batch_norm(spec);
        Tensor X = on_activation(be, x), S = on(be, scale), B = on(be, shift), DY = on_activation(be, dy);
        Tensor RM = on(be, running_mean), RV = on(be, running_variance);
        Tensor y = activation(be, input), mean = be.allocate(channel), variance = be.allocate(channel);
        Tensor dx = activation(be, input), dscale = be.allocate(channel), dshift = be.allocate(channel);
        Tensor inference = activation(be, input);
        plan->forward_training(X, S, B, y, mean, variance);
        plan->backward(X, y, DY, S, B, mean, variance, dx, dscale, dshift);
        plan->forward_inference(X, S, B, RM, RV, inference);
        return gpu_testing::to_host(be, {&y, &mean, &variance, &dx, &dscale, &dshift, &inference});
      },
      {"output", "batch mean", "batch variance (biased)", "input gradient", "scale gradient", "shift gradient",
       "inference output"});
}

// The shapes both implementations are checked on. With our kernels: H*W = 25, 7 and 63 read one element
// at a time, 196 = 4 x 49 in 8-byte vectors (bf16, fp16) and 16-byte ones (f32), 3136 in 16-byte
// vectors, cut into groups whose last one is shorter.
// `large_mean`: also a shape whose values sit far from zero, which only our kernels are asked to
// normalise to fp32's bound (cuDNN's legacy routine is not documented to be stable there).
void check_batch_norm_shapes(bool large_mean) {
  check_batch_norm(Shape{4, 8, 5, 5});
  check_batch_norm(Shape{2, 3, 1, 7});  // one row per image: m = 14 values per channel
  check_batch_norm(Shape{3, 5, 7, 9});
  check_batch_norm(Shape{4, 6, 14, 14});
  // m = 25088 values per channel around 102 with a standard deviation of 1.15: sum(x^2) / m - mean^2
  // in fp32 loses about three of the variance's seven digits, far beyond the 1e-4 bound.
  if (large_mean) check_batch_norm(Shape{8, 16, 56, 56}, 100.f, 104.f);
}

// Milliseconds per forward + backward of a batch norm of `input` made under the current policy, on
// `be`'s activations.
double milliseconds_per_pass(Backend& be, const Shape& input) {
  BatchNormSpec spec;
  spec.input = input;
  const Shape channel{input[1]};
  auto plan = be.make_batch_norm(spec);
  Tensor x = activation(be, input), dy = activation(be, input), y = activation(be, input);
  Tensor dx = activation(be, input);
  be.fill(x, 0.5f);
  be.fill(dy, 0.25f);
  const Tensor scale = on(be, random_tensor(channel, 27, 0.5f, 1.5f)), shift = on(be, random_tensor(channel, 28));
  Tensor mean = be.allocate(channel), variance = be.allocate(channel);
  Tensor dscale = be.allocate(channel), dshift = be.allocate(channel);
  const auto pass = [&] {
    plan->forward_training(x, scale, shift, y, mean, variance);
    plan->backward(x, y, dy, scale, shift, mean, variance, dx, dscale, dshift);
  };
  pass();  // the first call allocates the scratch
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  constexpr int kPasses = 10;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kPasses; ++i) pass();
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() / kPasses;
}

// The backend of `precision`, or nullptr (with a warning) where this GPU lacks it.
Backend* backend_in(Precision precision) {
  if (precision == Precision::fp32) return &gpu_testing::gpu();
  Backend* be = gpu_testing::gpu(precision);
  if (be == nullptr) WARN("this GPU has no " << name_of(precision) << ": not checked");
  return be;
}

// Host f32 copies of device tensors of a context (16-bit ones widened), for the kernel-level tests.
class Kernels {
 public:
  explicit Kernels(DType type) : ctx_(std::make_shared<cuda::CudaContext>(0, type)), type_(type) {}

  cudaStream_t stream() const { return ctx_->stream(); }
  DType type() const { return type_; }
  Tensor allocate(const Shape& shape, DType dtype) { return ctx_->allocate(shape, dtype); }
  // `host` (f32) on the device, of `dtype` (converted).
  Tensor upload(const Tensor& host, DType dtype) {
    Tensor wide = ctx_->allocate(host.shape(), DType::f32);
    REQUIRE(cudaMemcpyAsync(wide.raw(), host.raw(), host.bytes(), cudaMemcpyHostToDevice, stream()) == cudaSuccess);
    if (dtype == DType::f32) {
      REQUIRE(cudaStreamSynchronize(stream()) == cudaSuccess);  // `host` may go after this
      return wide;
    }
    Tensor narrow = ctx_->allocate(host.shape(), dtype);
    cuda::kernels::convert(wide.raw(), DType::f32, narrow.raw(), dtype, host.numel(), stream());
    REQUIRE(cudaStreamSynchronize(stream()) == cudaSuccess);
    return narrow;
  }
  Tensor download(const Tensor& device) {
    Tensor wide = ctx_->allocate(device.shape(), DType::f32);
    cuda::kernels::convert(device.raw(), device.dtype(), wide.raw(), DType::f32, device.numel(), stream());
    Tensor host = Tensor::empty(device.shape());
    REQUIRE(cudaMemcpyAsync(host.raw(), wide.raw(), host.bytes(), cudaMemcpyDeviceToHost, stream()) == cudaSuccess);
    REQUIRE(cudaStreamSynchronize(stream()) == cudaSuccess);
    return host;
  }

 private:
  std::shared_ptr<cuda::CudaContext> ctx_;
  DType type_;
};

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() && std::memcmp(a.raw(), b.raw(), a.bytes()) == 0;
}

// Two runs' results, named in order: the same bits each.
void check_same_bits(const std::vector<Tensor>& first, const std::vector<Tensor>& second,
                     const std::vector<std::string>& names) {
  REQUIRE(first.size() == names.size());
  REQUIRE(second.size() == names.size());
  for (std::size_t i = 0; i < names.size(); ++i) {
    INFO(names[i]);
    CHECK(same_bits(first[i], second[i]));
  }
}

// The fused variants of our kernels against batch norm without them followed by our ReLU and add
// kernels (relu_forward, add, relu_backward), in `type`, on `input`.
void check_fused_variants(DType type, const Shape& input) {
  namespace k = cuda::kernels;
  INFO(name_of(type) << " batch norm of shape " << input.to_string());
  Kernels device(type);
  const cudaStream_t stream = device.stream();
  const k::BatchNormShape shape{input[0], input[1], input[2] * input[3]};
  const Shape channel{input[1]};
  const std::int64_t n = input.numel();
  constexpr float kEpsilon = 1e-5f;
  const Tensor x = device.upload(random_tensor(input, 31, -2.f, 3.f), type);
  const Tensor z = device.upload(random_tensor(input, 32), type), dy = device.upload(random_tensor(input, 33), type);
  const Tensor scale = device.upload(random_tensor(channel, 34, 0.5f, 1.5f), DType::f32);
  const Tensor shift = device.upload(random_tensor(channel, 35, -0.5f, 0.5f), DType::f32);
  const Tensor running_mean = device.upload(random_tensor(channel, 36), DType::f32);
  const Tensor running_variance = device.upload(random_tensor(channel, 37, 0.5f, 2.f), DType::f32);
  Tensor workspace = device.allocate(Shape{k::batch_norm_workspace_floats(shape, type)}, DType::f32);
  const auto floats = [](const Tensor& t) { return static_cast<const float*>(t.raw()); };
  const auto mutable_floats = [](Tensor& t) { return static_cast<float*>(t.raw()); };

  // The reference: batch norm alone, then relu, or add then relu.
  Tensor normalised = device.allocate(input, type), sum = device.allocate(input, type);
  Tensor relu_reference = device.allocate(input, type), add_relu_reference = device.allocate(input, type);
  Tensor mean = device.allocate(channel, DType::f32), variance = device.allocate(channel, DType::f32);
  const auto unfused = [&](bool training) {
    if (training) {
      k::batch_norm_forward_training(x.raw(), nullptr, normalised.raw(), type, shape, floats(scale), floats(shift),
                                     kEpsilon, k::BatchNormActivation::none, mutable_floats(mean),
                                     mutable_floats(variance), mutable_floats(workspace), stream);
    } else {
      k::batch_norm_forward_inference(x.raw(), nullptr, normalised.raw(), type, shape, floats(scale), floats(shift),
                                      floats(running_mean), floats(running_variance), kEpsilon,
                                      k::BatchNormActivation::none, mutable_floats(workspace), stream);
    }
    k::relu_forward(normalised.raw(), relu_reference.raw(), type, n, stream);
    k::add(normalised.raw(), z.raw(), sum.raw(), type, n, /*relu=*/false, stream);
    k::relu_forward(sum.raw(), add_relu_reference.raw(), type, n, stream);
  };
  for (const bool training : {true, false}) {
    INFO((training ? "training" : "inference") << " forward");
    unfused(training);
    const Tensor mean_reference = device.download(mean), variance_reference = device.download(variance);
    for (const auto activation : {k::BatchNormActivation::relu, k::BatchNormActivation::add_relu}) {
      const bool add = activation == k::BatchNormActivation::add_relu;
      INFO((add ? "add_relu" : "relu"));
      Tensor y = device.allocate(input, type);
      if (training) {
        k::batch_norm_forward_training(x.raw(), add ? z.raw() : nullptr, y.raw(), type, shape, floats(scale),
                                       floats(shift), kEpsilon, activation, mutable_floats(mean),
                                       mutable_floats(variance), mutable_floats(workspace), stream);
        CHECK(same_bits(device.download(mean), mean_reference));
        CHECK(same_bits(device.download(variance), variance_reference));
      } else {
        k::batch_norm_forward_inference(x.raw(), add ? z.raw() : nullptr, y.raw(), type, shape, floats(scale),
                                        floats(shift), floats(running_mean), floats(running_variance), kEpsilon,
                                        activation, mutable_floats(workspace), stream);
      }
      const double error = gpu_testing::norm_relative_error(device.download(y),
                                                            device.download(add ? add_relu_reference : relu_reference));
      INFO("norm-relative error " << error);
      CHECK(error <= 1e-2);
    }
  }

  // Backward through a fused relu (y = relu_reference) and add_relu (y = add_relu_reference), against
  // relu_backward's masked gradient handed to the plain backward. Both see the same masked values in
  // the same order: the per-channel gradients agree to the bit, the input gradients to a rounding.
  unfused(true);
  for (const Tensor* relu_output : {&relu_reference, &add_relu_reference}) {
    INFO((relu_output == &relu_reference ? "relu" : "add_relu") << " backward");
    Tensor masked_reference = device.allocate(input, type), masked = device.allocate(input, type);
    Tensor dx_reference = device.allocate(input, type), dx = device.allocate(input, type);
    Tensor dscale_reference = device.allocate(channel, DType::f32),
           dshift_reference = device.allocate(channel, DType::f32);
    Tensor dscale = device.allocate(channel, DType::f32), dshift = device.allocate(channel, DType::f32);
    k::relu_backward(relu_output->raw(), dy.raw(), masked_reference.raw(), type, n, stream);
    k::batch_norm_backward(x.raw(), masked_reference.raw(), nullptr, dx_reference.raw(), nullptr, type, shape,
                           floats(scale), floats(mean), floats(variance), kEpsilon, mutable_floats(dscale_reference),
                           mutable_floats(dshift_reference), mutable_floats(workspace), stream);
    k::batch_norm_backward(x.raw(), dy.raw(), relu_output->raw(), dx.raw(), masked.raw(), type, shape, floats(scale),
                           floats(mean), floats(variance), kEpsilon, mutable_floats(dscale), mutable_floats(dshift),
                           mutable_floats(workspace), stream);
    CHECK(same_bits(device.download(masked), device.download(masked_reference)));
    CHECK(same_bits(device.download(dscale), device.download(dscale_reference)));
    CHECK(same_bits(device.download(dshift), device.download(dshift_reference)));
    const double error = gpu_testing::norm_relative_error(device.download(dx), device.download(dx_reference));
    INFO("input gradient: norm-relative error " << error);
    CHECK(error <= 1e-2);
  }
  // A residual without add_relu, or add_relu without one, is refused before anything is queued.
  Tensor y = device.allocate(input, type);
  CHECK_THROWS_AS(k::batch_norm_forward_training(x.raw(), z.raw(), y.raw(), type, shape, floats(scale), floats(shift),
                                                 kEpsilon, k::BatchNormActivation::relu, mutable_floats(mean),
                                                 mutable_floats(variance), mutable_floats(workspace), stream),
                  Error);
  CHECK_THROWS_AS(k::batch_norm_forward_training(x.raw(), nullptr, y.raw(), type, shape, floats(scale), floats(shift),
                                                 kEpsilon, k::BatchNormActivation::add_relu, mutable_floats(mean),
                                                 mutable_floats(variance), mutable_floats(workspace), stream),
                  Error);
  REQUIRE(cudaStreamSynchronize(stream) == cudaSuccess);
}

// Host f32 activations from [N, C, H, W] to [N, H, W, C] (channels last) when `to_channels_last`,
// else back.
Tensor transposed(const Tensor& t, bool to_channels_last) {
  const Shape& s = t.shape();
  const std::int64_t samples = s[0], channels = to_channels_last ? s[1] : s[3];
  const std::int64_t plane = to_channels_last ? s[2] * s[3] : s[1] * s[2];
  Tensor out = Tensor::empty(to_channels_last ? Shape{s[0], s[2], s[3], s[1]} : Shape{s[0], s[3], s[1], s[2]});
  const float* from = t.data<float>();
  float* to = out.data<float>();
  for (std::int64_t n = 0; n < samples; ++n) {
    for (std::int64_t c = 0; c < channels; ++c) {
      for (std::int64_t p = 0; p < plane; ++p) {
        const std::int64_t nchw = (n * channels + c) * plane + p, nhwc = (n * plane + p) * channels + c;
        if (to_channels_last) {
          to[nhwc] = from[nchw];
        } else {
          to[nchw] = from[nhwc];
        }
      }
    }
  }
  return out;
}
Tensor to_channels_last(const Tensor& nchw) { return transposed(nchw, true); }
Tensor from_channels_last(const Tensor& nhwc) { return transposed(nhwc, false); }

// The spacing of `type`'s values at magnitude |v| (that of its subnormals below its normal range).
double ulp_of(DType type, double v) {
  const int digits = type == DType::bf16 ? 8 : type == DType::f16 ? 11 : 24;  // with the implicit bit
  const int min_exponent = type == DType::f16 ? -13 : -125;                   // numeric_limits' min_exponent
  int exponent = 0;
  std::frexp(std::fabs(v), &exponent);  // |v| = m * 2^exponent, m in [0.5, 1)
  return std::ldexp(1.0, std::max(exponent, min_exponent) - digits);
}

// Host copies of `type` values, the same shape: every element within two of `type`'s ulps, plus 1e-5
// of the reference's largest magnitude (what the statistics' float reassociation can move a value
// before its rounding; in f32 that is more than two ulps).
void check_within_ulps(const Tensor& actual, const Tensor& reference, DType type, const char* what) {
  REQUIRE(actual.shape() == reference.shape());
  const float* a = actual.data<float>();
  const float* r = reference.data<float>();
  const std::int64_t n = reference.numel();
  double largest = 0;
  for (std::int64_t i = 0; i < n; ++i) largest = std::max(largest, std::fabs(double{r[i]}));
  const double slack = 1e-5 * largest;
  std::int64_t wrong = 0, first = -1;
  for (std::int64_t i = 0; i < n; ++i) {
    const double difference = std::fabs(double{a[i]} - double{r[i]});
    const double bound = 2 * ulp_of(type, std::max(std::fabs(double{a[i]}), std::fabs(double{r[i]}))) + slack;
    if (!(difference <= bound) && wrong++ == 0) first = i;  // NaN fails too
  }
  INFO(what << ": " << wrong << " of " << n << " elements off by more than 2 ulps + " << slack
            << (first >= 0 ? ", the first at " + std::to_string(first) + ": " + std::to_string(a[first]) + " against " +
                                 std::to_string(r[first])
                           : std::string()));
  CHECK(wrong == 0);
}

// Per-channel results: |actual[c] - reference[c]| <= tolerance * scale[c] for every channel.
void check_per_channel(const Tensor& actual, const Tensor& reference, const std::vector<double>& scale,
                       double tolerance, const char* what) {
  REQUIRE(actual.numel() == reference.numel());
  REQUIRE(static_cast<std::size_t>(reference.numel()) == scale.size());
  const float* a = actual.data<float>();
  const float* r = reference.data<float>();
  for (std::size_t c = 0; c < scale.size(); ++c) {
    const double difference = std::fabs(double{a[c]} - double{r[c]});
    INFO(what << " of channel " << c << ": " << a[c] << " against " << r[c] << ", bound " << tolerance * scale[c]);
    if (!(difference <= tolerance * scale[c])) {
      CHECK(difference <= tolerance * scale[c]);
      return;  // one report a result
    }
  }
}

// Our kernels on NHWC activations against the NCHW ones on the same values (transposed), in `type`:
// training and inference forward with each activation, and the backward plain, behind a fused ReLU,
// and behind one with the masked gradient. The layouts add in different orders: the statistics and
// parameter gradients agree to 1e-5 of their terms' magnitudes, y and dx to two ulps (plus the
// statistics' share); inference, from the same statistics, gives the same bits. For values far from
// zero (`low` = 100) the NHWC variance is also checked against the host's double precision.
void check_channels_last(DType type, const Shape& input, float low = -2.f, float high = 3.f) {
  namespace k = cuda::kernels;
  INFO(name_of(type) << " batch norm of shape " << input.to_string() << ", x in [" << low << ", " << high << ")");
  Kernels device(type);
  const cudaStream_t stream = device.stream();
  const std::int64_t samples = input[0], channels = input[1], plane = input[2] * input[3];
  const std::int64_t m = samples * plane;
  const Shape channel{channels};
  constexpr float kEpsilon = 1e-5f;
  const auto floats = [](const Tensor& t) { return static_cast<const float*>(t.raw()); };
  const auto mutable_floats = [](Tensor& t) { return static_cast<float*>(t.raw()); };

  // One layout: its shape, inputs and workspace, and host copies of what it returns in NCHW order.
  struct LayoutRun {
    k::BatchNormShape shape;
    Tensor x, z, dy, workspace;  // x, z and dy of the layout's shape: [N, C, H, W] or [N, H, W, C]
  };
  const Tensor x_host = random_tensor(input, 51, low, high), z_host = random_tensor(input, 52);
  const Tensor dy_host = random_tensor(input, 53);
  const auto layout = [&](bool channels_last) {
    LayoutRun l;
    l.shape = k::BatchNormShape{samples, channels, plane, channels_last};
    const auto upload = [&](const Tensor& t) { return device.upload(channels_last ? to_channels_last(t) : t, type); };
    l.x = upload(x_host);
    l.z = upload(z_host);
    l.dy = upload(dy_host);
    l.workspace =
        device.allocate(Shape{std::max<std::int64_t>(1, k::batch_norm_workspace_floats(l.shape, type))}, DType::f32);
    return l;
  };
  LayoutRun nchw = layout(false), nhwc = layout(true);
  // Host copies in NCHW order of a layout's activation.
  const auto host = [&](const LayoutRun& l, const Tensor& t) {
    return l.shape.channels_last ? from_channels_last(device.download(t)) : device.download(t);
  };
  const Tensor x = device.download(nchw.x);  // the values both layouts normalise
  REQUIRE(same_bits(host(nhwc, nhwc.x), x));
  const Tensor scale = device.upload(random_tensor(channel, 54, 0.5f, 1.5f), DType::f32);
  const Tensor shift = device.upload(random_tensor(channel, 55, -0.5f, 0.5f), DType::f32);
  const Tensor running_mean = device.upload(random_tensor(channel, 56), DType::f32);
  const Tensor running_variance = device.upload(random_tensor(channel, 57, 0.5f, 2.f), DType::f32);

  // The scale of each channel's terms (host, double): mean(|x|), and (for the backward) sum(|g|) and
  // sum(|g * (x - mean)|) / sqrt(variance + epsilon) with g the (masked) gradient.
  std::vector<double> mean_scale(channels, 0.0);
  for (std::int64_t n = 0; n < samples; ++n) {
    for (std::int64_t c = 0; c < channels; ++c) {
      for (std::int64_t p = 0; p < plane; ++p)
        mean_scale[c] += std::fabs(x.data<float>()[(n * channels + c) * plane + p]);
    }
  }
  for (double& s : mean_scale) s /= static_cast<double>(m);

  // Forward, training and inference, in both layouts.
  const k::BatchNormActivation activations[] = {k::BatchNormActivation::none, k::BatchNormActivation::relu,
                                                k::BatchNormActivation::add_relu};
  std::vector<Tensor> training_outputs;  // NCHW's, per activation, on the device (the backward's relu_output)
  Tensor mean = device.allocate(channel, DType::f32), variance = device.allocate(channel, DType::f32);
  for (const k::BatchNormActivation activation : activations) {
    const bool add = activation == k::BatchNormActivation::add_relu;
    INFO("activation " << static_cast<int>(activation));
    struct Forward {
      Tensor y, mean, variance, inference;
    };
    const auto forward = [&](LayoutRun& l) {
      Forward f{device.allocate(l.x.shape(), type), device.allocate(channel, DType::f32),
                device.allocate(channel, DType::f32), device.allocate(l.x.shape(), type)};
      k::batch_norm_forward_training(l.x.raw(), add ? l.z.raw() : nullptr, f.y.raw(), type, l.shape, floats(scale),
                                     floats(shift), kEpsilon, activation, mutable_floats(f.mean),
                                     mutable_floats(f.variance), mutable_floats(l.workspace), stream);
      k::batch_norm_forward_inference(l.x.raw(), add ? l.z.raw() : nullptr, f.inference.raw(), type, l.shape,
                                      floats(scale), floats(shift), floats(running_mean), floats(running_variance),
                                      kEpsilon, activation, mutable_floats(l.workspace), stream);
      return f;
    };
    Forward a = forward(nchw);
    const Forward b = forward(nhwc);
    const Tensor mean_a = device.download(a.mean), variance_a = device.download(a.variance);
    check_per_channel(device.download(b.mean), mean_a, mean_scale, 1e-5, "batch mean");
    const std::vector<double> variance_scale(variance_a.data<float>(), variance_a.data<float>() + channels);
    check_per_channel(device.download(b.variance), variance_a, variance_scale, low >= 100.f ? 5e-5 : 1e-5,
                      "batch variance");
    check_within_ulps(host(nhwc, b.y), host(nchw, a.y), type, "training output");
    CHECK(same_bits(host(nhwc, b.inference), host(nchw, a.inference)));
    if (activation == k::BatchNormActivation::none) {
      // The statistics every backward below is handed, and a check of the NHWC variance on its own.
      mean = a.mean;
      variance = a.variance;
      if (low >= 100.f) {
        std::vector<double> sum(channels, 0.0), squares(channels, 0.0), reference(channels, 0.0);
        const float* v = x.data<float>();
        for (std::int64_t n = 0; n < samples; ++n) {
          for (std::int64_t c = 0; c < channels; ++c) {
            for (std::int64_t p = 0; p < plane; ++p) sum[c] += v[(n * channels + c) * plane + p];
          }
        }
        for (std::int64_t n = 0; n < samples; ++n) {
          for (std::int64_t c = 0; c < channels; ++c) {
            for (std::int64_t p = 0; p < plane; ++p) {
              const double d = v[(n * channels + c) * plane + p] - sum[c] / static_cast<double>(m);
              reference[c] += d * d / static_cast<double>(m);
            }
          }
        }
        Tensor reference_host = Tensor::empty(channel);
        for (std::int64_t c = 0; c < channels; ++c) reference_host.data<float>()[c] = static_cast<float>(reference[c]);
        check_per_channel(device.download(b.variance), reference_host, reference, 1e-4, "batch variance (double)");
      }
    }
    training_outputs.push_back(std::move(a.y));
  }

  // Backward from the same statistics: plain, behind the fused ReLU's output, and behind add_relu's
  // with the masked gradient.
  const Tensor mean_host = device.download(mean), variance_host = device.download(variance);
  const Tensor* relu_outputs[] = {nullptr, &training_outputs[1], &training_outputs[2]};
  for (const Tensor* relu_output : relu_outputs) {
    const bool masking = relu_output == &training_outputs[2];
    INFO((relu_output == nullptr ? "plain" : masking ? "add_relu, masked gradient" : "relu") << " backward");
    struct Backward {
      Tensor dx, masked, dscale, dshift;
    };
    const Tensor relu_output_nhwc =
        relu_output != nullptr ? device.upload(to_channels_last(device.download(*relu_output)), type) : Tensor();
    const auto backward = [&](LayoutRun& l, const Tensor* out) {
      Backward r{device.allocate(l.x.shape(), type), device.allocate(l.x.shape(), type),
                 device.allocate(channel, DType::f32), device.allocate(channel, DType::f32)};
      k::batch_norm_backward(l.x.raw(), l.dy.raw(), out != nullptr ? out->raw() : nullptr, r.dx.raw(),
                             masking ? r.masked.raw() : nullptr, type, l.shape, floats(scale), floats(mean),
                             floats(variance), kEpsilon, mutable_floats(r.dscale), mutable_floats(r.dshift),
                             mutable_floats(l.workspace), stream);
      return r;
    };
    const Backward a = backward(nchw, relu_output);
    const Backward b = backward(nhwc, relu_output != nullptr ? &relu_output_nhwc : nullptr);
    // The terms' scales from the host's copies of what both layouts read.
    const Tensor dy = device.download(nchw.dy);
    const Tensor out = relu_output != nullptr ? device.download(*relu_output) : Tensor();
    std::vector<double> shift_scale(channels, 0.0), scale_scale(channels, 0.0);
    for (std::int64_t n = 0; n < samples; ++n) {
      for (std::int64_t c = 0; c < channels; ++c) {
        const double inv_std = 1.0 / std::sqrt(double{variance_host.data<float>()[c]} + kEpsilon);
        for (std::int64_t p = 0; p < plane; ++p) {
          const std::int64_t i = (n * channels + c) * plane + p;
          const double g = relu_output == nullptr || out.data<float>()[i] > 0.f ? dy.data<float>()[i] : 0.0;
          shift_scale[c] += std::fabs(g);
          scale_scale[c] += std::fabs(g * (x.data<float>()[i] - mean_host.data<float>()[c])) * inv_std;
        }
      }
    }
    check_per_channel(device.download(b.dshift), device.download(a.dshift), shift_scale, 1e-5, "shift gradient");
    check_per_channel(device.download(b.dscale), device.download(a.dscale), scale_scale, 1e-5, "scale gradient");
    check_within_ulps(host(nhwc, b.dx), host(nchw, a.dx), type, "input gradient");
    if (masking) CHECK(same_bits(host(nhwc, b.masked), host(nchw, a.masked)));
  }
  REQUIRE(cudaStreamSynchronize(stream) == cudaSuccess);
}

// NHWC training forward and backward twice in `type` on `input`: the same bits both times, and again
// with x, y, dy and dx one element off their allocations' alignment (read element by element).
void check_channels_last_determinism(DType type, const Shape& input) {
  namespace k = cuda::kernels;
  INFO(name_of(type) << " NHWC batch norm of shape " << input.to_string());
  Kernels device(type);
  const cudaStream_t stream = device.stream();
  const k::BatchNormShape shape{input[0], input[1], input[2] * input[3], /*channels_last=*/true};
  const Shape channel{input[1]};
  const std::int64_t n = input.numel();
  const std::size_t element = size_of(type);
  const Tensor x = device.upload(to_channels_last(random_tensor(input, 61, -2.f, 3.f)), type);
  const Tensor dy = device.upload(to_channels_last(random_tensor(input, 62)), type);
  const Tensor scale = device.upload(random_tensor(channel, 63, 0.5f, 1.5f), DType::f32);
  const Tensor shift = device.upload(random_tensor(channel, 64), DType::f32);
  Tensor workspace =
      device.allocate(Shape{std::max<std::int64_t>(1, k::batch_norm_workspace_floats(shape, type))}, DType::f32);
  // y, mean, variance, dx, dscale, dshift on the host; activations at `offset` elements into their buffers.
  const auto run = [&](std::int64_t offset) {
    Tensor buffers[4];  // x, y, dy, dx
    for (Tensor& b : buffers) b = device.allocate(Shape{n + offset}, type);
    const auto at = [&](Tensor& b) { return static_cast<char*>(b.raw()) + offset * element; };
    REQUIRE(cudaMemcpyAsync(at(buffers[0]), x.raw(), x.bytes(), cudaMemcpyDeviceToDevice, stream) == cudaSuccess);
    REQUIRE(cudaMemcpyAsync(at(buffers[2]), dy.raw(), dy.bytes(), cudaMemcpyDeviceToDevice, stream) == cudaSuccess);
    Tensor mean = device.allocate(channel, DType::f32), variance = device.allocate(channel, DType::f32);
    Tensor dscale = device.allocate(channel, DType::f32), dshift = device.allocate(channel, DType::f32);
    k::batch_norm_forward_training(at(buffers[0]), nullptr, at(buffers[1]), type, shape,
                                   static_cast<const float*>(scale.raw()), static_cast<const float*>(shift.raw()),
                                   1e-5f, k::BatchNormActivation::relu, static_cast<float*>(mean.raw()),
                                   static_cast<float*>(variance.raw()), static_cast<float*>(workspace.raw()), stream);
    k::batch_norm_backward(at(buffers[0]), at(buffers[2]), at(buffers[1]), at(buffers[3]), nullptr, type, shape,
                           static_cast<const float*>(scale.raw()), static_cast<const float*>(mean.raw()),
                           static_cast<const float*>(variance.raw()), 1e-5f, static_cast<float*>(dscale.raw()),
                           static_cast<float*>(dshift.raw()), static_cast<float*>(workspace.raw()), stream);
    std::vector<Tensor> results;
    for (const int i : {1, 3}) {
      Tensor out = device.allocate(input, type);
      REQUIRE(cudaMemcpyAsync(out.raw(), at(buffers[i]), out.bytes(), cudaMemcpyDeviceToDevice, stream) == cudaSuccess);
      results.push_back(device.download(out));
    }
    for (const Tensor* t : {&mean, &variance, &dscale, &dshift}) results.push_back(device.download(*t));
    return results;
  };
  const std::vector<Tensor> first = run(0), second = run(0), misaligned = run(1);
  const std::vector<std::string> names = {"output",         "input gradient", "batch mean",
                                          "batch variance", "scale gradient", "shift gradient"};
  check_same_bits(first, second, names);
  INFO("one element off alignment");
  check_same_bits(first, misaligned, names);
}
}  // namespace

TEST_CASE("batch normalization: CPU and GPU agree", "[gpu][batch_norm]") {
  check_batch_norm(Shape{4, 8, 5, 5});
  check_batch_norm(Shape{2, 3, 1, 7});  // one row per image: m = 14 values per channel
}

TEST_CASE("batch normalization: our kernels and cuDNN both agree with the CPU in every precision",
          "[gpu][batch_norm]") {
  for (const char* policy : {"own", "cudnn"}) {
    INFO(kPolicy << "=" << policy);
    const ScopedVariable scoped(kPolicy, policy);
    check_batch_norm_shapes(/*large_mean=*/std::string(policy) == "own");
  }
  const ScopedVariable scoped(kPolicy, "fast");
  BatchNormSpec spec;
  spec.input = Shape{4, 8, 5, 5};
  CHECK_THROWS_WITH(gpu_testing::gpu().make_batch_norm(spec), Catch::Contains(kPolicy) && Catch::Contains("\"fast\"") &&
                                                                  Catch::Contains("own") && Catch::Contains("cudnn"));
}

TEST_CASE("batch normalization: our kernels give the same bits at every run", "[gpu][batch_norm]") {
  const ScopedVariable scoped(kPolicy, "own");
  for (const Precision precision : {Precision::fp32, Precision::bf16, Precision::fp16}) {
    Backend* be = backend_in(precision);
    if (be == nullptr) continue;
    for (const Shape& input : {Shape{8, 16, 56, 56}, Shape{3, 5, 7, 9}, Shape{64, 64, 14, 14}}) {
      INFO(name_of(precision) << " batch norm of shape " << input.to_string());
      BatchNormSpec spec;
      spec.input = input;
      const Shape channel{input[1]};
      const Tensor x = on_activation(*be, random_tensor(input, 41, -2.f, 3.f));
      const Tensor dy = on_activation(*be, random_tensor(input, 42));
      const Tensor scale = on(*be, random_tensor(channel, 43, 0.5f, 1.5f)), shift = on(*be, random_tensor(channel, 44));
      // Each run with a plan of its own: the same bits do not rest on state a plan keeps.
      const auto run = [&] {
        auto plan = be->make_batch_norm(spec);
        Tensor y = activation(*be, input), mean = be->allocate(channel), variance = be->allocate(channel);
        Tensor dx = activation(*be, input), dscale = be->allocate(channel), dshift = be->allocate(channel);
        plan->forward_training(x, scale, shift, y, mean, variance);
        plan->backward(x, y, dy, scale, shift, mean, variance, dx, dscale, dshift);
        return gpu_testing::to_host(*be, {&y, &mean, &variance, &dx, &dscale, &dshift});
      };
      check_same_bits(run(), run(),
                      {"output", "batch mean", "batch variance", "input gradient", "scale gradient", "shift gradient"});
    }
  }
}

TEST_CASE("batch normalization: our fused ReLU and add+ReLU match batch norm then ReLU or add", "[gpu][batch_norm]") {
  for (const DType type : {DType::bf16, DType::f16}) {
    if (type == DType::bf16 && backend_in(Precision::bf16) == nullptr) continue;
    check_fused_variants(type, Shape{8, 16, 28, 28});  // 16-byte vectors
    check_fused_variants(type, Shape{3, 5, 7, 9});     // one element at a time
  }
}

TEST_CASE("batch normalization: our NHWC kernels match our NCHW kernels on the same values", "[gpu][batch_norm]") {
  for (const DType type : {DType::f32, DType::bf16, DType::f16}) {
    if (type == DType::bf16 && backend_in(Precision::bf16) == nullptr) continue;
    // C = 3 and 7: one element a load, tiles of 4 and 8 columns with idle ones; a plane of 1; C = 64
    // and 2048 (8 tiles of 32 vectors in bf16) on 7x7 planes; C = 12 (8-byte loads in 16 bits) and 6
    // (8 bytes in f32); 21870 rows cut into groups whose last one is shorter.
    for (const Shape& input : {Shape{4, 3, 5, 5}, Shape{6, 7, 3, 3}, Shape{16, 7, 1, 1}, Shape{8, 64, 7, 7},
                               Shape{2, 2048, 7, 7}, Shape{3, 12, 9, 9}, Shape{5, 6, 4, 4}, Shape{30, 64, 27, 27}}) {
      check_channels_last(type, input);
    }
    // Values far from zero: the variance must survive a mean 90 times the spread.
    check_channels_last(type, Shape{16, 16, 28, 28}, 100.f, 104.f);
  }
}

TEST_CASE("batch normalization: our NHWC kernels give the same bits at every run and any alignment",
          "[gpu][batch_norm]") {
  for (const DType type : {DType::f32, DType::bf16, DType::f16}) {
    if (type == DType::bf16 && backend_in(Precision::bf16) == nullptr) continue;
    for (const Shape& input : {Shape{30, 64, 27, 27}, Shape{4, 2048, 7, 7}, Shape{6, 7, 3, 3}}) {
      check_channels_last_determinism(type, input);
    }
  }
}

TEST_CASE("bf16 batch norm on cuDNN: native where the probe passes, f32 copies otherwise, both agree with the CPU",
          "[gpu][batch_norm][bf16]") {
  Backend* bf16 = gpu_testing::gpu(Precision::bf16);
  if (bf16 == nullptr) {
    WARN("this GPU has no bf16: nothing to check");
    return;
  }
  const ScopedVariable cudnn(kPolicy, "cudnn");
  auto context = std::make_shared<cuda::CudaContext>(0, DType::bf16);
  const cuda::Bf16BatchNormProbe probe = cuda::probe_bf16_batch_norm(*context);
  std::printf("bf16 batch norm: cuDNN's native path %s: %s\n", probe.native ? "passes" : "fails", probe.detail.c_str());
  CHECK_FALSE(probe.detail.empty());
  const Shape shapes[] = {Shape{4, 8, 5, 5}, Shape{8, 64, 14, 14}};
  for (const char* policy : {"f32", "auto"}) {
    INFO(kBf16Policy << "=" << policy);
    const ScopedVariable scoped(kBf16Policy, policy);
    for (const Shape& shape : shapes) check_batch_norm(shape);
  }
  {
    const ScopedVariable scoped(kBf16Policy, "native");
    if (probe.native) {
      for (const Shape& shape : shapes) check_batch_norm(shape);
    } else {
      BatchNormSpec spec;
      spec.input = shapes[0];
      CHECK_THROWS_WITH(bf16->make_batch_norm(spec),
                        Catch::Contains("DPTRAIN_BF16_BATCH_NORM=native") && Catch::Contains(probe.detail));
    }
  }
}

TEST_CASE("batch normalization: the time of our kernels and cuDNN's, for the log", "[gpu][batch_norm]") {
  // ResNet-50's largest batch norm (after conv1, batch 64).
  const Shape resnet{64, 64, 112, 112};
  for (const Precision precision : {Precision::bf16, Precision::fp16}) {
    Backend* be = backend_in(precision);
    if (be == nullptr) continue;
    double own = 0, cudnn = 0, copies = 0;
    bool native = true;
    {
      const ScopedVariable scoped(kPolicy, "own");
      own = milliseconds_per_pass(*be, resnet);
    }
    {
      const ScopedVariable scoped(kPolicy, "cudnn");
      if (precision == Precision::bf16) {
        {
          const ScopedVariable automatic(kBf16Policy, "auto");
          cuda::CudaContext context(0, DType::bf16);
          native = cuda::bf16_batch_norm_native(context);  // the probe's cached verdict
          cudnn = milliseconds_per_pass(*be, resnet);
        }
        const ScopedVariable f32(kBf16Policy, "f32");
        copies = milliseconds_per_pass(*be, resnet);
      } else {
        cudnn = milliseconds_per_pass(*be, resnet);
      }
    }
    std::printf("%s batch norm %s forward+backward: %.3f ms on our kernels; cuDNN: %.3f ms %s (%.2fx ours)",
                std::string(name_of(precision)).c_str(), resnet.to_string().c_str(), own, cudnn,
                native ? "native" : "on f32 copies", cudnn / own);
    if (precision == Precision::bf16) std::printf(", %.3f ms on f32 copies (%.2fx ours)", copies, copies / own);
    std::printf("\n");
  }
}

}  // namespace dptrain
