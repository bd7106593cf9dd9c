#include "dptrain/train/next_stop.hpp"

namespace dptrain {

double seconds_before_next_stop(const NextStop& next) {
  double seconds = next.step_seconds;
  if (next.evaluates) {
    seconds += next.last_evaluation_seconds ? *next.last_evaluation_seconds
                                            : static_cast<double>(next.evaluation_batches) * next.step_seconds;
  }
  return seconds;
}

bool step_ends_epoch(std::int64_t samples_in_epoch, std::int64_t global_batch, std::int64_t samples_per_epoch) {
  // The same rule as the run's progress: an epoch ends when another global batch no longer fits.
  return samples_in_epoch + 2 * global_batch > samples_per_epoch;
}

}  // namespace dptrain
