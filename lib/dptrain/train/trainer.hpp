#pragma once
// The training loop of one rank: forward, loss, backward, update. Data comes in through the Net's
// image and label tensors, filled by the caller (a loader or the synthetic source) before each step.
#include <cstdint>
#include <memory>

#include "dptrain/core/trace_recorder.hpp"
#include "dptrain/net/net.hpp"
#include "dptrain/optim/schedule.hpp"
#include "dptrain/optim/sgd.hpp"
#include "dptrain/train/loss_scaler.hpp"

namespace dptrain {

struct TrainerConfig {
  std::uint64_t seed = 1;
  SgdConfig sgd;
  ScheduleConfig schedule;
  LossScaleConfig loss_scale;  // none unless mixed precision asks for it
};

struct StepResult {
  double loss = 0;  // weighted sum of the losses
  double learning_rate = 0;
  std::int64_t top1 = 0;  // correct in this step's batch
  std::int64_t top5 = 0;
  bool skipped = false;  // the loss scaler found inf/NaN gradients: no update was applied
};

// A step whose work is queued (and on a GPU may still run) and whose score is not read yet. Its
// update is already decided: what is read later is only the loss and the top-k counts.
class QueuedStep {
 public:
  // Waits for the step's score, once.
  StepResult result();

 private:
  friend class Trainer;
  Net::PendingScores scores_;
  StepResult decided_;  // the rate and whether the update was skipped
};

class Trainer {
 public:
  Trainer(Net& net, TrainerConfig config);

  // One step on the batch already in net.images()/labels(); `first_sample` is the global index of
  // this rank's first sample (for dropout); `epoch` keys the randomness.
  StepResult step(std::int64_t epoch, std::int64_t first_sample) { return queue_step(epoch, first_sample).result(); }
  // The same step without waiting for its score: the caller may fill the next batch and queue the next
  // step first, so that a GPU is never left idle while the host reads. The update is never skipped or
  // applied on a late reading: the loss scaler's finiteness check (fp16) still waits for the device.
  // The QueuedStep must not outlive the net's backend.
  QueuedStep queue_step(std::int64_t epoch, std::int64_t first_sample);
  // Whether reading a step's score during the next step keeps the device busy: only where the host
  // merely queues a step (a GPU) and waits for nothing inside it (one rank: no gradients' sum; no
  // loss scaling: no finiteness check). Elsewhere a late read buys nothing and makes the steps' times
  // uneven (one step's work timed inside the next one's queueing), so train and bench read at once.
  bool late_reads_pay(int ranks) const;
  // Forward only, without training-only heads or dropout: for evaluation.
  StepResult evaluate_batch();

  std::int64_t global_step() const { return step_; }
  void set_global_step(std::int64_t step) { step_ = step; }
  // Records each step's forward, backward and update there (`dptrain train --trace`); null: nothing.
  void set_trace(TraceRecorder* trace) { trace_ = trace; }
  Sgd& optimizer() { return sgd_; }
  LossScaler& loss_scaler() { return scaler_; }
  const LearningRateSchedule& schedule() const { return schedule_; }

 private:
  Net& net_;
  TrainerConfig config_;
  Sgd sgd_;
  LearningRateSchedule schedule_;
  LossScaler scaler_;
  std::vector<Tensor*> gradients_;
  std::int64_t step_ = 0;
  int steps_run_ = 0;  // by this trainer: Backend::release_search_memory after the second
  TraceRecorder* trace_ = nullptr;
};

}  // namespace dptrain
