// The convolution algorithm cache's keys and counters (host code: runs without a GPU).
#include "dptrain/backend/cuda/algorithm_cache.hpp"

#include <array>
#include <catch2/catch.hpp>

using dptrain::ConvolutionSpec;
using dptrain::DType;
using dptrain::Shape;
using dptrain::Window2d;
using dptrain::cuda::AlgorithmCache;

namespace {
ConvolutionSpec bottleneck_3x3(const char* who) {
  ConvolutionSpec spec;
  spec.input = Shape{32, 64, 56, 56};
  spec.out_channels = 64;
  spec.window = Window2d::square(3, 1, 1);
  spec.bias = false;
  spec.who = who;
  return spec;
}
}  // namespace

TEST_CASE("two layers of one shape share a key; the pass, the type and every dimension tell keys apart") {
  const ConvolutionSpec a = bottleneck_3x3("layer1.0.conv2"), b = bottleneck_3x3("layer1.1.conv2");
  CHECK(AlgorithmCache::key("forward", DType::f32, a) == AlgorithmCache::key("forward", DType::f32, b));
  ConvolutionSpec with_bias = a;
  with_bias.bias = true;  // the bias is added outside cuDNN's convolution
  CHECK(AlgorithmCache::key("forward", DType::f32, a) == AlgorithmCache::key("forward", DType::f32, with_bias));

  CHECK(AlgorithmCache::key("forward", DType::f32, a) != AlgorithmCache::key("backward-data", DType::f32, a));
  CHECK(AlgorithmCache::key("forward", DType::f32, a) != AlgorithmCache::key("forward", DType::bf16, a));
  std::vector<ConvolutionSpec> others(8, a);
  others[0].input = Shape{16, 64, 56, 56};
  others[1].input = Shape{32, 64, 28, 56};
  others[2].out_channels = 128;
  others[3].window.kernel_w = 1;
  others[4].window.kernel_h = 1;
  others[5].window.stride_h = 2;
  others[6].window.pad_w = 0;
  others[7].input = Shape{32, 32, 56, 56};
  for (const ConvolutionSpec& other : others) {
    INFO(AlgorithmCache::key("forward", DType::f32, other));
    CHECK(AlgorithmCache::key("forward", DType::f32, a) != AlgorithmCache::key("forward", DType::f32, other));
  }
}

TEST_CASE("the cache returns what a search found and counts searches, reuses and their time") {
  AlgorithmCache cache;
  const std::string key = AlgorithmCache::key("forward", DType::bf16, bottleneck_3x3("conv"));
  CHECK(cache.find(key) == nullptr);
  CHECK(cache.stats().reused == 0);
  cache.add(key, {6, 1024, CUDNN_TENSOR_OP_MATH}, 0.25);
  cache.add(AlgorithmCache::key("backward-data", DType::bf16, bottleneck_3x3("conv")), {1, 0, CUDNN_DEFAULT_MATH}, 0.5);
  const dptrain::cuda::FoundAlgorithm* found = cache.find(key);
  REQUIRE(found != nullptr);
  CHECK(found->algo == 6);
  CHECK(found->workspace == 1024);
  CHECK(found->math == CUDNN_TENSOR_OP_MATH);
  CHECK(cache.find(key) != nullptr);
  CHECK(cache.stats().searches == 2);
  CHECK(cache.stats().reused == 2);
  CHECK(cache.stats().seconds == Approx(0.75));
}

TEST_CASE("a search takes the fastest deterministic algorithm that ran, unless any is allowed") {
  using dptrain::cuda::pick_algorithm;
  // As cudnnFind*Ex returns them: fastest first.
  std::array<cudnnConvolutionBwdFilterAlgoPerf_t, 4> results{};
  results[0].algo = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0;  // atomics: fastest here, nondeterministic
  results[0].status = CUDNN_STATUS_SUCCESS;
  results[0].determinism = CUDNN_NON_DETERMINISTIC;
  results[1].algo = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT;  // failed to run
  results[1].status = CUDNN_STATUS_NOT_SUPPORTED;
  results[1].determinism = CUDNN_DETERMINISTIC;
  results[2].algo = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1;
  results[2].status = CUDNN_STATUS_SUCCESS;
  results[2].determinism = CUDNN_DETERMINISTIC;
  results[3].algo = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3;
  results[3].status = CUDNN_STATUS_SUCCESS;
  results[3].determinism = CUDNN_DETERMINISTIC;
  bool fell_back = true;
  CHECK(pick_algorithm(results.data(), 4, true, fell_back) == 2);
  CHECK_FALSE(fell_back);
  CHECK(pick_algorithm(results.data(), 4, false, fell_back) == 0);
  CHECK_FALSE(fell_back);
  // Only a nondeterministic one ran: taken, and said so.
  CHECK(pick_algorithm(results.data(), 2, true, fell_back) == 0);
  CHECK(fell_back);
  // Nothing ran (or nothing returned): none.
  CHECK(pick_algorithm(results.data() + 1, 1, true, fell_back) == -1);
  CHECK_FALSE(fell_back);
  CHECK(pick_algorithm(results.data(), 0, false, fell_back) == -1);
}

TEST_CASE("the cache counts the searches that had to take a nondeterministic algorithm") {
  AlgorithmCache cache;
  CHECK(cache.deterministic());
  cache.set_deterministic(false);
  CHECK_FALSE(cache.deterministic());
  cache.add("a", {0, 0, CUDNN_DEFAULT_MATH}, 0.1, true);
  cache.add("b", {1, 0, CUDNN_DEFAULT_MATH}, 0.1);
  CHECK(cache.stats().searches == 2);
  CHECK(cache.stats().nondeterministic_fallbacks == 1);
}
