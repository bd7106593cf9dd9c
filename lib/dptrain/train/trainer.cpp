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

StepResult Trainer::step(std::int64_t epoch, std::int64_t first_sample) {
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
  StepResult result = score();
  result.learning_rate = lr;
  result.skipped = !apply;
  return result;
}

StepResult Trainer::evaluate_batch() {
  const PassContext ctx{false, config_.seed, 0, 0};
  net_.run_forward(ctx);
  return score();
}

StepResult Trainer::score() {
  // The losses and the top-k counts, computed on the device, in one small read-back.
  const Net::Scores scores = net_.scores();
  StepResult result;
  result.loss = scores.loss;
  result.top1 = scores.top1;
  result.top5 = scores.top5;
  return result;
}

}  // namespace dptrain
