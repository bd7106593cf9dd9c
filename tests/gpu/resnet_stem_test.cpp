// ResNet-50's stem at its training size: convolution 7x7/2 (3 -> 64 channels, no bias: batch norm
// follows), batch norm in training mode, ReLU (in place, as the net runs it) and max pooling 3x3/2
// (padding 1) on [512, 3, 224, 224], forward and backward on the CUDA backend in fp32 and bf16, against
// the CPU backend on two images, to backend_agreement's tolerances (1e-4 relative in fp32, 1e-2
// norm-relative in bf16). It prints each precision's time and peak GPU memory; gpu_main prints the
// algorithm searches.
//
// The CPU computes two images, not 512 (its reference for the whole batch would take minutes), and is
// still the exact reference of the whole batch: the batch is 256 copies of those two images, and the
// pool's output gradient 256 copies of theirs. Batch norm in training mode normalises with the batch's
// statistics, and the mean and (biased) variance of 256 copies of a set are the set's own; its
// backward pass subtracts the batch means of dy and of dy * x_hat, again the set's own. So every copy's
// outputs, the batch statistics and every copy's input gradient equal the CPU's for its two images,
// and the parameter gradients (sums over the batch) are 256 times the CPU's: the GPU's are divided by
// 256 (a power of two, exact) before the comparison. The first copy (images 0-1) and the last (images
// 510-511, 1.6 GB into the convolution's fp32 output) are compared.
//
// Max pooling passes each window's gradient to its maximum, which is discontinuous: where a window's
// two largest values are nearly tied, or its maximum is nearly 0 (ReLU's kink), the GPU's rounding
// (bf16's 2^-8 above all) can send the gradient elsewhere, and a single such window moves the weight
// gradient far past 1e-4 (see model_step_test.cpp). The output gradient is therefore zero at windows
// whose maximum lies within kMargin (relative, above 1) of the runner-up or of 0 in the CPU's forward
// pass (about a tenth of them); kMargin is several times the difference bf16 makes to two values of
// the pool's input. The backward pass then compares continuous functions, and the fixed tolerances
// hold.
#include <cuda_runtime.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "dptrain/backend/cuda/check_cuda.hpp"
#include "dptrain/backend/cuda/cuda_backend.hpp"
#include "gpu/gpu_testing.hpp"
#include "support/tensor_testing.hpp"

namespace dptrain {
namespace {
using gpu_testing::activation;
using gpu_testing::on;
using gpu_testing::on_activation;
using testing::random_tensor;

constexpr std::int64_t kBatch = 512, kSlice = 2, kCopies = kBatch / kSlice;
constexpr float kMargin = 1.f / 16;

// The ops' specs for a batch of `batch` images.
struct Stem {
  ConvolutionSpec convolution;
  BatchNormSpec norm;
  PoolingSpec pool;
  Shape features, pooled, weight;

