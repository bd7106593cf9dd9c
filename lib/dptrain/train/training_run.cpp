#include "dptrain/train/training_run.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "dptrain/ckpt/preemption.hpp"
#include "dptrain/core/exit_codes.hpp"
#include "dptrain/core/progress_line.hpp"
#include "dptrain/data/loader.hpp"
#include "dptrain/train/next_stop.hpp"
#include "dptrain/train/shared_manifest.hpp"
#include "dptrain/train/trace_file.hpp"
#include "dptrain/train/training_log.hpp"
#include "dptrain/train/training_stack.hpp"
#include "dptrain/train/tuned_choices_sync.hpp"

namespace dptrain {
namespace {
using clock = std::chrono::steady_clock;
double since(clock::time_point t) { return std::chrono::duration<double>(clock::now() - t).count(); }

TrainerConfig trainer_config(const TrainingRunConfig& o, int global_batch, std::int64_t total_steps,
                             std::int64_t steps_per_epoch) {
  TrainerConfig tc;
  tc.seed = o.seed;
  tc.sgd = SgdConfig{o.momentum, o.weight_decay, o.nesterov, false};
  tc.loss_scale = loss_scale_config(o.device);
  tc.schedule.kind = parse_schedule(o.schedule);
  tc.schedule.lr_per_256 = o.lr;
  tc.schedule.global_batch = global_batch;
  tc.schedule.total_steps = total_steps;
  const auto epochs_to_steps = [&](double epochs) {
    return static_cast<std::int64_t>(epochs * static_cast<double>(steps_per_epoch));
  };
  tc.schedule.warmup_steps = epochs_to_steps(o.warmup_epochs);
  for (double e : o.milestones) tc.schedule.milestones.push_back(epochs_to_steps(e));
  return tc;
}
}  // namespace

struct TrainingRun::State {
  // The next batch is fetched, and its transfer started, once a step's backward pass is queued: on a
  // GPU the host is free then while the device computes.
  struct Prefetch final : StepHooks {
    explicit Prefetch(State& state) : s(state) {}
    void backward_queued() override {
      if (s.step + 1 < s.total_steps) s.fetch(s.upcoming);
    }
    State& s;
  };

  TrainingRunConfig o;
  std::ostream discard{nullptr};  // the other ranks print nothing
  std::ostream* out = nullptr;
  std::unique_ptr<distributed::Job> job;
  data::Manifest manifest;
  std::unique_ptr<RunCheckpoints> checkpoints;
  std::optional<ckpt::Progress> resume;
  int per_rank_batch = 0, global_batch = 0;
  ModelConfig model;
  // --trace; null without it. Declared before the stack: the reducer's thread may still write to it
  // while the stack goes (a step that threw with buckets in flight).
  std::unique_ptr<TraceRecorder> trace;
  Prefetch prefetch{*this};              // declared before the stack: it outlives the net it is added to
  std::unique_ptr<TrainingStack> stack;  // backend, net, trainer, gradient path
  data::LoaderConfig train_cfg;
  std::unique_ptr<data::Loader> train_loader;
  std::int64_t steps_per_epoch = 0, total_steps = 0, samples_per_epoch = 0;
  TrainerConfig tc;
  std::string configuration;
  std::int64_t first_step = 0, step = 0;
  std::optional<data::Loader> eval_loader;
  std::unique_ptr<TrainingLog> log;
  std::optional<Evaluation> last_eval;
  ckpt::Progress progress;
  bool stopped = false;
  clock::time_point start, step_start;
  std::unique_ptr<InputStager> stager;
  double wait = 0;  // seconds this step waited for the loader
  data::Batch batch, upcoming;
  bool trace_written = false;
  // A step whose work is queued and whose score is not read yet. It is read during the next step,
  // after that step's work is queued (a GPU never idles while the host reads), or at once where this
  // step's end needs it: the first step, a log line, an epoch's end, the last step, a checkpoint or a
  // stop. So a checkpoint never holds a step whose loss was not seen to be finite. Declared after the
  // stack: it is destroyed before the backend it reads from.
  struct Unread {
    QueuedStep queued;
    std::int64_t step = 0;  // its index from 0
    clock::time_point start;
    double data_wait = 0;           // seconds it waited for the loader
    double gradients_ready_at = 0;  // TrainingStack::gradients_ready_at() right after it was queued
  };
  std::optional<Unread> unread;
  clock::time_point last_read;   // when the last score came back: a step's time starts no earlier
  double last_step_seconds = 0;  // of the last step read
  bool late_reads = false;       // Trainer::late_reads_pay: else every step is read at once
  // Between step reports (every --log-every steps) at least a line every ten seconds (rank 0).
  std::optional<ProgressLine> step_progress;

