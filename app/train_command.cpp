// dptrain train: trains a model from HDF5 shards on one or many ranks (srun / mpiexec). The run itself
// is a TrainingRun (lib/dptrain/train/training_run.hpp); this file turns the command line into its
// configuration.
#include <iostream>

#include "backend_options.hpp"
#include "commands.hpp"
#include "distributed_options.hpp"
#include "dptrain/ckpt/checkpoint_every.hpp"
#include "dptrain/ckpt/time_limit.hpp"
#include "dptrain/core/error.hpp"
#include "dptrain/core/exit_codes.hpp"
#include "dptrain/core/trace_recorder.hpp"
#include "dptrain/optim/schedule.hpp"
#include "dptrain/train/training_run.hpp"
#include "option_checks.hpp"

namespace dptrain::app {

Command add_train_command(CLI::App& app, std::vector<StepHooks*> step_hooks) {
  auto* cmd = app.add_subcommand("train",
                                 "Train a model from a dataset directory (HDF5 shards + manifest.json), "
                                 "on one process or many (srun, mpiexec)");
  auto o = std::make_shared<TrainingRunConfig>();
  cmd->add_option("--model", o->model, "Model name (see 'dptrain inspect --list')")->required();
  cmd->add_option("--data", o->data, "Dataset directory made by 'dptrain data convert'")
      ->required()
      ->check(CLI::ExistingDirectory);
  auto* epochs = cmd->add_option("--epochs", o->epochs, "Train this many epochs")->check(at_least(1));
  auto* steps = cmd->add_option("--steps", o->steps, "Train this many steps")->check(at_least(1));
  epochs->excludes(steps);
  cmd->add_option("--batch-size", o->batch,
                  "Images per step on each rank (the global batch is this times the ranks; "
                  "a resume without it keeps the checkpoint's global batch)")
      ->check(at_least(1))
      ->capture_default_str()
      ->each([o](const std::string&) { o->batch_given = true; });
  cmd->add_option("--lr", o->lr, "Learning rate per 256 images of global batch (scaled linearly)")
      ->check(above_zero())
      ->capture_default_str();
  cmd->add_option("--schedule", o->schedule, "Learning-rate schedule: constant, step, poly or cosine")
      ->check(parsed_by("SCHEDULE", [](const std::string& name) { parse_schedule(name); }))
      ->capture_default_str();
  cmd->add_option("--milestones", o->milestones,
                  "Epochs at which --schedule step divides the rate by 10 (30 60 90, or 30,60,90)")
      ->delimiter(',')
      ->check(at_least(0));
  cmd->add_option("--warmup-epochs", o->warmup_epochs, "Linear warm-up from 0 over this many epochs")
      ->check(at_least(0))
      ->capture_default_str();
  cmd->add_option("--momentum", o->momentum, "SGD momentum")->check(from_zero_below_one())->capture_default_str();
  cmd->add_flag("--nesterov", o->nesterov, "Nesterov momentum");
  cmd->add_option("--weight-decay", o->weight_decay, "Weight decay (not on biases and batch norm)")
      ->check(at_least(0))
      ->capture_default_str();
  cmd->add_option("--label-smoothing", o->label_smoothing, "Label smoothing of the loss")
      ->check(from_zero_below_one())
      ->capture_default_str();
  cmd->add_flag("!--no-aux", o->aux_heads, "Train without the auxiliary classifiers");
  cmd->add_option("--crop", o->crop, "Input size the model sees (default: the stored image size)")->check(at_least(1));
  cmd->add_option("--pad", o->pad, "Zero padding before the random crop in training")
      ->check(at_least(0))
      ->capture_default_str();
  cmd->add_flag("--flip", o->flip, "Random horizontal flips in training");
  add_loader_threads_option(cmd, o->loader_threads);
  cmd->add_option("--seed", o->seed, "Seed of the weights, the sample order and augmentation")->capture_default_str();
  cmd->add_option("--metrics", o->metrics, "Write JSON lines (steps, evaluations, summary) to this file (rank 0)")
      ->check(output_file());
  auto* trace = cmd->add_option("--trace", o->trace,
                                "Record a timeline of a window of steps (forward, backward, each gradient bucket's "
                                "allreduce, waits, checkpoints, evaluations) to DIR/trace-rank-R.json on every rank, "
                                "in the Chrome trace format (open it in ui.perfetto.dev or chrome://tracing)")
                    ->check(output_directory());
  cmd->add_option("--trace-steps", o->trace_steps,
                  "The steps --trace records, FIRST:LAST (the log's step numbers, at most 10000 steps; default: "
                  "the 5th to the 24th step of this run)")
      ->needs(trace)
      ->check([](const std::string& text) {
        try {
          parse_trace_window(text);
        } catch (const Error& e) {
          return std::string(e.what());
        }
        return std::string();
      });
  cmd->add_option("--log-every", o->log_every, "Print a line every this many steps")
      ->check(at_least(1))
      ->capture_default_str();
  add_backend_options(cmd, o->device, true);
  add_distributed_options(cmd, o->dist);
  const char* group = "Checkpoints";
  CheckpointOptions& c = o->checkpoints;
  cmd->add_option("--checkpoint-dir", c.directory,
                  "Write checkpoints here (rank 0; ckpt-<step>.h5 and 'latest'); locked for the whole run "
                  "(dptrain.lock): a second run on it is refused")
      ->group(group);
  cmd->add_option("--checkpoint-every", c.every,
                  "Steps (500) or wall time (30m, 2h) between checkpoints; 0: only "
                  "at the end and when stopped")
      ->check(parsed_by("STEPS|DURATION", [](const std::string& text) { ckpt::CheckpointEvery::parse(text); }))
      ->capture_default_str()
      ->group(group);
  cmd->add_option("--keep", c.keep, "Keep the newest K checkpoints (0: all)")
      ->check(at_least(0))
      ->capture_default_str()
      ->group(group);
  cmd->add_option("--resume", c.resume,
                  "auto: from the newest valid checkpoint in --checkpoint-dir; a fresh start only when it "
                  "holds none (an error when none of its checkpoints can be used); none: a fresh start; or a "
                  "checkpoint file or directory")
      ->capture_default_str()
      ->group(group);
  cmd->add_flag("--reset-classifier", o->reset_classifier,
                "With --resume of a step-0 checkpoint (dptrain import): start the classifier layers afresh "
                "and take the rest from it; from a checkpoint part-way through a run a classifier that fits "
                "is kept, so a requeued job resumes exactly")
      ->group(group);
  cmd->add_flag("--reschedule", o->reschedule,
                "On a resume whose --steps or --epochs differ from the checkpoint's run: decay the poly or cosine "
                "schedule over the new length (every rate from there on changes); without it such a resume is "
                "refused, so that a resume continues its run exactly")
      ->group(group);
  cmd->add_option("--time-limit", c.time_limit,
                  "Checkpoint and exit with code 75 before this much wall time "
                  "(HH:MM:SS, 90m, 2h); Slurm's end time is used as well. The run stops while the next step, "
                  "the evaluation after it at an epoch's end, twice the last checkpoint's write and 60 s still fit")
      ->check(parsed_by("DURATION", [](const std::string& text) { ckpt::parse_time_limit(text); }))
      ->group(group);
  cmd->add_option("--checkpoint-timeout", c.timeout,
                  "How long the other ranks wait for rank 0's checkpoint work (writing one; reading and "
                  "validating the candidates at resume) before the stall watchdog aborts the job (instead of "
                  "--stall-timeout)")
      ->check(positive_duration("--checkpoint-timeout"))
      ->capture_default_str()
      ->group(group);
  cmd->add_option("--stop-at-step", c.stop_at_step,
                  "Checkpoint and exit with code 75 after this global step, as "
                  "if preempted (split a run into chunks; tests)")
      ->check(at_least(1))
      ->group(group);
  cmd->add_option("--preempt-signal", c.preempt_signal,
                  "The signal that, like TERM, asks for a checkpoint and exit 75: USR1, USR2, HUP or TERM (give "
                  "Slurm's --signal the same; USR2 where another library in the job takes USR1)")
      ->capture_default_str()
      ->group(group);
  cmd->add_option("--ready-file", c.ready_file,
                  "Create this file once every rank catches the --preempt-signal and TERM "
                  "(checkpoint and exit 75); slurm/train.sbatch holds back an earlier signal")
      ->check(output_file())
      ->group(group);
  return [o, step_hooks] {
    TrainingRun run(*o, std::cout);
    for (StepHooks* hooks : step_hooks) run.net().add_step_hooks(*hooks);
    return run.run();
  };
}

}  // namespace dptrain::app
