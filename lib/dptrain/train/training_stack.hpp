#pragma once
// What a training process builds the same way whatever feeds it (`dptrain train` from a dataset,
// `dptrain bench` from one synthetic batch): the backend of this rank's device, the model on it
// (initialised from the seed, then made the same on every rank), its trainer, and the gradients' path
// (NCCL on GPUs, else the job's host communicator; the reducer attached to the net, the trainer
// summing through it).
//
// Built in two parts, because what the trainer needs may depend on the backend: `dptrain train`
// builds its loader from the backend's input type, and the trainer's schedule from the loader's steps
// per epoch.
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "dptrain/backend/backend.hpp"
#include "dptrain/distributed/gradient_reducer.hpp"
#include "dptrain/distributed/job.hpp"
#include "dptrain/net/models/registry.hpp"
#include "dptrain/net/net.hpp"
#include "dptrain/train/compute_options.hpp"
#include "dptrain/train/trainer.hpp"

namespace dptrain {

class TrainingStack {
 public:
  // Collective: the backend (`device`), model `model` of `config` (its memory options taken from
  // `device`), initialised from `seed` and broadcast from rank 0.
  TrainingStack(distributed::Job& job, const BackendOptions& device, const std::string& model, ModelConfig config,
                std::uint64_t seed);
  ~TrainingStack();
  TrainingStack(const TrainingStack&) = delete;
  TrainingStack& operator=(const TrainingStack&) = delete;

  // The trainer of `config`, and the gradient path under it. Once.
  Trainer& start_training(const TrainerConfig& config);

  Backend& backend() { return *backend_; }
  Net& net() { return *net_; }
  Trainer& trainer();                       // after start_training()
  distributed::GradientReducer& reducer();  // after start_training()

  // When the last step queued had written every gradient (GradientReducer::last_gradients_ready_at;
  // 0 where that is not known): taken right after the step is queued, before the next one is.
  double gradients_ready_at() const;
  // The seconds a step computed, counted from `step_start` (data wait included): until its backward
  // pass wrote the last gradient (`gradients_ready_at`), for after that a rank waits for the others
  // (the allreduce), so a straggler shows here and not in the step time; the whole `step_seconds`
  // where that moment is not known (one rank: nothing to wait for).
  static double compute_seconds(double gradients_ready_at, std::chrono::steady_clock::time_point step_start,
                                double step_seconds);

 private:
  distributed::Job& job_;
  // Declared in the order they are built: each is destroyed before what it uses.
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<Net> net_;
  std::unique_ptr<Trainer> trainer_;
  std::unique_ptr<distributed::Communicator> gradient_comm_;
  std::unique_ptr<distributed::GradientReducer> reducer_;
};

}  // namespace dptrain
