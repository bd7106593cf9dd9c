#include "dptrain/train/statistics.hpp"

#include <algorithm>
#include <cmath>

namespace dptrain {

Summary summarize(const std::vector<double>& values) {
  Summary s;
  s.count = static_cast<int>(values.size());
  if (values.empty()) return s;
  double sum = 0;
  for (double v : values) sum += v;
  s.mean = sum / s.count;
  double squares = 0;
  for (double v : values) squares += (v - s.mean) * (v - s.mean);
  s.stderr_of_mean = s.count > 1 ? std::sqrt(squares / (s.count - 1)) / std::sqrt(static_cast<double>(s.count)) : 0;
  const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
  s.min = *lo;
  s.max = *hi;
  return s;
}

}  // namespace dptrain
