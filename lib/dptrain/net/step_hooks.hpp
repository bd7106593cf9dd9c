#pragma once
// What other parts of a process run at the points of a training step, registered with the net (Caffe's
// solver and net callbacks, one interface): the gradient reducer starts a bucket's allreduce as the
// backward pass finishes its gradients and waits for them before the update; the training run fetches
// the next batch while the device computes; a test build of the command line makes a straggler on
// purpose (tests/e2e/throttled_dptrain.cpp). Each hook does nothing unless overridden. They are called
// on the step's thread, in the order they were added; a hook must not add or remove hooks.
#include <cstddef>

#include "dptrain/layers/layer.hpp"

namespace dptrain {

class StepHooks {
 public:
  virtual ~StepHooks() = default;
  // Trainer::step, first: the batch is in place and nothing of this step is queued yet.
  virtual void step_starting() {}
  // Net::backward: `parameter`'s gradient is final for this step (its kernels are queued; the
  // backward pass goes on).
  virtual void gradient_ready(Parameter& parameter) { (void)parameter; }
  // Net::run_forward and Net::backward, around each layer's work of a pass (queued in between; in
  // the backward pass that includes summing its input gradients into those of other consumers):
  // `node` is the layer's index in Net::nodes(). `dptrain bench --layers` times layers by them.
  virtual void layer_starting(std::size_t node, bool backward) { (void)node, (void)backward; }
  virtual void layer_finished(std::size_t node, bool backward) { (void)node, (void)backward; }
  // Trainer::step: the backward pass is queued, and the host waits for nothing yet (the gradients'
  // sum, the loss scaler's check, the loss): on a GPU the host is free here while the device computes.
  virtual void backward_queued() {}
  // Trainer::step, before the update: every gradient must hold its final value (summed over the ranks)
  // when this returns.
  virtual void gradients_needed() {}
};

}  // namespace dptrain
