#pragma once
// The checkpoint side of `dptrain train`: where to resume from, when to write, and when to stop.
//
// Rank 0 alone touches the checkpoint directory (one reader and one writer instead of thousands of
// ranks opening one file); what the others need (the progress, the weights) is broadcast, and so is
// the outcome of everything rank 0 does there: an error on rank 0 (the directory is locked by another
// run, cannot be written, holds only unusable checkpoints, the weights diverged) is thrown on every
// rank with rank 0's message, so no rank waits in a collective for a rank 0 that gave up. Decisions
// that end or pause the loop (a signal arrived on some rank, the time limit is near, a time-based
// checkpoint is due by rank 0's clock) are agreed by an allreduce at every step boundary, so all
// ranks stop at the same step and exactly one checkpoint is written.
#include <chrono>
#include <functional>
#include <optional>
#include <ostream>
#include <string>

#include "dptrain/ckpt/checkpoint_every.hpp"
#include "dptrain/ckpt/directory_lock.hpp"
#include "dptrain/ckpt/time_limit.hpp"
#include "dptrain/ckpt/training_state.hpp"
#include "dptrain/distributed/communicator.hpp"

namespace dptrain {

struct CheckpointOptions {
  std::string directory;          // --checkpoint-dir ("" : no checkpoints)
  std::string every = "1000";     // --checkpoint-every
  int keep = 3;                   // --keep
  std::string resume = "auto";    // --resume auto|none|PATH
  std::string time_limit;         // --time-limit
  std::int64_t stop_at_step = 0;  // --stop-at-step (0: never)
  std::string ready_file;         // --ready-file ("" : none)
  // --checkpoint-timeout: how long the other ranks wait for rank 0's checkpoint work (writing one,
  // reading and validating the candidates at resume) before the stall watchdog aborts the job.
  std::string timeout = "30m";
  // --preempt-signal: the warning signal that, like SIGTERM, stops the run with a checkpoint (USR1,
  // USR2, HUP or TERM; ckpt::parse_preemption_signal). Not stored: it is how the job is run, not what.
  std::string preempt_signal = "USR1";
};

class RunCheckpoints {
 public:
  // Collective. The caller has installed the signal handlers (ckpt::install_preemption_handlers),
  // first thing, so that a signal during start-up is kept for the first after_step(). With a
  // directory, rank 0 creates it, takes its lock for the whole run (released when this object goes;
  // a lock whose holder died is taken over, saying so), removes the temporary files a killed writer
  // left and checks that it can write there: a run that could never checkpoint stops now, not at its
  // first checkpoint.
  RunCheckpoints(CheckpointOptions options, distributed::Communicator& comm, std::ostream& log);

  // Collective. Once every rank has its signal handlers (they are installed before anything else
  // in `dptrain train`), rank 0 creates --ready-file, if given: a batch script holds back a signal
  // that arrives earlier (the default action would kill a rank that has no handler yet).
  void announce_ready();
  // Collective. Rank 0 finds the checkpoint to resume from (or none) and reads it; every rank gets
  // its progress (nullopt: a fresh start). `auto` starts afresh only when the directory holds no
  // checkpoint at all; when it holds some and none can be used, that is an error listing them.
  std::optional<ckpt::Progress> locate();
  // Collective, after locate() found one: rank 0 puts the weights, batch-norm statistics and momentum
  // into the net (validated: another model or shape is an error naming the tensor), then they are
  // broadcast to every rank. With `reset_classifier` and a step-0 checkpoint (an import) the net's
  // classifier layers keep their fresh initialisation (fine-tuning, for another class count or the
  // same); a checkpoint part-way through a run keeps its classifier when it fits (a requeued
  // fine-tuning job resumes exactly) and is an error saying how to take its weights alone when it
  // does not. Without it, a classifier of another class count is an error that names the option.
  // `aux_heads`: whether the run has auxiliary classifiers (a checkpoint without them is then an
  // error naming --no-aux).
  struct RestoreOptions {
    bool reset_classifier = false;
    bool aux_heads = true;
  };
  void restore(const std::string& model, Net& net, Sgd& sgd, const RestoreOptions& options);

  enum class Next { train, checkpoint, checkpoint_and_stop };
  // Collective, after every step: what to do before the next one. `next_seconds` (rank 0's) is how
  // long the run will take before it can next stop (the next step, and the evaluation after it when
  // it ends an epoch): with a time limit the run stops now when that, a checkpoint and some slack no
  // longer fit.
  Next after_step(std::int64_t step, bool last_step, double next_seconds = 0);
  // Collective. Rank 0 writes the checkpoint and prunes old ones; everybody waits for it. Weights or
  // momentum that are not finite are not written: an error on every rank naming the step, and the
  // previous checkpoint stays `latest`.
  // `tuned_choices`: the backend's (Backend::tuned_choices), stored for a resume to adopt.
  void write(const std::string& model, Net& net, Sgd& sgd, const ckpt::Progress& progress,
             const std::string& configuration, const std::string& tuned_choices = {});
  // Collective, after restore(): the restored checkpoint's tuned choices, on every rank ("" when it
  // has none).
  std::string restored_tuned_choices();

  bool enabled() const { return !options_.directory.empty(); }
  const std::string& resumed_from() const { return resumed_from_; }

 private:
  // Runs `work` on rank 0 only; then every rank returns, or every rank throws rank 0's error.
  void on_rank0(const std::function<void()>& work);
  void open_directory();  // rank 0

  CheckpointOptions options_;
  distributed::Communicator& comm_;
  std::ostream& log_;
  ckpt::CheckpointEvery every_;
  ckpt::TimeLimit limit_;
  double timeout_seconds_;  // --checkpoint-timeout
  double last_write_seconds_ = 0;
  std::optional<ckpt::DirectoryLock> lock_;    // rank 0, for the whole run
  std::optional<ckpt::TrainingState> loaded_;  // rank 0, between locate() and restore()
  std::string located_choices_;                // rank 0, from restore(): the checkpoint's tuned choices
  std::string resumed_from_;
};

}  // namespace dptrain
