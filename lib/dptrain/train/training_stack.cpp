#include "dptrain/train/training_stack.hpp"

#include <algorithm>

#include "dptrain/core/error.hpp"
#include "dptrain/distributed/parameter_sync.hpp"
#include "dptrain/train/memory_check.hpp"

namespace dptrain {

TrainingStack::TrainingStack(distributed::Job& job, const BackendOptions& device, const std::string& model,
                             ModelConfig config, std::uint64_t seed)
    : job_(job), backend_(make_backend(device, job)) {
  config.memory = memory_options(device, NetPurpose::training);
  // Before any activation is allocated: a run that cannot fit ends here, with the batch that would.
  check_memory_fits(model, config, device, *backend_, job.topology().local_size(), job.communicator().size());
  net_ = build_model(model, *backend_, config);
  net_->initialize(seed);
  distributed::broadcast_parameters(*net_, job.communicator());
}

TrainingStack::~TrainingStack() = default;

Trainer& TrainingStack::start_training(const TrainerConfig& config) {
  DPTRAIN_CHECK(!trainer_, "TrainingStack::start_training() twice");
  trainer_ = std::make_unique<Trainer>(*net_, config);
  // Gradients go through NCCL on GPUs; metrics, checkpoints and control stay on the host communicator.
  gradient_comm_ = make_gradient_communicator(*backend_, job_);
  distributed::Communicator& host = job_.communicator();
  reducer_ = std::make_unique<distributed::GradientReducer>(*backend_, gradient_comm_ ? *gradient_comm_ : host,
                                                            net_->parameters(), job_.reducer_config());
  reducer_->attach(*net_);  // the trainer's steps now sum the gradients through it
  return *trainer_;
}

Trainer& TrainingStack::trainer() {
  DPTRAIN_CHECK(trainer_, "TrainingStack::trainer() before start_training()");
  return *trainer_;
}

distributed::GradientReducer& TrainingStack::reducer() {
  DPTRAIN_CHECK(reducer_, "TrainingStack::reducer() before start_training()");
  return *reducer_;
}

double TrainingStack::gradients_ready_at() const { return reducer_ ? reducer_->last_gradients_ready_at() : 0.0; }

double TrainingStack::compute_seconds(double gradients_ready_at, std::chrono::steady_clock::time_point step_start,
                                      double step_seconds) {
  if (gradients_ready_at <= 0) return step_seconds;
  return std::max(0.0, gradients_ready_at - std::chrono::duration<double>(step_start.time_since_epoch()).count());
}

}  // namespace dptrain
