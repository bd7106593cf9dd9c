// dptrain train: trains a model from HDF5 shards on one or many ranks (srun / mpiexec), evaluates on
// the validation split after every epoch, prints human lines on rank 0 and writes JSON lines to
// --metrics.
#include <chrono>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <optional>

#include <nlohmann/json.hpp>

#include "backend_options.hpp"
#include "broadcast_from_root.hpp"
#include "commands.hpp"
#include "distributed_options.hpp"
#include "dptrain/ckpt/preemption.hpp"
#include "dptrain/data/loader.hpp"
#include "dptrain/data/manifest.hpp"
#include "dptrain/distributed/parameter_sync.hpp"
#include "dptrain/net/models/registry.hpp"
#include "dptrain/train/evaluation.hpp"
#include "dptrain/train/trainer.hpp"
#include "json_writer.hpp"
#include "run_checkpoints.hpp"
#include "training_log.hpp"

namespace dptrain::app {
namespace {
struct TrainOptions {
  std::string model, data, metrics, schedule = "cosine";
  int epochs = 0;
  std::int64_t steps = 0;
  int batch = 64;
  double lr = 0.1;
  double warmup_epochs = 0;
  std::vector<double> milestones;  // epochs, for --schedule step
  float momentum = 0.9f, weight_decay = 1e-4f, label_smoothing = 0.f;
  bool nesterov = false, no_aux = false, flip = false;
  int crop = 0, pad = 0, threads = 0, log_every = 50;  // threads 0: what the rank can spare
  std::uint64_t seed = 1;
  bool batch_given = false;  // --batch-size on the command line (a resume keeps the global batch otherwise)
  distributed::JobOptions dist;
  BackendOptions device;
  CheckpointOptions checkpoints;
};

// The run's configuration as stored in checkpoints (and shown by `dptrain inspect CKPT`).
std::string configuration_json(const TrainOptions& o, int world_size) {
  nlohmann::json j;
  j["model"] = o.model;
  j["data"] = o.data;
  j["epochs"] = o.epochs;
  j["steps"] = o.steps;
  j["batch_size"] = o.batch;
  j["world_size"] = world_size;
  j["lr_per_256"] = o.lr;
  j["schedule"] = o.schedule;
  j["warmup_epochs"] = o.warmup_epochs;
  j["milestones"] = o.milestones;
  j["momentum"] = o.momentum;
  j["nesterov"] = o.nesterov;
  j["weight_decay"] = o.weight_decay;
  j["label_smoothing"] = o.label_smoothing;
  j["aux_heads"] = !o.no_aux;
  j["crop"] = o.crop;
  j["pad"] = o.pad;
  j["flip"] = o.flip;
  j["seed"] = o.seed;
  j["backend"] = o.device.backend;
  j["precision"] = o.device.precision;
  j["loss_scale"] = o.device.loss_scale;
  j["allreduce"] = o.dist.allreduce;
  j["bucket_mb"] = o.dist.bucket_mb;
  j["checkpoint_every"] = o.checkpoints.every;
  return j.dump();
}

using clock = std::chrono::steady_clock;
double since(clock::time_point t) { return std::chrono::duration<double>(clock::now() - t).count(); }

int run_train(const TrainOptions& o) {
  DPTRAIN_CHECK((o.epochs > 0) != (o.steps > 0), "give exactly one of --epochs and --steps");
  // First of all: a USR1/TERM from here on is remembered and honoured at the first step boundary
  // (checkpoint, exit 75) instead of killing the rank while MPI and the data are still starting.
  ckpt::install_preemption_handlers();
  distributed::Job job(o.dist, visible_devices(o.device));
  distributed::Communicator& comm = job.communicator();
  const data::Manifest manifest = read_manifest(o.data, comm);
  const data::SplitInfo& train_split = manifest.split("train");
  const bool has_validation = manifest.splits.contains("validation");
  std::ostream discard(nullptr);  // the other ranks print nothing
  std::ostream& out = job.is_root() ? std::cout : discard;
  RunCheckpoints checkpoints(o.checkpoints, comm, out);
  checkpoints.announce_ready();
  const std::optional<ckpt::Progress> resume = checkpoints.locate();
  int per_rank_batch = o.batch;
  if (resume && !o.batch_given) {
    // The same global batch on another number of ranks: the run continues the same optimisation.
    DPTRAIN_CHECK(resume->global_batch % job.size() == 0, "the checkpoint's global batch of ", resume->global_batch,
                  " does not divide among ", job.size(), " ranks; give --batch-size (per rank) to change it, and the "
                  "learning rate follows the linear scaling rule");
    per_rank_batch = static_cast<int>(resume->global_batch / job.size());
  }
  const int global_batch = per_rank_batch * job.size();

  auto backend = make_backend(o.device, job);
  ModelConfig model;
  model.batch = per_rank_batch;
  model.channels = manifest.channels;
  model.image_size = o.crop > 0 ? o.crop : std::min(manifest.height, manifest.width);
  model.classes = manifest.class_count();
  model.aux_heads = !o.no_aux;
  model.label_smoothing = o.label_smoothing;
  model.memory = memory_options(o.device, NetPurpose::training);
  auto net = build_model(o.model, *backend, model);
  net->initialize(o.seed);
  distributed::broadcast_parameters(*net, comm);

  data::LoaderConfig train_cfg;
  train_cfg.split = "train";
  train_cfg.batch = per_rank_batch;
  train_cfg.rank = job.rank();
  train_cfg.world_size = job.size();
  train_cfg.training = true;
  train_cfg.crop = model.image_size;
  train_cfg.pad = o.pad;
  train_cfg.flip = o.flip;
  train_cfg.threads = loader_threads(o.threads, job, !backend->device().is_cpu());
  train_cfg.seed = o.seed;
  data::Loader train_loader(manifest, o.data, train_cfg);
  const std::int64_t steps_per_epoch = train_loader.steps_per_epoch();
  DPTRAIN_CHECK(steps_per_epoch > 0, o.data, ": the train split has ", train_split.samples,
                " samples, fewer than one global batch of ", global_batch);
  const std::int64_t total_steps = o.steps > 0 ? o.steps : o.epochs * steps_per_epoch;

  TrainerConfig tc;
  tc.seed = o.seed;
  tc.sgd = SgdConfig{o.momentum, o.weight_decay, o.nesterov, false};
  tc.loss_scale = loss_scale_config(o.device);
  tc.schedule.kind = parse_schedule(o.schedule);
  tc.schedule.lr_per_256 = o.lr;
  tc.schedule.global_batch = global_batch;
  tc.schedule.total_steps = total_steps;
  tc.schedule.warmup_steps = static_cast<std::int64_t>(o.warmup_epochs * static_cast<double>(steps_per_epoch));
  for (double e : o.milestones) tc.schedule.milestones.push_back(static_cast<std::int64_t>(e * static_cast<double>(steps_per_epoch)));
  Trainer trainer(*net, tc);
  const std::string configuration = configuration_json(o, job.size());
  std::int64_t first_step = 0;
  if (resume) {
    checkpoints.restore(o.model, *net, trainer.optimizer());
    trainer.set_global_step(resume->global_step);
    trainer.loss_scaler().restore({resume->loss_scale, resume->loss_scale_clean_steps});
    train_loader.seek(resume->epoch, resume->samples_in_epoch);
    first_step = resume->global_step;
    out << "resuming from " << checkpoints.resumed_from() << ": step " << resume->global_step << ", epoch "
        << resume->epoch + 1 << ", sample " << resume->samples_in_epoch << " of the epoch (saved on "
        << resume->world_size << " rank" << (resume->world_size == 1 ? "" : "s") << ", global batch "
        << resume->global_batch << ")\n";
    DPTRAIN_CHECK(first_step < total_steps, "the checkpoint is at step ", first_step, ", which is not before the last "
                  "step ", total_steps, " of this run: it is finished (raise --steps or --epochs to go on)");
  }
  // Gradients go through NCCL on GPUs; metrics, checkpoints and control stay on the host communicator.
  const std::unique_ptr<distributed::Communicator> gradient_comm = make_gradient_communicator(*backend, job);
  distributed::GradientReducer reducer(*backend, gradient_comm ? *gradient_comm : comm, net->parameters(),
                                job.reducer_config());
  reducer.attach(*net);
  trainer.set_gradient_sync([&] { reducer.synchronize(); });

  std::optional<data::Loader> eval_loader;
  if (has_validation) {
    data::LoaderConfig eval_cfg = train_cfg;
    eval_cfg.split = "validation";
    eval_cfg.training = false;
    eval_loader.emplace(manifest, o.data, eval_cfg);
  }
  TrainingLog log(comm, out, o.metrics, total_steps, global_batch);
  log.set_run_info(o.device.backend, o.device.precision);
  log.watch_loss_scaler(&trainer.loss_scaler());
  if (!backend->device().is_cpu()) log.watch_device_memory([&] { return peak_device_mib(*backend); });
  out << "dptrain train: " << o.model << " on " << manifest.name << " (" << train_split.samples << " images, "
            << manifest.class_count() << " classes, " << model.image_size << "x" << model.image_size << "x"
            << manifest.channels << "), " << job.size() << " rank" << (job.size() == 1 ? "" : "s") << " x batch "
            << per_rank_batch << " = " << global_batch << ", " << total_steps << " steps (" << steps_per_epoch
            << " per epoch), lr " << trainer.schedule().base() << " (" << o.lr << " per 256), " << backend->name()
            << ", " << o.device.precision << "\n";
  if (trainer.loss_scaler().enabled()) out << "loss scaling: " << describe(tc.loss_scale) << "\n";
  if (job.size() > 1) {
    out << "gradients: " << reducer.communicator().name() << ", " << reducer.bucket_count() << " buckets of up to "
              << o.dist.bucket_mb << " MB, overlap " << (job.reducer_config().overlap ? "on" : "off") << ", "
              << job.compute_threads() << " compute thread(s) per rank\n"
              << describe(job.topology());
  }

  const auto start = clock::now();
  Evaluation last_eval;
  const std::int64_t samples_per_epoch = steps_per_epoch * global_batch;
  // The next batch is fetched and its transfer started while the device computes the current step
  // (once the backward pass is queued, before the host waits for anything), so a GPU never waits
  // for a copy.
  const std::unique_ptr<InputStager> stager = backend->make_input_stager(net->image_shape());
  double wait = 0;
  auto step_start = clock::now();  // the first step's clock includes fetching its batch
  data::Batch batch, upcoming;
  auto fetch = [&](data::Batch& into) {
    const auto t = clock::now();
    into = train_loader.next();
    wait += since(t);
    stager->stage(into.images);
  };
  if (first_step < total_steps) fetch(batch);
  out << "data: " << train_cfg.threads << " loader thread" << (train_cfg.threads == 1 ? "" : "s") << " per rank"
      << (o.threads > 0 ? "" : " (the cores compute leaves free; --loader-threads to change)") << ", samples read by "
      << train_loader.read_path() << "\n";
  std::int64_t step = first_step;
  trainer.set_after_backward_queued([&] {
    if (step + 1 < total_steps) fetch(upcoming);
  });
  for (; step < total_steps; ++step) {
    if (step != first_step) step_start = clock::now();
    stager->finish(net->images());
    std::copy_n(batch.labels.data<std::int32_t>(), batch.labels.numel(), net->labels().data<std::int32_t>());
    const StepResult r = trainer.step(batch.epoch, batch.first_sample);
    DPTRAIN_CHECK(std::isfinite(r.loss), "the loss became ", r.loss, " at step ", step + 1,
                  "; lower --lr or check the data");
    log.record_step(r, per_rank_batch, since(step_start), wait);
    wait = 0;
    // Where the next step starts: the position is global, so a resume on any number of ranks
    // continues with the next sample.
    ckpt::Progress progress;
    progress.epoch = batch.epoch;
    progress.samples_in_epoch = batch.position + global_batch;
    const bool epoch_end = progress.samples_in_epoch + global_batch > samples_per_epoch;
    if (epoch_end) {
      ++progress.epoch;
      progress.samples_in_epoch = 0;
    }
    progress.global_step = step + 1;
    progress.seed = o.seed;
    progress.global_batch = global_batch;
    progress.world_size = job.size();
    progress.schedule = tc.schedule;
    const LossScaleState scale = trainer.loss_scaler().state_for_checkpoint();
    progress.loss_scale = scale.scale;
    progress.loss_scale_clean_steps = scale.clean_steps;
    if ((step + 1) % o.log_every == 0 || step + 1 == total_steps || epoch_end) {
      log.report_window(batch.epoch, step + 1, r.learning_rate, reducer.stats());
    }
    if (epoch_end) log.report_epoch_end(batch.epoch, train_cfg.threads);
    if ((epoch_end || step + 1 == total_steps) && eval_loader) {
      last_eval = evaluate(*net, trainer, *eval_loader, comm);
      log.report_evaluation(batch.epoch, step + 1, last_eval);
    }
    const RunCheckpoints::Next next = checkpoints.after_step(step + 1, step + 1 == total_steps);
    if (next != RunCheckpoints::Next::train) checkpoints.write(o.model, *net, trainer.optimizer(), progress, configuration);
    if (next == RunCheckpoints::Next::checkpoint_and_stop) return ckpt::kExitPreempted;
    batch = std::move(upcoming);
  }
  const double seconds = since(start);
  log.report_summary(o.model, manifest.name, per_rank_batch, total_steps - first_step, seconds, eval_loader ? &last_eval : nullptr,
                     reducer.stats());
  return 0;
}
}  // namespace

Command add_train_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("train", "Train a model from a dataset directory (HDF5 shards + manifest.json), "
                                          "on one process or many (srun, mpiexec)");
  auto o = std::make_shared<TrainOptions>();
  cmd->add_option("--model", o->model, "Model name (see 'dptrain inspect --list')")->required();
  cmd->add_option("--data", o->data, "Dataset directory made by 'dptrain data convert'")->required()->check(CLI::ExistingDirectory);
  auto* epochs = cmd->add_option("--epochs", o->epochs, "Train this many epochs")->check(CLI::PositiveNumber);
  auto* steps = cmd->add_option("--steps", o->steps, "Train this many steps")->check(CLI::PositiveNumber);
  epochs->excludes(steps);
  cmd->add_option("--batch-size", o->batch, "Images per step on each rank (the global batch is this times the ranks; "
                                           "a resume without it keeps the checkpoint's global batch)")
      ->check(CLI::PositiveNumber)->capture_default_str()
      ->each([o](const std::string&) { o->batch_given = true; });
  cmd->add_option("--lr", o->lr, "Learning rate per 256 images of global batch (scaled linearly)")
      ->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--schedule", o->schedule, "Learning-rate schedule: constant, step, poly or cosine")->capture_default_str();
  cmd->add_option("--milestones", o->milestones, "Epochs at which --schedule step divides the rate by 10");
  cmd->add_option("--warmup-epochs", o->warmup_epochs, "Linear warm-up from 0 over this many epochs")->capture_default_str();
  cmd->add_option("--momentum", o->momentum, "SGD momentum")->capture_default_str();
  cmd->add_flag("--nesterov", o->nesterov, "Nesterov momentum");
  cmd->add_option("--weight-decay", o->weight_decay, "Weight decay (not on biases and batch norm)")->capture_default_str();
  cmd->add_option("--label-smoothing", o->label_smoothing, "Label smoothing of the loss")->capture_default_str();
  cmd->add_flag("--no-aux", o->no_aux, "Train without the auxiliary classifiers");
  cmd->add_option("--crop", o->crop, "Input size the model sees (default: the stored image size)")->check(CLI::PositiveNumber);
  cmd->add_option("--pad", o->pad, "Zero padding before the random crop in training")->capture_default_str();
  cmd->add_flag("--flip", o->flip, "Random horizontal flips in training");
  add_loader_threads_option(cmd, o->threads);
  cmd->add_option("--seed", o->seed, "Seed of the weights, the sample order and augmentation")->capture_default_str();
  cmd->add_option("--metrics", o->metrics, "Write JSON lines (steps, evaluations, summary) to this file (rank 0)");
  cmd->add_option("--log-every", o->log_every, "Print a line every this many steps")->check(CLI::PositiveNumber)->capture_default_str();
  add_backend_options(cmd, o->device, true);
  add_distributed_options(cmd, o->dist);
  const char* group = "Checkpoints";
  CheckpointOptions& c = o->checkpoints;
  cmd->add_option("--checkpoint-dir", c.directory, "Write checkpoints here (rank 0; ckpt-<step>.h5 and 'latest')")
      ->group(group);
  cmd->add_option("--checkpoint-every", c.every, "Steps (500) or wall time (30m, 2h) between checkpoints; 0: only "
                                                 "at the end and when stopped")
      ->capture_default_str()->group(group);
  cmd->add_option("--keep", c.keep, "Keep the newest K checkpoints (0: all)")->capture_default_str()->group(group);
  cmd->add_option("--resume", c.resume, "auto: from the newest valid checkpoint in --checkpoint-dir if there is one "
                                        "(else a fresh start); none; or a checkpoint file or directory")
      ->capture_default_str()->group(group);
  cmd->add_option("--time-limit", c.time_limit, "Checkpoint and exit with code 75 before this much wall time "
                                                "(HH:MM:SS, 90m, 2h); Slurm's end time is used as well")
      ->group(group);
  cmd->add_option("--stop-at-step", c.stop_at_step, "Checkpoint and exit with code 75 after this global step, as "
                                                    "if preempted (split a run into chunks; tests)")
      ->check(CLI::PositiveNumber)->group(group);
  cmd->add_option("--ready-file", c.ready_file, "Create this file once every rank catches USR1/TERM (checkpoint "
                                                "and exit 75); slurm/train.sbatch holds back an earlier signal")
      ->group(group);
  return [o] { return run_train(*o); };
}

}  // namespace dptrain::app
