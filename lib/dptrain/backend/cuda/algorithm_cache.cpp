#include "dptrain/backend/cuda/algorithm_cache.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <sstream>

#include "dptrain/core/json_line.hpp"

namespace dptrain::cuda {
namespace {
constexpr const char* kFormat = "dptrain cuDNN convolution algorithms 1";
// Bounds on text that may come from a file: far above what a model needs (ResNet-50 has 53
// convolutions, three passes each), far below what would cost memory to hold.
constexpr std::size_t kMaxTextBytes = 16u << 20;
constexpr std::size_t kMaxChoices = 1u << 16;
constexpr std::size_t kMaxKeyBytes = 1024;
constexpr std::uint64_t kMaxWorkspaceBytes = std::uint64_t{1} << 40;

// How many algorithms cuDNN has for the pass a key names (the key starts with the pass); 0 for none.
int algorithm_count(const std::string& key) {
  const auto starts = [&](const char* pass) {
    return key.compare(0, std::strlen(pass), pass) == 0 && key.size() > std::strlen(pass) &&
           key[std::strlen(pass)] == ' ';
  };
  if (starts("forward")) return CUDNN_CONVOLUTION_FWD_ALGO_COUNT;
  if (starts("backward-data")) return CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT;
  if (starts("backward-weights")) return CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT;
  return 0;
}

bool is_math_type(int math) {
  return math == CUDNN_DEFAULT_MATH || math == CUDNN_TENSOR_OP_MATH || math == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION ||
         math == CUDNN_FMA_MATH;
}
}  // namespace

std::string AlgorithmCache::key(const char* pass, DType type, const ConvolutionSpec& spec) {
  const Window2d& w = spec.window;
  std::ostringstream out;
  out << pass << ' ' << name_of(type) << ' ' << spec.input.to_string() << " -> " << spec.out_channels << " k"
      << w.kernel_h << 'x' << w.kernel_w << " s" << w.stride_h << 'x' << w.stride_w << " p" << w.pad_h << 'x'
      << w.pad_w;
  return out.str();
}

std::string algorithm_name(const char* pass, int algo) {
  static const char* const forward[] = {"IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM", "DIRECT", "FFT", "FFT_TILING",
                                        "WINOGRAD",      "WINOGRAD_NONFUSED"};
  static const char* const data[] = {"ALGO_0", "ALGO_1", "FFT", "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED"};
  static const char* const filter[] = {"ALGO_0",    "ALGO_1", "FFT", "ALGO_3", "WINOGRAD", "WINOGRAD_NONFUSED",
                                       "FFT_TILING"};
  static_assert(std::size(forward) == CUDNN_CONVOLUTION_FWD_ALGO_COUNT);
  static_assert(std::size(data) == CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT);
  static_assert(std::size(filter) == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT);
  const char* const* names = nullptr;
  std::size_t count = 0;
  const std::string p = pass;
  if (p == "forward") names = forward, count = std::size(forward);
  if (p == "backward-data") names = data, count = std::size(data);
  if (p == "backward-weights") names = filter, count = std::size(filter);
  if (names != nullptr && algo >= 0 && static_cast<std::size_t>(algo) < count) return names[algo];
  // Appended, not `"#" + to_string(...)`, which GCC 12 misreads as an overlapping copy (-Wrestrict).
  std::string unknown = "#";
  unknown += std::to_string(algo);
  return unknown;
}

const char* math_type_name(cudnnMathType_t math) {
  switch (math) {
    case CUDNN_DEFAULT_MATH: return "default";
    case CUDNN_TENSOR_OP_MATH: return "tensor-op";
    case CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION: return "tensor-op (conversion)";
    case CUDNN_FMA_MATH: return "FMA";
  }
  return "unknown";
}

const FoundAlgorithm* AlgorithmCache::find(const std::string& key, bool count_reuse) {
  const auto it = found_.find(key);
  if (it == found_.end()) return nullptr;
  if (count_reuse) {
    ++stats_.reused;
    for (ConvolutionSearch& s : searches_) {
      if (s.key == key) ++s.layers;
    }
  }
  return &it->second;
}

void AlgorithmCache::add(const std::string& key, const FoundAlgorithm& found, double seconds, bool fell_back,
                         ConvolutionSearch search) {
  found_[key] = found;
  ++stats_.searches;
  stats_.seconds += seconds;
  if (fell_back) ++stats_.nondeterministic_fallbacks;
  search.key = key;
  for (ConvolutionSearch& earlier : searches_) {
    if (earlier.key != key) continue;
    search.layers = earlier.layers;  // searched again (an adopted choice that did not fit): one row
    earlier = std::move(search);
    return;
  }
  searches_.push_back(std::move(search));
}

std::string AlgorithmCache::to_text(const std::string& fingerprint) const {
  nlohmann::ordered_json choices = nlohmann::ordered_json::array();
  for (const auto& [key, found] : found_) {
    choices.push_back(
        {{"key", key}, {"algo", found.algo}, {"workspace", found.workspace}, {"math", static_cast<int>(found.math)}});
  }
  const nlohmann::ordered_json text = {{"format", kFormat}, {"fingerprint", fingerprint}, {"choices", choices}};
  return json_text(text);
}

AdoptedChoices AlgorithmCache::adopt(const std::string& text, const std::string& fingerprint) {
  if (text.size() > kMaxTextBytes) return {0, "the choices are " + std::to_string(text.size()) + " bytes long"};
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || j.value("format", std::string()) != kFormat || !j.contains("fingerprint") ||
      !j["fingerprint"].is_string() || !j.contains("choices") || !j["choices"].is_array()) {
    return {0, "the choices are not dptrain's cuDNN algorithm list"};
  }
  const std::string made_for = j["fingerprint"].get<std::string>();
  if (made_for != fingerprint) return {0, "they were made for " + made_for + ", this is " + fingerprint};
  const nlohmann::json& list = j["choices"];
  if (list.size() > kMaxChoices) return {0, "the list holds " + std::to_string(list.size()) + " choices"};
  std::map<std::string, FoundAlgorithm> taken;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const nlohmann::json& c = list[i];
    const std::string which = "choice " + std::to_string(i + 1);
    if (!c.is_object() || !c.contains("key") || !c["key"].is_string() || !c.contains("algo") ||
        !c["algo"].is_number_integer() || !c.contains("workspace") || !c["workspace"].is_number_unsigned() ||
        !c.contains("math") || !c["math"].is_number_integer()) {
      return {0, which + " lacks its key, algo, workspace or math"};
    }
    const std::string key = c["key"].get<std::string>();
    const int count = algorithm_count(key);
    const std::int64_t algo = c["algo"].get<std::int64_t>();
    const std::int64_t math = c["math"].get<std::int64_t>();
    const std::uint64_t workspace = c["workspace"].get<std::uint64_t>();
    if (key.size() > kMaxKeyBytes || count == 0) return {0, which + " names no convolution pass"};
    if (algo < 0 || algo >= count) return {0, which + " has algorithm " + std::to_string(algo) + " out of range"};
    if (math < 0 || math > 255 || !is_math_type(static_cast<int>(math))) {
      return {0, which + " has math type " + std::to_string(math) + ", which cuDNN does not define"};
    }
    if (workspace > kMaxWorkspaceBytes)
      return {0, which + " has a workspace of " + std::to_string(workspace) + " bytes"};
    taken[key] = {static_cast<int>(algo), static_cast<std::size_t>(workspace), static_cast<cudnnMathType_t>(math),
                  /*adopted=*/true};
  }
  if (taken.empty()) return {};  // nothing to take (a backend that has run no convolution yet)
  for (auto& [key, found] : taken) found_[key] = found;
  stats_.adopted += static_cast<int>(taken.size());
  ++generation_;
  return {static_cast<int>(taken.size()), {}};
}

}  // namespace dptrain::cuda
