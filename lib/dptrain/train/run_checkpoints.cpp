#include "dptrain/train/run_checkpoints.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <set>
#include <sstream>

#include "dptrain/ckpt/checkpoint_directory.hpp"
#include "dptrain/ckpt/checkpoint_file.hpp"
#include "dptrain/ckpt/checkpoint_writer.hpp"
#include "dptrain/ckpt/finite_state.hpp"
#include "dptrain/ckpt/preemption.hpp"  // preemption_requested (train installs the handlers first)
#include "dptrain/core/duration.hpp"
#include "dptrain/core/error.hpp"
#include "dptrain/core/exit_codes.hpp"
#include "dptrain/distributed/broadcast.hpp"
#include "dptrain/distributed/parameter_sync.hpp"
#include "dptrain/distributed/root_work.hpp"
#include "dptrain/train/run_config.hpp"

namespace dptrain {

RunCheckpoints::RunCheckpoints(CheckpointOptions options, distributed::Communicator& comm, std::ostream& log)
    : options_(std::move(options)),
      comm_(comm),
      log_(log),
      every_(ckpt::CheckpointEvery::parse(options_.every)),
      limit_(ckpt::TimeLimit::from_environment(options_.time_limit)),
      timeout_seconds_(parse_positive_duration_seconds(options_.timeout, "--checkpoint-timeout")) {
  DPTRAIN_CHECK(options_.keep >= 0, "--keep must be 0 (keep all) or more, not ", options_.keep);
  if (comm_.rank() == 0 && limit_.deadline()) {
    // Formatted apart: std::fixed on the shared log stream would stay and print the start line's
    // learning rate as "0".
    std::ostringstream line;
    line << "time limit: " << std::fixed << std::setprecision(0) << limit_.seconds_left() << " s from now; the run "
         << (enabled() ? "checkpoints and stops (exit code 75)" : "stops, saving nothing (exit code 79),")
         << " before it\n";
    log_ << line.str();
  }
  // Where a stop is to be expected (a batch job, a time limit, a planned stop), say at the start that
  // without a checkpoint directory it loses the run.
  const bool stop_expected = limit_.deadline() || options_.stop_at_step > 0 || std::getenv("SLURM_JOB_ID") != nullptr;
  if (comm_.rank() == 0 && !enabled() && stop_expected) {
    log_ << "warning: no --checkpoint-dir: a stop (Slurm's signal or time limit, Ctrl-C, --time-limit, "
            "--stop-at-step) ends the run with nothing saved (exit code 79), and it cannot be continued\n";
  }
  if (enabled()) on_rank0([this] { open_directory(); });
}

void RunCheckpoints::on_rank0(const std::function<void()>& work) {
  distributed::run_on_root(comm_, {"waiting for rank 0's checkpoint work", "--checkpoint-timeout", timeout_seconds_},
                           work);
}

void RunCheckpoints::open_directory() {
  namespace fs = std::filesystem;
  const std::string& dir = options_.directory;
  std::error_code ec;
  // A directory that cannot be made or written is a refused option value (exit 105), as for every
  // other output a command writes (core/file_write.hpp); so is a lock file that cannot be created.
  fs::create_directories(dir, ec);
  if (ec) {
    throw OptionError(exit_code::option_value, detail::concat("cannot create the checkpoint directory ", dir, " (",
                                                              ec.message(), "); give another --checkpoint-dir"));
  }
  if (!fs::is_directory(dir, ec)) {
    throw OptionError(exit_code::option_value, detail::concat("the checkpoint directory ", dir,
                                                              " is not a directory; give another --checkpoint-dir"));
  }
  lock_.emplace(dir);
  if (!lock_->exclusive()) {
    std::cerr << "dptrain: warning: " << lock_->unsupported()
              << ": this file system does not support flock, so a second run on " << dir
              << " would not be refused; make sure only one job uses it\n";
  }
  if (!lock_->previous_holder().empty()) {
    log_ << "checkpoint directory " << dir << ": taking over " << lock_->path()
         << ", whose holder ended without releasing it (" << lock_->previous_holder() << ")\n";
  }
  const std::vector<std::string> removed = ckpt::remove_stale_temporaries(dir);
  if (!removed.empty()) {
    log_ << "checkpoint directory " << dir << ": removed " << removed.size() << " temporary file"
         << (removed.size() == 1 ? "" : "s") << " a killed writer left\n";
  }
  ckpt::write_check(dir);
}

void RunCheckpoints::announce_ready() {
  if (options_.ready_file.empty()) return;
  comm_.barrier();  // every rank got here, so every rank has its handlers
  if (comm_.rank() != 0) return;
  std::ofstream file(options_.ready_file, std::ios::trunc);
  file << "ready\n";
  DPTRAIN_CHECK(file.good(), "cannot write the --ready-file '", options_.ready_file, "'");
}

std::optional<ckpt::Progress> RunCheckpoints::locate() {
  // Rank 0 alone looks; every rank learns whether it found one (or rank 0's error), and its progress.
  on_rank0([this] {
    if (options_.resume == "none") return;
    if (options_.resume == "auto") {
      if (!options_.directory.empty()) {
        if (auto point = ckpt::find_resume_checkpoint(options_.directory)) {
          resumed_from_ = point->path;
          loaded_ = std::move(point->state);
        }
      }
    } else {
      // An explicit checkpoint must load: a typo must not silently start from scratch.
      resumed_from_ = ckpt::resolve_checkpoint_path(options_.resume);
      loaded_ = ckpt::read_checkpoint(resumed_from_);
      const std::optional<std::string> bad = ckpt::find_non_finite(*loaded_);
      DPTRAIN_CHECK(!bad, "--resume ", options_.resume, ": checkpoint ", resumed_from_, " cannot be resumed: its ",
                    bad.value_or(""), " (the run had diverged); resume from an earlier checkpoint");
    }
  });
  if (comm_.max(loaded_ ? 1 : 0) == 0) return std::nullopt;
  ckpt::Progress progress = comm_.rank() == 0 ? loaded_->progress : ckpt::Progress{};
  distributed::broadcast_record(progress, comm_);
  return progress;
}

void RunCheckpoints::restore(const std::string& model, Net& net, Sgd& sgd, const RestoreOptions& options) {
  if (comm_.rank() == 0) {
    DPTRAIN_CHECK(loaded_.has_value(), "restore() without a located checkpoint");
    const ckpt::TrainingState& saved = *loaded_;
    // First, as apply_state would: the checks below compare tensors of one model only.
    DPTRAIN_CHECK(saved.model == model, "checkpoint ", saved.source, " was written for model ", saved.model, ", not ",
                  model);
    const auto find_saved = [&](const std::string& name) {
      return std::find_if(saved.parameters.begin(), saved.parameters.end(),
                          [&](const ckpt::NamedTensor& t) { return t.name == name; });
    };
    const std::int64_t step = saved.progress.global_step;
    std::set<std::string> fresh;
    std::string names;
    for (Parameter* p : net.classifier_parameters()) {
      const auto kept = find_saved(p->name);
      if (kept == saved.parameters.end()) continue;  // reported with the other missing tensors
      const bool fits = kept->value.shape() == p->value.shape();
      // From a step-0 checkpoint (an import) the classifier is started afresh whenever asked, fitting
      // or not (new classes of the same count). Part-way through a run it is the run's own: a requeued
      // fine-tuning job, still given --reset-classifier, resumes it exactly.
      if (options.reset_classifier && step == 0) {
        fresh.insert(p->name);
        names += (names.empty() ? "" : ", ") + p->name;
        continue;
      }
      if (fits) continue;
      // A checkpoint part-way through a run carries that run's step, data position, schedule and
      // momentum, none of which fits a run on other classes: fine-tuning starts from step 0.
      DPTRAIN_CHECK(step == 0, "checkpoint ", saved.source, " has classifier ", p->name, " of shape ",
                    kept->value.shape().to_string(), ", but this run's is ", p->value.shape().to_string(),
                    " (another class count), and it is at step ", step,
                    " of another run, whose position, schedule and momentum do not fit this one; start from "
                    "its weights alone: dptrain export ",
                    saved.source, " W.safetensors && dptrain import W.safetensors --model ", model,
                    " START.h5, then --resume START.h5 --reset-classifier");
      throw Error(detail::concat("checkpoint ", saved.source, " has classifier ", p->name, " of shape ",
                                 kept->value.shape().to_string(), ", but this run's is ", p->value.shape().to_string(),
                                 " (another class count): give --reset-classifier to start the classifier afresh "
                                 "and fine-tune the rest"));
    }
    // A checkpoint without the auxiliary classifiers (an Inception-V3 import without AuxLogits, a run
    // trained with --no-aux) resumed by a run with them: name the option, not only the first missing
    // tensor. Its configuration is read only then, so nothing else about a resume changes.
    if (options.aux_heads) {
      for (Parameter* p : net.parameters()) {
        if (fresh.contains(p->name) || find_saved(p->name) != saved.parameters.end()) continue;
        bool stored_aux = true;
        try {
          stored_aux = parse_stored_configuration(saved.configuration, saved.source + " configuration").aux_heads;
        } catch (const Error&) {
          // No hint then: apply_state reports the missing tensor.
        }
        DPTRAIN_CHECK(stored_aux, "checkpoint ", saved.source, " has no parameter ", p->name, ": it holds model ",
                      model, " without the auxiliary classifiers; give --no-aux to train it so");
        break;
      }
    }
    ckpt::apply_state(saved, model, net, sgd, fresh);
    if (!fresh.empty()) {
      log_ << "re-initialised the classifier (" << names << "); the rest comes from the checkpoint\n";
    } else if (options.reset_classifier) {
      log_ << "--reset-classifier: checkpoint " << saved.source << " is at step " << step
           << " of this run and its classifier fits, so it is kept (a classifier is started afresh only from a "
              "step-0 checkpoint)\n";
    }
    located_choices_ = std::move(loaded_->tuned_choices);
    loaded_.reset();  // the host copies are no longer needed
  }
  distributed::broadcast_training_state(net, sgd, comm_);
}

RunCheckpoints::Next RunCheckpoints::after_step(std::int64_t step, bool last_step, double next_seconds) {
  // Agreed flags (max over the ranks): 0 a signal arrived, 1 the time limit is near (rank 0's clock),
  // 2 a checkpoint is due (rank 0's clock for time-based schedules).
  std::int64_t flags[3] = {ckpt::preemption_requested() ? 1 : 0, 0, 0};
  if (comm_.rank() == 0) {
    flags[1] = limit_.should_stop_now(ckpt::stop_margin(last_write_seconds_, next_seconds)) ? 1 : 0;
    flags[2] = enabled() && !every_.never() && every_.due(step) ? 1 : 0;
  }
  if (options_.stop_at_step > 0 && step == options_.stop_at_step) flags[0] = 1;
  comm_.allreduce(flags, 3, distributed::ElementType::i64, distributed::ReduceOp::max);
  if (last_step) return enabled() ? Next::checkpoint : Next::train;
  if (flags[0] || flags[1]) {
    if (comm_.rank() == 0) {
      log_ << (flags[0] ? "stop requested (signal or --stop-at-step)" : "the time limit is near") << " after step "
           << step
           << (enabled() ? "; writing a checkpoint and exiting with code 75\n"
                         : "; no --checkpoint-dir, so nothing is saved; exiting with code 79\n");
    }
    return Next::checkpoint_and_stop;
  }
  return flags[2] ? Next::checkpoint : Next::train;
}

std::string RunCheckpoints::restored_tuned_choices() {
  std::string text = comm_.rank() == 0 ? located_choices_ : std::string();
  distributed::broadcast_text(text, comm_);
  return text;
}

void RunCheckpoints::write(const std::string& model, Net& net, Sgd& sgd, const ckpt::Progress& progress,
                           const std::string& configuration, const std::string& tuned_choices) {
  if (!enabled()) return;
  on_rank0([&] {
    ckpt::TrainingState state = ckpt::capture_state(net, sgd, model, progress, configuration);
    state.tuned_choices = tuned_choices;
    const ckpt::WriteReport report = ckpt::write_checkpoint(options_.directory, state);
    last_write_seconds_ = report.seconds;
    const auto removed = ckpt::prune_checkpoints(options_.directory, options_.keep);
    std::ostringstream line;  // formatted apart, as above
    line << "checkpoint " << report.path << ": " << std::fixed << std::setprecision(1)
         << static_cast<double>(report.bytes) / 1e6 << " MB in " << std::setprecision(2) << report.seconds << " s ("
         << std::setprecision(1) << report.megabytes_per_second() << " MB/s)";
    if (!removed.empty()) line << ", " << removed.size() << " older removed";
    log_ << line.str() << "\n" << std::flush;
  });  // nobody runs ahead (or exits) before the checkpoint is complete
  every_.mark_written();
}

}  // namespace dptrain
