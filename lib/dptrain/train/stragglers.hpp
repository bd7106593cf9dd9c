#pragma once
// A rank that computes consistently slower than the others (a throttled GPU, a node whose CPUs are
// busy with something else) makes every rank wait for it at every allreduce, and the step times,
// equal after the allreduce, cannot show which. Each rank's compute time before it waits for the
// gradients can: the training log compares them over windows of at least kStragglerWindowSteps steps.
#include <cstdint>
#include <vector>

namespace dptrain {

inline constexpr std::int64_t kStragglerWindowSteps = 50;
inline constexpr double kStragglerMargin = 0.10;  // over the median

// The median of `values` (the mean of the middle two for an even count); 0 for none.
double median(std::vector<double> values);

// The ranks whose compute time (a mean a step, by rank) is more than `margin` over the median rank's.
std::vector<int> find_stragglers(const std::vector<double>& compute_seconds, double margin = kStragglerMargin);

}  // namespace dptrain
