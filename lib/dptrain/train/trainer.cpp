#include "dptrain/train/trainer.hpp"

#include <algorithm>

namespace dptrain {

Trainer::Trainer(Net& net, TrainerConfig config)
    : net_(net),
      config_(std::move(config)),
      sgd_(net.backend(), net.parameters(), config_.sgd),
      schedule_(config_.schedule),
      scaler_(config_.loss_scale) {
  for (Parameter* p : net.parameters()) gradients_.push_back(&p->grad);
}

QueuedStep Trainer::queue_step(std::int64_t epoch, std::int64_t first_sample) {
  const PassContext ctx{true, config_.seed, static_cast<std::uint64_t>(epoch), first_sample};
  for (StepHooks* hooks : net_.step_hooks()) hooks->step_starting();
  net_.set_loss_scale(scaler_.scale());
  {
    TraceSpan forward(trace_, TraceEvent::forward);
    net_.run_forward(ctx);
  }
  {
    TraceSpan backward(trace_, TraceEvent::backward);
    net_.backward();
  }
  // The net's step hooks (net/step_hooks.hpp): the next batch's transfer starts while the device
  // computes, then the gradients are summed over the ranks (distributed::GradientReducer).
  for (StepHooks* hooks : net_.step_hooks()) hooks->backward_queued();
  for (StepHooks* hooks : net_.step_hooks()) hooks->gradients_needed();
  const double lr = schedule_.at(step_);
  TraceSpan update(trace_, TraceEvent::optimizer_update);
  const bool apply = scaler_.unscale(net_.backend(), gradients_, step_ + 1);
  if (apply) sgd_.step(static_cast<float>(lr));
  update.finish();
  ++step_;
  // The first step made every choice by measuring, and a run then takes rank 0's (or a checkpoint's),
  // which the plans look up in the second: after it, free what only the searches needed.
  if (++steps_run_ == 2) net_.backend().release_search_memory();
  // The losses and the top-k counts, computed on the device, copied back behind the step's work.
  QueuedStep queued;
  queued.scores_ = net_.start_scores();
  queued.decided_.learning_rate = lr;
  queued.decided_.skipped = !apply;
  return queued;
}

bool Trainer::late_reads_pay(int ranks) const {
  return ranks == 1 && !scaler_.enabled() && !net_.backend().device().is_cpu();
}

StepResult Trainer::evaluate_batch() {
  const PassContext ctx{false, config_.seed, 0, 0};
  net_.run_forward(ctx);
  QueuedStep queued;
  queued.scores_ = net_.start_scores();
  return queued.result();
}

StepResult QueuedStep::result() {
  const Net::Scores scores = scores_.wait();
  StepResult result = decided_;
  result.loss = scores.loss;
  result.top1 = scores.top1;
  result.top5 = scores.top5;
  return result;
}

}  // namespace dptrain
