#pragma once
// cuDNN's algorithm search (cudnnFind*Ex times every candidate on the device) once per convolution
// shape, pass and precision in a backend, instead of once per layer: ResNet-50 repeats each of its
// bottleneck shapes up to six times, and Inception's branches repeat theirs across modules.
#include <cudnn.h>

#include <cstddef>
#include <map>
#include <string>

#include "dptrain/backend/specs.hpp"
#include "dptrain/core/tensor.hpp"

namespace dptrain::cuda {

// What the search chose for one pass of one shape (the algorithm as cuDNN's enum value of that pass).
struct FoundAlgorithm {
  int algo = 0;
  std::size_t workspace = 0;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;  // the math type cuDNN timed the algorithm with
};

// Searches made (one per distinct key), searches saved by reuse, and the time the searches took.
struct AlgorithmSearchStats {
  int searches = 0;
  int reused = 0;
  double seconds = 0;
};

class AlgorithmCache {
 public:
  // The identity of a search: the pass, the element type and everything of the spec that cuDNN's
  // descriptors see (the bias does not reach cuDNN's convolution, and the name does not matter).
  static std::string key(const char* pass, DType type, const ConvolutionSpec& spec);

  const FoundAlgorithm* find(const std::string& key);  // counts a reuse when found
  void add(const std::string& key, const FoundAlgorithm& found, double seconds);
  AlgorithmSearchStats stats() const { return stats_; }

 private:
  std::map<std::string, FoundAlgorithm> found_;
  AlgorithmSearchStats stats_;
};

}  // namespace dptrain::cuda