  explicit Stem(std::int64_t batch) {
    convolution.input = Shape{batch, 3, 224, 224};
    convolution.out_channels = 64;
    convolution.window = Window2d::square(7, 2, 3);
    convolution.bias = false;
    features = convolution_output_shape(convolution, convolution.who);  // [batch, 64, 112, 112]
    weight = convolution_weight_shape(convolution);
    norm.input = features;
    pool.input = features;
    pool.kind = PoolingKind::max;
    pool.window = Window2d::square(3, 2, 1);
    pooled = pooling_output_shape(pool, pool.who);  // [batch, 64, 56, 56]
  }
};

// The two images, the parameters and the pool's output gradient of the two images; and the batch:
// 256 copies of the images and of the gradient.
struct Inputs {
  Tensor images, weight, scale, shift, pool_gradient;
  Tensor batch_images, batch_pool_gradient;
};

Tensor repeated(const Tensor& slice, std::int64_t copies) {
  std::vector<std::int64_t> dims = slice.shape().dims();
  dims[0] *= copies;
  Tensor out = Tensor::empty(Shape(dims));
  for (std::int64_t c = 0; c < copies; ++c) {
    std::memcpy(out.data<float>() + c * slice.numel(), slice.data<float>(), slice.bytes());
  }
  return out;
}

// The pool's input (the ReLU of the batch-normalised convolution) of the two images, on the CPU.
Tensor pool_input(const Inputs& in) {
  Backend& cpu = gpu_testing::cpu();
  const Stem stem(kSlice);
  auto convolution = cpu.make_convolution(stem.convolution);
  auto norm = cpu.make_batch_norm(stem.norm);
  auto relu = cpu.make_relu(stem.features);
  const Tensor x = on(cpu, in.images), w = on(cpu, in.weight), scale = on(cpu, in.scale), shift = on(cpu, in.shift);
  const Tensor no_bias;
  Tensor c = activation(cpu, stem.features), b = activation(cpu, stem.features);
  Tensor mean = cpu.allocate(Shape{64}), variance = cpu.allocate(Shape{64});
  convolution->forward(x, w, no_bias, c);
  norm->forward_training(c, scale, shift, b, mean, variance);
  relu->forward(b, b);
  return cpu.to_host(b);
}

// Zeroes the gradient of every pooling window whose maximum is within kMargin (relative above 1) of
// the window's next largest value or of 0; returns how many were zeroed.
std::int64_t zero_ambiguous_windows(const Tensor& input, const Stem& stem, Tensor& gradient) {
  const std::int64_t planes = stem.features[0] * stem.features[1];
  const auto height = static_cast<int>(stem.features[2]), width = static_cast<int>(stem.features[3]);
  const auto out_height = static_cast<int>(stem.pooled[2]), out_width = static_cast<int>(stem.pooled[3]);
  const Window2d& window = stem.pool.window;
  std::int64_t zeroed = 0;
  for (std::int64_t plane = 0; plane < planes; ++plane) {
    const float* x = input.data<float>() + plane * height * width;
    float* dy = gradient.data<float>() + plane * out_height * out_width;
    for (int oh = 0; oh < out_height; ++oh) {
      for (int ow = 0; ow < out_width; ++ow) {
        float best = -std::numeric_limits<float>::infinity(), second = best;
        const int h0 = oh * window.stride_h - window.pad_h, w0 = ow * window.stride_w - window.pad_w;
        for (int h = std::max(h0, 0); h < std::min(h0 + window.kernel_h, height); ++h) {
          for (int w = std::max(w0, 0); w < std::min(w0 + window.kernel_w, width); ++w) {
            const float v = x[h * width + w];
            if (v > best) {
              second = best;
              best = v;
            } else if (v > second) {
              second = v;
            }
          }
        }
        const float margin = kMargin * std::max(1.f, best);
        if (best < margin || best - second < margin) {
          dy[oh * out_width + ow] = 0.f;
          ++zeroed;
        }
      }
    }
  }
  return zeroed;
}

Inputs make_inputs() {
  Inputs in;
  const Stem stem(kSlice);
  in.images = random_tensor(stem.convolution.input, 71, 0.f, 1.f);  // not centred: the batch means matter
  in.weight = random_tensor(stem.weight, 72, -0.2f, 0.2f);
  in.scale = random_tensor(Shape{64}, 73, 0.5f, 1.5f);
  in.shift = random_tensor(Shape{64}, 74, -0.5f, 0.5f);
  in.pool_gradient = random_tensor(stem.pooled, 75);
  const std::int64_t zeroed = zero_ambiguous_windows(pool_input(in), stem, in.pool_gradient);
  std::printf("resnet50 stem: %lld of %lld pooling windows get no gradient (maximum within 1/16 of the next or of 0)\n",
              static_cast<long long>(zeroed), static_cast<long long>(stem.pooled.numel()));
  in.batch_images = repeated(in.images, kCopies);
  in.batch_pool_gradient = repeated(in.pool_gradient, kCopies);
  return in;
}

// A host tensor divided by `copies` (a power of two: exact).
Tensor per_copy(Tensor t, std::int64_t copies) {
  const float factor = 1.f / static_cast<float>(copies);
  for (std::int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] *= factor;
  return t;
}

// Forward and backward of the stem: two images on the CPU, the batch of 512 on a GPU. The results:
// the pool's output and the input gradient of the first and the last two images, the batch
// statistics, and the parameter gradients per copy.
std::vector<Tensor> run_stem(Backend& be, const Inputs& in) {
  const bool reference = be.device().is_cpu();
  const std::int64_t batch = reference ? kSlice : kBatch, copies = reference ? 1 : kCopies;
  const Stem stem(batch);
  const auto start = std::chrono::steady_clock::now();
  auto convolution = be.make_convolution(stem.convolution);
  auto norm = be.make_batch_norm(stem.norm);
  auto relu = be.make_relu(stem.features);
  auto pool = be.make_pooling(stem.pool);
  const Tensor x = on_activation(be, reference ? in.images : in.batch_images);
  const Tensor w = on(be, in.weight), scale = on(be, in.scale), shift = on(be, in.shift);
  Tensor no_bias;
  Tensor c = activation(be, stem.features), b = activation(be, stem.features);
  Tensor mean = be.allocate(Shape{64}), variance = be.allocate(Shape{64});
  convolution->forward(x, w, no_bias, c);
  norm->forward_training(c, scale, shift, b, mean, variance);
  relu->forward(b, b);
  std::vector<Tensor> results;
  {
    Tensor y = activation(be, stem.pooled);
    pool->forward(b, y, true);
    results = {be.to_host(y.slice_samples(0, kSlice)), be.to_host(y.slice_samples(batch - kSlice, kSlice)),
               be.to_host(mean), be.to_host(variance)};
  }
  // The pool's input gradient, then ReLU's over it in place; batch norm's input gradient goes over
  // its own output `b`, dead once ReLU's backward has read it. In fp32 at most 3 tensors of 1.6 GB
  // (c, b, db) and 3 of 0.3-0.4 GB (x, the pool's argmax, dy or dx) are alive at once: about 6 GB.
  Tensor db = activation(be, stem.features);
  {
    const Tensor dy = on_activation(be, reference ? in.pool_gradient : in.batch_pool_gradient);
    pool->backward(dy, db);
  }
  relu->backward(b, db, db);
  Tensor dscale = be.allocate(Shape{64}), dshift = be.allocate(Shape{64});
  Tensor& dc = b;
  norm->backward(c, b, db, scale, shift, mean, variance, dc, dscale, dshift);
  Tensor dx = activation(be, stem.convolution.input), dw = be.allocate(stem.weight);
  convolution->backward_data(dc, w, dx);
  convolution->backward_weights(x, dc, dw, no_bias);
  results.push_back(be.to_host(dx.slice_samples(0, kSlice)));
  results.push_back(be.to_host(dx.slice_samples(batch - kSlice, kSlice)));
  for (const Tensor* sum : {&dw, &dscale, &dshift}) results.push_back(per_copy(be.to_host(*sum), copies));
  if (!reference) {
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const std::size_t peak = cuda::memory_stats(be).peak_in_use;
    std::size_t free_bytes = 0, total_bytes = 0;
    DPTRAIN_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    constexpr double kMiB = 1 << 20;
    std::printf(
        "resnet50 stem %s, batch %lld: forward and backward in %.1f s (a precision's first run includes its "
        "algorithm searches); GPU memory: %.0f MiB peak in this backend's allocator, %.0f of %.0f MiB in use "
        "on the device\n",
        std::string(name_of(be.precision())).c_str(), static_cast<long long>(batch), seconds,
        static_cast<double>(peak) / kMiB, static_cast<double>(total_bytes - free_bytes) / kMiB,
        static_cast<double>(total_bytes) / kMiB);
  }
  return results;
}
}  // namespace

TEST_CASE(
    "ResNet-50's stem at batch 512: the GPU agrees with the CPU's two images, forward and backward, in fp32 "
    "and bf16",
    "[gpu][stem]") {
  const Inputs in = make_inputs();
  gpu_testing::expect_agreement_in(
      {Precision::fp32, Precision::bf16}, [&](Backend& be) { return run_stem(be, in); },
      {"pool output, images 0-1", "pool output, images 510-511", "batch mean", "batch variance (biased)",
       "input gradient, images 0-1", "input gradient, images 510-511", "weight gradient per copy",
       "scale gradient per copy", "shift gradient per copy"});
}

}  // namespace dptrain
