#pragma once
// How long a run works after a step before it can next stop, for the time limit's margin: the next
// step, and the evaluation after it when that step ends an epoch (or the run). Without this margin a
// run that passed the check at the end of an epoch's last-but-one step would start a long evaluation
// (ImageNet's 50,000 images: minutes) that Slurm's time limit cuts off before the checkpoint.
#include <cstdint>
#include <optional>

namespace dptrain {

struct NextStop {
  double step_seconds = 0;  // the step just done (the next is about as long)
  bool evaluates = false;   // an evaluation follows the next step
  std::optional<double> last_evaluation_seconds;
  std::int64_t evaluation_batches = 0;  // batches of one evaluation pass on each rank
};

// Seconds until the next chance to stop. Before the first evaluation its time is guessed as
// `evaluation_batches` training steps: an evaluation batch is a forward pass, about a third of a
// training step's work, so the guess errs on the safe side.
double seconds_before_next_stop(const NextStop& next);

// Whether the step that starts at `samples_in_epoch` (global batch `global_batch`, `samples_per_epoch`
// trained per epoch) is its epoch's last.
bool step_ends_epoch(std::int64_t samples_in_epoch, std::int64_t global_batch, std::int64_t samples_per_epoch);

}  // namespace dptrain
