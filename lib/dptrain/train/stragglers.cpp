#include "dptrain/train/stragglers.hpp"

#include <algorithm>

namespace dptrain {

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  const std::size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid), values.end());
  const double upper = values[mid];
  if (values.size() % 2 == 1) return upper;
  const double lower = *std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid));
  return (lower + upper) / 2;
}

std::vector<int> find_stragglers(const std::vector<double>& compute_seconds, double margin, double floor_seconds) {
  std::vector<int> slow;
  if (compute_seconds.size() < 2) return slow;
  const double middle = median(compute_seconds);
  for (std::size_t r = 0; r < compute_seconds.size(); ++r) {
    const double c = compute_seconds[r];
    if (c > (1 + margin) * middle && c - middle > floor_seconds) slow.push_back(static_cast<int>(r));
  }
  return slow;
}

std::vector<int> find_below_median(const std::vector<double>& figures, double fraction) {
  std::vector<int> slow;
  if (figures.size() < 2) return slow;
  const double middle = median(figures);
  for (std::size_t i = 0; i < figures.size(); ++i) {
    if (figures[i] < fraction * middle) slow.push_back(static_cast<int>(i));
  }
  return slow;
}

}  // namespace dptrain
