#pragma once
// A training run: what `dptrain train` does, as a type the command line and the tests drive alike.
//
// The constructor is the start-up (collective): the preemption signal handlers first, then the job (MPI),
// the manifest, the backend, the model, the checkpoint to resume from (weights, momentum, the data
// position and the loss scale), the loaders, the trainer and the gradient reducer. Each step() is one
// training step and the decisions at its end, in this order: the log window, the epoch's end (data
// wait warning, evaluation on the validation split), then the checkpoint (on its schedule, at the
// last step, or when a signal, --stop-at-step or the time limit says stop). Every decision is agreed
// by all ranks, so they all take the same branch at the same step.
#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>

#include "dptrain/ckpt/training_state.hpp"
#include "dptrain/train/evaluation.hpp"
#include "dptrain/train/run_config.hpp"
#include "dptrain/train/trainer.hpp"

namespace dptrain {

// What the end of a step decided.
struct StepOutcome {
  // This step's score, where its end read it: the first step, a log line, an epoch's end, the last
  // step, a checkpoint or a stop. Any other step's score is read (its loss checked and logged) during
  // the next step, once that step's work is queued.
  std::optional<StepResult> result;
  bool epoch_end = false;     // the next step starts a new epoch
  bool evaluated = false;     // the validation split was scored after this step
  bool checkpointed = false;  // a checkpoint holds the state after this step
  bool stop = false;          // the run stops here before its last step (exit code 75)
};

class TrainingRun {
 public:
  // `out`: rank 0 prints its human lines there; the other ranks print nothing.
  TrainingRun(TrainingRunConfig config, std::ostream& out);
  ~TrainingRun();
  TrainingRun(const TrainingRun&) = delete;
  TrainingRun& operator=(const TrainingRun&) = delete;

  // Collective: one step and its end-of-step decisions. Only while !finished().
  StepOutcome step();
  // No step is left: the last one ran, or a stop was decided.
  bool finished() const;
  // Reads a step's score during the next step even where that buys nothing (Trainer::late_reads_pay:
  // the CPU, several ranks, fp16), so that a test can follow a GPU's order on the CPU.
  void read_late_everywhere();
  // Collective: steps until finished(), then the summary; the process's exit code (0, or
  // ckpt::kExitPreempted when it stopped early after a checkpoint).
  int run();

  // Where the run stands after the last step: what a checkpoint written now holds.
  const ckpt::Progress& progress() const;
  std::int64_t first_step() const;  // the step the run started at (a resume's checkpoint step)
  std::int64_t total_steps() const;
  std::int64_t steps_per_epoch() const;
  int per_rank_batch() const;
  int global_batch() const;
  bool resumed() const;
  // The last evaluation (nullopt before the first).
  const std::optional<Evaluation>& last_evaluation() const;
  Net& net();

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace dptrain
