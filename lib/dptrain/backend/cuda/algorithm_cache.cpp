#include "dptrain/backend/cuda/algorithm_cache.hpp"

#include <sstream>

namespace dptrain::cuda {

std::string AlgorithmCache::key(const char* pass, DType type, const ConvolutionSpec& spec) {
  const Window2d& w = spec.window;
  std::ostringstream out;
  out << pass << ' ' << name_of(type) << ' ' << spec.input.to_string() << " -> " << spec.out_channels << " k"
      << w.kernel_h << 'x' << w.kernel_w << " s" << w.stride_h << 'x' << w.stride_w << " p" << w.pad_h << 'x'
      << w.pad_w;
  return out.str();
}

const FoundAlgorithm* AlgorithmCache::find(const std::string& key) {
  const auto it = found_.find(key);
  if (it == found_.end()) return nullptr;
  ++stats_.reused;
  return &it->second;
}

void AlgorithmCache::add(const std::string& key, const FoundAlgorithm& found, double seconds, bool fell_back) {
  found_[key] = found;
  ++stats_.searches;
  stats_.seconds += seconds;
  if (fell_back) ++stats_.nondeterministic_fallbacks;
}

}  // namespace dptrain::cuda
