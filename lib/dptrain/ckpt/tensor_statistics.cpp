#include "dptrain/ckpt/tensor_statistics.hpp"

#include <algorithm>
#include <cmath>

namespace dptrain::ckpt {

TensorStatistics tensor_statistics(const Tensor& t) {
  TensorStatistics s;
  s.count = t.numel();
  if (s.count == 0) return s;
  const float* v = t.elements<float>();
  double sum = 0, squares = 0;
  double lo = v[0], hi = v[0];
  for (std::int64_t i = 0; i < s.count; ++i) {
    const double x = v[i];
    sum += x;
    squares += x * x;
    lo = std::min(lo, x);
    hi = std::max(hi, x);
  }
  const auto n = static_cast<double>(s.count);
  s.mean = sum / n;
  // A second pass: E[x^2] - E[x]^2 cancels badly when the mean dominates (batch-norm variances).
  double deviations = 0;
  for (std::int64_t i = 0; i < s.count; ++i) deviations += (v[i] - s.mean) * (v[i] - s.mean);
  s.std = std::sqrt(deviations / n);
  s.min = lo;
  s.max = hi;
  s.l2_norm = std::sqrt(squares);
  return s;
}

}  // namespace dptrain::ckpt
