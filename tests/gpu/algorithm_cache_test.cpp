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

namespace {
const std::string kGpu = "NVIDIA H200 (sm_90), cuDNN 9.19.0, deterministic algorithms";

// A cache that has searched two passes of one shape, as after a first step.
AlgorithmCache searched_cache() {
  AlgorithmCache cache;
  cache.add(AlgorithmCache::key("forward", DType::f32, bottleneck_3x3("conv")), {6, 4096, CUDNN_FMA_MATH}, 0.2);
  cache.add(AlgorithmCache::key("backward-weights", DType::bf16, bottleneck_3x3("conv")), {1, 0, CUDNN_TENSOR_OP_MATH},
            0.3);
  return cache;
}

// The text of one choice, to build hostile lists from.
std::string list_with(const std::string& choice, const std::string& fingerprint = kGpu) {
  return R"({"format":"dptrain cuDNN convolution algorithms 1","fingerprint":")" + fingerprint + R"(","choices":[)" +
         choice + "]}";
}
}  // namespace

TEST_CASE("choices written as text are taken whole by another cache made for the same GPU and policy") {
  const AlgorithmCache made = searched_cache();
  const std::string text = made.to_text(kGpu);
  AlgorithmCache taker;
  // The taker had timed a different forward algorithm: the adopted one replaces it.
  const std::string forward = AlgorithmCache::key("forward", DType::f32, bottleneck_3x3("conv"));
  taker.add(forward, {0, 0, CUDNN_DEFAULT_MATH}, 0.1);
  CHECK(taker.generation() == 0);
  const dptrain::AdoptedChoices adopted = taker.adopt(text, kGpu);
  CHECK(adopted.refused.empty());
  CHECK(adopted.taken == 2);
  CHECK(taker.generation() == 1);
  CHECK(taker.stats().adopted == 2);
  const dptrain::cuda::FoundAlgorithm* found = taker.find(forward, /*count_reuse=*/false);
  REQUIRE(found != nullptr);
  CHECK(found->algo == 6);
  CHECK(found->workspace == 4096);
  CHECK(found->math == CUDNN_FMA_MATH);
  CHECK(found->adopted);
  CHECK(taker.stats().reused == 0);  // a look again after adopt() is not a search saved
  const dptrain::cuda::FoundAlgorithm* weights =
      taker.find(AlgorithmCache::key("backward-weights", DType::bf16, bottleneck_3x3("conv")));
  REQUIRE(weights != nullptr);
  CHECK(weights->algo == 1);
  CHECK(weights->math == CUDNN_TENSOR_OP_MATH);
  CHECK(taker.stats().reused == 1);
  // The taker's text now says the same as the maker's: a checkpoint of the resumed run stores the same.
  CHECK(taker.to_text(kGpu) == text);
}

TEST_CASE("choices made for another GPU, cuDNN or policy are refused, naming both") {
  const std::string text = searched_cache().to_text(kGpu);
  for (const std::string& other : {std::string("NVIDIA A100-SXM4-40GB (sm_80), cuDNN 9.19.0, deterministic algorithms"),
                                   std::string("NVIDIA H200 (sm_90), cuDNN 9.20.0, deterministic algorithms"),
                                   std::string("NVIDIA H200 (sm_90), cuDNN 9.19.0, any algorithm")}) {
    AlgorithmCache taker;
    const dptrain::AdoptedChoices adopted = taker.adopt(text, other);
    INFO(adopted.refused);
    CHECK(adopted.taken == 0);
    CHECK(adopted.refused.find(kGpu) != std::string::npos);
    CHECK(adopted.refused.find(other) != std::string::npos);
    CHECK(taker.generation() == 0);
    CHECK(taker.stats().adopted == 0);
  }
}

TEST_CASE("an empty list is taken as nothing, and the plans are not asked to look again") {
  const std::string text = AlgorithmCache().to_text(kGpu);
  AlgorithmCache taker;
  const dptrain::AdoptedChoices adopted = taker.adopt(text, kGpu);
  CHECK(adopted.refused.empty());
  CHECK(adopted.taken == 0);
  CHECK(taker.generation() == 0);
}

TEST_CASE("text that is not a valid choice list is refused whole, with the reason, and changes nothing") {
  const std::string forward = AlgorithmCache::key("forward", DType::f32, bottleneck_3x3("conv"));
  const std::string good = R"({"key":")" + forward + R"(","algo":1,"workspace":0,"math":0})";
  struct Case {
    std::string text;
    std::string reason;  // a part of the reason given
  };
  const std::vector<Case> cases = {
      {"", "not dptrain's"},
      {"not json at all", "not dptrain's"},
      {"[1,2,3]", "not dptrain's"},
      {R"({"format":"something else","fingerprint":")" + kGpu + R"(","choices":[]})", "not dptrain's"},
      {R"({"format":"dptrain cuDNN convolution algorithms 1","fingerprint":7,"choices":[]})", "not dptrain's"},
      {R"({"format":"dptrain cuDNN convolution algorithms 1","fingerprint":")" + kGpu + R"(","choices":{}})",
       "not dptrain's"},
      {list_with("42"), "choice 1 lacks"},
      {list_with(good + R"(,{"key":"forward x","algo":1,"workspace":0})"), "choice 2 lacks"},
      {list_with(R"({"key":"sideways f32 1x1","algo":1,"workspace":0,"math":0})"), "names no convolution pass"},
      {list_with(R"({"key":"forwardish f32","algo":1,"workspace":0,"math":0})"), "names no convolution pass"},
      {list_with(R"({"key":"forward )" + std::string(2000, 'x') + R"(","algo":1,"workspace":0,"math":0})"),
       "names no convolution pass"},
      {list_with(R"({"key":"forward f32","algo":-1,"workspace":0,"math":0})"), "out of range"},
      {list_with(R"({"key":"forward f32","algo":)" + std::to_string(CUDNN_CONVOLUTION_FWD_ALGO_COUNT) +
                 R"(,"workspace":0,"math":0})"),
       "out of range"},
      {list_with(R"({"key":"backward-data f32","algo":)" + std::to_string(CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT) +
                 R"(,"workspace":0,"math":0})"),
       "out of range"},
      {list_with(R"({"key":"forward f32","algo":1.5,"workspace":0,"math":0})"), "lacks"},
      {list_with(R"({"key":"forward f32","algo":1,"workspace":-4,"math":0})"), "lacks"},
      {list_with(R"({"key":"forward f32","algo":1,"workspace":0,"math":9})"), "math type 9"},
      {list_with(R"({"key":"forward f32","algo":1,"workspace":2000000000000000,"math":0})"), "workspace of"},
      {std::string(17u << 20, ' '), "bytes long"},
  };
  for (const Case& c : cases) {
    AlgorithmCache taker = searched_cache();
    const std::string before = taker.to_text(kGpu);
    const dptrain::AdoptedChoices adopted = taker.adopt(c.text, kGpu);
    INFO(c.text.substr(0, 200) << " -> " << adopted.refused);
    CHECK(adopted.taken == 0);
    CHECK(adopted.refused.find(c.reason) != std::string::npos);
    CHECK(taker.generation() == 0);
    CHECK(taker.to_text(kGpu) == before);  // a bad entry after good ones takes none of them
  }
}
