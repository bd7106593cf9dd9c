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
// And at least this much over it, a step: on steps of a few milliseconds, 10% is within the noise of
// a shared node (CI's 2 cores with 4 ranks named a healthy rank at +14% of a 5.5 ms step), and a
// rank later by under a millisecond costs the others little.
inline constexpr double kStragglerFloorSeconds = 0.001;

// The median of `values` (the mean of the middle two for an even count); 0 for none.
double median(std::vector<double> values);

// The ranks whose compute time (a mean a step, by rank) is more than `margin` and more than
// `floor_seconds` over the median rank's.
std::vector<int> find_stragglers(const std::vector<double>& compute_seconds, double margin = kStragglerMargin,
                                 double floor_seconds = kStragglerFloorSeconds);

// The indices whose figure (higher is better: GFLOP/s, GB/s) is below `fraction` of the median of
// `figures`: the slow ranks or nodes of `dptrain preflight`. None with fewer than two figures.
std::vector<int> find_below_median(const std::vector<double>& figures, double fraction);

}  // namespace dptrain