  void start_up();
  void restore();
  void announce();
  void check_schedule_length();
  static bool decays(ScheduleKind kind) { return kind == ScheduleKind::poly || kind == ScheduleKind::cosine; }
  std::string learning_rate_text() const;
  void fetch(data::Batch& into);
  void start_trace();
  void write_trace() noexcept;
  ckpt::Progress progress_after(const data::Batch& done) const;
  StepResult read_unread();
  double seconds_before_next_stop(double step_seconds) const;
};

void TrainingRun::State::start_up() {
  if ((o.epochs > 0) == (o.steps > 0)) {
    throw OptionError(exit_code::option_missing, "give how long to train: exactly one of --epochs N and --steps N");
  }
  // First of all: the preemption signal (--preempt-signal, USR1 by default) or TERM from here on is
  // remembered and honoured at the first step boundary (checkpoint, exit 75) instead of killing the
  // rank while MPI and the data are still starting; and before NCCL can start a thread.
  ckpt::install_preemption_handlers(ckpt::parse_preemption_signal(o.checkpoints.preempt_signal));
  job = std::make_unique<distributed::Job>(o.dist, visible_devices(o.device));
  distributed::Communicator& comm = job->communicator();
  o.world_size = job->size();
  out = job->is_root() ? out : &discard;
  manifest = read_manifest(o.data, comm);
  checkpoints = std::make_unique<RunCheckpoints>(o.checkpoints, comm, *out);
  checkpoints->announce_ready();
  resume = checkpoints->locate();
  std::int64_t per_rank = o.batch;
  // Imported weights (global batch 0) come from no run: this run's batch applies.
  if (resume && !o.batch_given && resume->global_batch > 0) {
    // The same global batch on another number of ranks: the run continues the same optimisation.
    DPTRAIN_CHECK(resume->global_batch % job->size() == 0, "the checkpoint's global batch of ", resume->global_batch,
                  " does not divide among ", job->size(),
                  " ranks; give --batch-size (per rank) to change it, and "
                  "the learning rate follows the linear scaling rule");
    per_rank = resume->global_batch / job->size();
  }
  // The batch against the split before anything is built or allocated (a batch of 10^9 would
  // otherwise reach the allocator as a net of that size): in 64 bits, as given or as a checkpoint
  // holds it.
  const std::int64_t train_samples = manifest.split("train").samples;
  DPTRAIN_CHECK(per_rank * job->size() <= train_samples, o.data, ": the train split has ", train_samples,
                " samples, fewer than one global batch of ", per_rank * job->size(), " (", per_rank, " per rank x ",
                job->size(), " rank", job->size() == 1 ? "" : "s", "); give a smaller --batch-size");
  per_rank_batch = static_cast<int>(per_rank);
  global_batch = per_rank_batch * job->size();

  model.batch = per_rank_batch;
  model.channels = manifest.channels;
  model.image_size = o.crop > 0 ? o.crop : std::min(manifest.height, manifest.width);
  model.classes = manifest.class_count();
  model.aux_heads = o.aux_heads;
  model.label_smoothing = o.label_smoothing;
  stack = std::make_unique<TrainingStack>(*job, o.device, o.model, model, o.seed);

  train_cfg.split = "train";
  train_cfg.batch = per_rank_batch;
  train_cfg.rank = job->rank();
  train_cfg.world_size = job->size();
  train_cfg.training = true;
  train_cfg.crop = model.image_size;
  train_cfg.pad = o.pad;
  train_cfg.flip = o.flip;
  train_cfg.threads = loader_threads(o.loader_threads, *job, !stack->backend().device().is_cpu());
  train_cfg.seed = o.seed;
  // A GPU takes the crops as bytes and normalises them itself (InputFormat); the CPU takes floats.
  train_cfg.images = stack->backend().input_batch_type();
  train_cfg.image_memory = stack->backend().batch_memory();
  train_loader = std::make_unique<data::Loader>(manifest, o.data, train_cfg);
  steps_per_epoch = train_loader->steps_per_epoch();
  DPTRAIN_CHECK(steps_per_epoch > 0, o.data, ": the train split has ", manifest.split("train").samples,
                " samples, fewer than one global batch of ", global_batch);
  total_steps = o.steps > 0 ? o.steps : o.epochs * steps_per_epoch;
  samples_per_epoch = steps_per_epoch * global_batch;

  tc = trainer_config(o, global_batch, total_steps, steps_per_epoch);
  if (decays(tc.schedule.kind) && tc.schedule.warmup_steps >= total_steps) {
    throw OptionError(
        exit_code::option_conflict,
        detail::concat("--warmup-epochs ", o.warmup_epochs, " is ", tc.schedule.warmup_steps, " steps (",
                       steps_per_epoch, " per epoch at a global batch of ", global_batch,
                       "), not fewer than the run's ", total_steps, " steps: the ", schedule_name(tc.schedule.kind),
                       " schedule decays after its warm-up; give fewer warm-up epochs or a longer run"));
  }
  stack->start_training(tc);
  late_reads = stack->trainer().late_reads_pay(job->size());
  // The dataset by absolute path: `dptrain export` and `eval` read its manifest (normalisation, class
  // names) from wherever they are started.
  TrainingRunConfig stored = o;
  stored.data = std::filesystem::absolute(o.data).lexically_normal().string();
  configuration = stored_configuration(stored);
  if (resume) restore();
  progress.global_step = first_step;
  if (resume) {
    progress.epoch = resume->epoch;
    progress.samples_in_epoch = resume->samples_in_epoch;
  }
  progress.seed = o.seed;
  progress.global_batch = global_batch;
  progress.world_size = job->size();
  progress.schedule = tc.schedule;
  progress.base_lr = stack->trainer().schedule().base();
  if (!o.trace.empty()) start_trace();

  if (manifest.splits.contains("validation")) {
    data::LoaderConfig eval_cfg = train_cfg;
    eval_cfg.split = "validation";
    eval_cfg.training = false;
    eval_cfg.images = DType::f32;                    // evaluate() copies the batch in as it is
    eval_cfg.image_memory = pageable_host_memory();  // no stager: page-locked memory would buy nothing
    eval_loader.emplace(manifest, o.data, eval_cfg);
  }
  log = std::make_unique<TrainingLog>(comm, *out, o.metrics, total_steps, global_batch);
  log->set_run_info(o.device.backend, o.device.precision);
  std::vector<std::string> nodes;
  for (const auto& place : job->topology().ranks) nodes.push_back(place.node);
  log->set_rank_nodes(std::move(nodes));
  log->watch_loss_scaler(&stack->trainer().loss_scaler());
  if (!stack->backend().device().is_cpu())
    log->watch_device_memory([this] { return peak_device_mib(stack->backend()); });
  announce();

  start = clock::now();
  // The next batch is fetched and its transfer started while the device computes the current step
  // (once the backward pass is queued, before the host waits for anything), so a GPU never waits
  // for a copy.
  stager = stack->backend().make_input_stager(stack->net().image_shape(), train_loader->input_format());
  step_start = clock::now();  // the first step's clock includes fetching its batch
  step = first_step;
  log->report_start(first_step, o.model);
  step_progress.emplace(job->is_root() ? out : nullptr, "training", total_steps, "steps");
  fetch(batch);
  *out << "data: " << train_cfg.threads << " loader thread" << (train_cfg.threads == 1 ? "" : "s") << " per rank"
       << (o.loader_threads > 0 ? "" : " (the cores compute leaves free; --loader-threads to change)")
       << ", samples read by " << train_loader->read_path() << ", batches in " << train_cfg.image_memory.kind
       << " memory\n";
  stack->net().add_step_hooks(prefetch);
}

void TrainingRun::State::restore() {
  checkpoints->restore(o.model, stack->net(), stack->trainer().optimizer(), {o.reset_classifier, o.aux_heads});
  adopt_tuned_choices(stack->backend(), checkpoints->restored_tuned_choices(), "the checkpoint", job->communicator(),
                      *out);
  stack->trainer().set_global_step(resume->global_step);
  stack->trainer().loss_scaler().restore({resume->loss_scale, resume->loss_scale_clean_steps});
  train_loader->seek(resume->epoch, resume->samples_in_epoch);
  first_step = resume->global_step;
  if (resume->global_batch == 0) {
    *out << "starting from the weights in " << checkpoints->resumed_from()
         << " (imported: step 0, no optimizer state)\n";
  } else {
    *out << "resuming from " << checkpoints->resumed_from() << ": step " << resume->global_step << ", epoch "
         << resume->epoch + 1 << ", sample " << resume->samples_in_epoch << " of the epoch (saved on "
         << resume->world_size << " rank" << (resume->world_size == 1 ? "" : "s") << ", global batch "
         << resume->global_batch << ")\n";
  }
  check_schedule_length();
  DPTRAIN_CHECK(first_step < total_steps, "the checkpoint is at step ", first_step,
                ", which is not before the last "
                "step ",
                total_steps, " of this run: it is finished (to train further, raise --steps or --epochs",
                (decays(resume->schedule.kind) ? ", with --reschedule" : ""), ")");
}

// Poly and cosine decay over the whole run, so a resume with another length (raised --steps to extend a
// finished run, say) would change the rate of every step from here on: a resume continues the run it
// resumes exactly unless --reschedule asks for the new length. With another global batch the schedule
// is a new one anyway (the rate scales with the batch, the steps per epoch change).
void TrainingRun::State::check_schedule_length() {
  const ScheduleConfig& saved = resume->schedule;
  if (resume->global_batch != global_batch || !decays(saved.kind) || saved.total_steps == total_steps) return;
  const double was = LearningRateSchedule(saved).at(first_step);
  const double now = stack->trainer().schedule().at(first_step);
  std::ostringstream rates;
  rates << "the rate of step " << first_step + 1 << " from " << was << " to " << now;
  if (!o.reschedule) {
    throw OptionError(
        exit_code::option_value,
        detail::concat("the checkpoint's run decays its ", schedule_name(saved.kind), " schedule over ",
                       saved.total_steps, " steps; this run's would decay over ", total_steps, ", changing ",
                       rates.str(), ". To continue that run exactly, give its length (--steps ", saved.total_steps,
                       "); to decay over the new length, add --reschedule"));
  }
  *out << "rescheduled: the " << schedule_name(saved.kind) << " schedule now decays over " << total_steps
       << " steps, not " << saved.total_steps << " (" << rates.str() << ")\n";
}

// "0.0125 (0.1 per 256)", and on a resume the rate its first step trains with. Formatted in a stream of
// its own, whatever another line left set on the log's.
std::string TrainingRun::State::learning_rate_text() const {
  const LearningRateSchedule& schedule = stack->trainer().schedule();
  std::ostringstream text;
  text << schedule.base() << " (" << o.lr << " per 256";
  if (first_step > 0) text << "; " << schedule.at(first_step) << " at step " << first_step + 1;
  text << ")";
  return text.str();
}

void TrainingRun::State::announce() {
  const data::SplitInfo& train_split = manifest.split("train");
  const int ranks = job->size();
  *out << "dptrain train: " << o.model << " on " << manifest.name << " (" << train_split.samples << " images, "
       << manifest.class_count() << " classes, " << model.image_size << "x" << model.image_size << "x"
       << manifest.channels << "), " << ranks << " rank" << (ranks == 1 ? "" : "s") << " x batch " << per_rank_batch
       << " = " << global_batch << ", " << total_steps << " steps (" << steps_per_epoch << " per epoch), lr "
       << learning_rate_text() << ", " << stack->backend().name() << ", " << o.device.precision << "\n";
  if (stack->trainer().loss_scaler().enabled()) *out << "loss scaling: " << describe(tc.loss_scale) << "\n";
  if (ranks > 1) {
    *out << "gradients: " << stack->reducer().communicator().name() << ", " << stack->reducer().bucket_count()
         << " buckets of up to " << o.dist.bucket_mb << " MB, overlap "
         << (job->reducer_config().overlap ? "on (from step 2)" : "off") << ", " << job->compute_threads()
         << " compute thread(s) per rank\n"
         << describe(job->topology());
  }
  *out << distributed::describe(job->launch_warnings());
}

void TrainingRun::State::start_trace() {
  const TraceWindow window = trace_window(o.trace_steps, first_step);
  prepare_trace_directory(o.trace);
  // A step records its step, data wait, forward, backward, gradient wait and update, one allreduce per
  // bucket, and at most an evaluation and a checkpoint.
  trace = std::make_unique<TraceRecorder>(window, 8 + stack->reducer().bucket_count());
  stack->trainer().set_trace(trace.get());
  stack->reducer().set_trace(trace.get());
  *out << "trace: steps " << window.first << " to " << window.last << " to " << trace_file_path(o.trace, job->rank())
       << (job->size() > 1 ? " (one file per rank)" : "") << "\n";
}

void TrainingRun::State::write_trace() noexcept {
  if (!trace || trace_written) return;
  trace_written = true;
  const int rank = job->rank();
  // A trace is a diagnosis: failing to write it is reported but does not end the training.
  try {
    write_trace_file(o.trace, rank, trace->chrome_trace_json(rank, job->topology().ranks.at(rank).node));
    *out << "trace: wrote " << trace_file_path(o.trace, rank) << " (" << trace->event_count() << " events"
         << (trace->dropped() > 0 ? ", " + std::to_string(trace->dropped()) + " dropped" : std::string()) << ")\n";
  } catch (const std::exception& e) {
    std::cerr << "dptrain: warning: rank " << rank << ": the trace was not written: " << e.what() << "\n";
  }
}

double TrainingRun::State::seconds_before_next_stop(double step_seconds) const {
  // `progress` is where the next step starts.
  NextStop next;
  next.step_seconds = step_seconds;
  next.evaluates = eval_loader && (step + 2 == total_steps ||
                                   step_ends_epoch(progress.samples_in_epoch, global_batch, samples_per_epoch));
  if (last_eval) next.last_evaluation_seconds = last_eval->seconds;
  if (eval_loader) next.evaluation_batches = (eval_loader->samples() + global_batch - 1) / global_batch;
  return dptrain::seconds_before_next_stop(next);
}

void TrainingRun::State::fetch(data::Batch& into) {
  const auto t = clock::now();
  TraceSpan traced(trace.get(), TraceEvent::data_wait);
  into = train_loader->next();
  traced.finish();
  wait += since(t);
  stager->stage(into.images);
}

ckpt::Progress TrainingRun::State::progress_after(const data::Batch& done) const {
  // Where the next step starts: the position is global, so a resume on any number of ranks
  // continues with the next sample.
  ckpt::Progress p = progress;
  p.epoch = done.epoch;
  p.samples_in_epoch = done.position + global_batch;
  if (step_ends_epoch(done.position, global_batch, samples_per_epoch)) {
    ++p.epoch;
    p.samples_in_epoch = 0;
  }
  p.global_step = step + 1;
  const LossScaleState scale = stack->trainer().loss_scaler().state_for_checkpoint();
  p.loss_scale = scale.scale;
  p.loss_scale_clean_steps = scale.clean_steps;
  return p;
}

// Waits for the unread step's score, checks its loss and logs it. The steps are contiguous in time:
// one queued before its predecessor was read starts when that read returned.
StepResult TrainingRun::State::read_unread() {
  Unread u = std::move(*unread);
  unread.reset();
  const StepResult r = u.queued.result();
  const clock::time_point now = clock::now();
  const double seconds = std::chrono::duration<double>(now - std::max(u.start, last_read)).count();
  last_read = now;
  last_step_seconds = seconds;
  DPTRAIN_CHECK(std::isfinite(r.loss), "the loss became ", r.loss, " at step ", u.step + 1,
                "; lower --lr or check the data");
  log->record_step(r, per_rank_batch, seconds, u.data_wait,
                   TrainingStack::compute_seconds(u.gradients_ready_at, u.start, seconds));
  return r;
}

TrainingRun::TrainingRun(TrainingRunConfig config, std::ostream& out) : s_(std::make_unique<State>()) {
  s_->o = std::move(config);
  s_->out = &out;
  s_->start_up();
}

// A run ended by an error still leaves the steps it recorded.
TrainingRun::~TrainingRun() { s_->write_trace(); }

StepOutcome TrainingRun::step() {
  State& s = *s_;
  DPTRAIN_CHECK(!finished(), "TrainingRun::step() after the run finished");
  const std::int64_t step = s.step;
  if (step != s.first_step) s.step_start = clock::now();
  if (s.trace) s.trace->begin_step(step + 1);
  TraceSpan traced_step(s.trace.get(), TraceEvent::step);
  s.stager->finish(s.stack->net().images());
  std::copy_n(s.batch.labels.data<std::int32_t>(), s.batch.labels.numel(),
              s.stack->net().labels().data<std::int32_t>());
  State::Unread queued{s.stack->trainer().queue_step(s.batch.epoch, s.batch.first_sample), step, s.step_start, 0,
                       s.stack->gradients_ready_at()};
  queued.data_wait = s.wait;  // the next batch was fetched while this step was queued
  s.wait = 0;
  // Every convolution has now chosen its algorithms; from the next step on, every rank runs rank 0's.
  if (step == s.first_step && !s.stack->backend().device().is_cpu()) {
    share_rank0_tuned_choices(s.stack->backend(), s.job->communicator(), *s.out);
  }
  StepOutcome outcome;
  if (s.unread) (void)s.read_unread();  // the previous step's, while this one runs
  s.unread = std::move(queued);
  s.progress = s.progress_after(s.batch);
  const bool last = step + 1 == s.total_steps;
  outcome.epoch_end = s.progress.epoch != s.batch.epoch;
  const bool reports = (step + 1) % s.o.log_every == 0 || last || outcome.epoch_end;
  if (step == s.first_step || reports || !s.late_reads) outcome.result = s.read_unread();
  // Every rank decides alike (after_step agrees), so every rank reads at the same steps.
  const RunCheckpoints::Next next =
      s.checkpoints->after_step(step + 1, last, s.seconds_before_next_stop(s.last_step_seconds));
  if (next != RunCheckpoints::Next::train && s.unread) outcome.result = s.read_unread();
  traced_step.finish();
  if (reports) s.log->report_window(s.batch.epoch, step + 1, outcome.result->learning_rate, s.stack->reducer().stats());
  if (reports) {
    s.step_progress->restart_interval();
  } else {
    s.step_progress->update(step + 1);
  }
  if (outcome.epoch_end) s.log->report_epoch_end(s.batch.epoch, s.train_cfg.threads);
  if ((outcome.epoch_end || last) && s.eval_loader) {
    TraceSpan traced(s.trace.get(), TraceEvent::evaluation);
    s.last_eval = evaluate(s.stack->net(), s.stack->trainer(), *s.eval_loader, s.job->communicator(),
                           s.job->is_root() ? s.out : nullptr, "validation");
    s.log->report_evaluation(s.batch.epoch, step + 1, *s.last_eval);
    outcome.evaluated = true;
  }
  if (next != RunCheckpoints::Next::train && s.checkpoints->enabled()) {
    TraceSpan traced(s.trace.get(), TraceEvent::checkpoint);
    s.checkpoints->write(s.o.model, s.stack->net(), s.stack->trainer().optimizer(), s.progress, s.configuration,
                         s.stack->backend().tuned_choices());
    outcome.checkpointed = true;
  }
  outcome.stop = next == RunCheckpoints::Next::checkpoint_and_stop;
  s.stopped = outcome.stop;
  s.batch = std::move(s.upcoming);
  s.step = step + 1;
  // The window's last step, or the run's (a run shorter than the window): the trace is complete.
  if (s.trace && (s.trace->is_last_step(step + 1) || finished())) s.write_trace();
  return outcome;
}

void TrainingRun::read_late_everywhere() { s_->late_reads = true; }

bool TrainingRun::finished() const { return s_->stopped || s_->step >= s_->total_steps; }

int TrainingRun::run() {
  State& s = *s_;
  while (!finished()) {
    // 75 tells a batch script "checkpointed: requeue me"; a run that saved nothing must not say so.
    if (step().stop) return s.checkpoints->enabled() ? exit_code::checkpointed_stop : exit_code::stopped_unsaved;
  }
  s.log->report_summary(s.o.model, s.manifest.name, s.per_rank_batch, s.total_steps - s.first_step, since(s.start),
                        s.last_eval ? &*s.last_eval : nullptr, s.stack->reducer().stats());
  return 0;
}

const ckpt::Progress& TrainingRun::progress() const { return s_->progress; }
std::int64_t TrainingRun::first_step() const { return s_->first_step; }
std::int64_t TrainingRun::total_steps() const { return s_->total_steps; }
std::int64_t TrainingRun::steps_per_epoch() const { return s_->steps_per_epoch; }
int TrainingRun::per_rank_batch() const { return s_->per_rank_batch; }
int TrainingRun::global_batch() const { return s_->global_batch; }
bool TrainingRun::resumed() const { return s_->resume.has_value(); }
const std::optional<Evaluation>& TrainingRun::last_evaluation() const { return s_->last_eval; }
Net& TrainingRun::net() { return s_->stack->net(); }

}  // namespace dptrain
