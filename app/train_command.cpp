// dptrain train: trains a model from HDF5 shards on one or many ranks (srun / mpiexec), evaluates on
// the validation split after every epoch, prints human lines on rank 0 and writes JSON lines to
// --metrics.
#include <chrono>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <optional>

#include "commands.hpp"
#include "distributed_options.hpp"
#include "dptrain/data/loader.hpp"
#include "dptrain/data/manifest.hpp"
#include "dptrain/dist/parameter_sync.hpp"
#include "dptrain/net/models/registry.hpp"
#include "dptrain/train/evaluation.hpp"
#include "dptrain/train/trainer.hpp"
#include "json_writer.hpp"
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
  int crop = 0, pad = 0, threads = 2, log_every = 50;
  std::uint64_t seed = 1;
  dist::JobOptions dist;
};

using clock = std::chrono::steady_clock;
double since(clock::time_point t) { return std::chrono::duration<double>(clock::now() - t).count(); }

// Rank 0 reads manifest.json and sends it to the others: thousands of ranks opening one file at once
// is a metadata storm on a parallel file system.
data::Manifest read_manifest(const std::string& directory, dist::Communicator& comm) {
  std::string text;
  std::int64_t length = 0;
  if (comm.rank() == 0) {
    text = data::Manifest::read(directory).to_json();
    length = static_cast<std::int64_t>(text.size());
  }
  comm.broadcast(&length, sizeof length, 0);
  text.resize(static_cast<std::size_t>(length));
  comm.broadcast(text.data(), text.size(), 0);
  return data::Manifest::parse(text, directory + "/manifest.json");
}

int run_train(const TrainOptions& o) {
  DPTRAIN_CHECK((o.epochs > 0) != (o.steps > 0), "give exactly one of --epochs and --steps");
  dist::Job job(o.dist);
  dist::Communicator& comm = job.communicator();
  const data::Manifest manifest = read_manifest(o.data, comm);
  const data::SplitInfo& train_split = manifest.split("train");
  const bool has_validation = manifest.splits.contains("validation");
  const int global_batch = o.batch * job.size();

  auto backend = make_cpu_backend();
  ModelConfig model;
  model.batch = o.batch;
  model.channels = manifest.channels;
  model.image_size = o.crop > 0 ? o.crop : std::min(manifest.height, manifest.width);
  model.classes = manifest.class_count();
  model.aux_heads = !o.no_aux;
  model.label_smoothing = o.label_smoothing;
  auto net = build_model(o.model, *backend, model);
  net->initialize(o.seed);
  dist::broadcast_parameters(*net, comm);

  data::LoaderConfig train_cfg;
  train_cfg.split = "train";
  train_cfg.batch = o.batch;
  train_cfg.rank = job.rank();
  train_cfg.world_size = job.size();
  train_cfg.training = true;
  train_cfg.crop = model.image_size;
  train_cfg.pad = o.pad;
  train_cfg.flip = o.flip;
  train_cfg.threads = o.threads;
  train_cfg.seed = o.seed;
  data::Loader train_loader(manifest, o.data, train_cfg);
  const std::int64_t steps_per_epoch = train_loader.steps_per_epoch();
  DPTRAIN_CHECK(steps_per_epoch > 0, o.data, ": the train split has ", train_split.samples,
                " samples, fewer than one global batch of ", global_batch);
  const std::int64_t total_steps = o.steps > 0 ? o.steps : o.epochs * steps_per_epoch;

  TrainerConfig tc;
  tc.seed = o.seed;
  tc.sgd = SgdConfig{o.momentum, o.weight_decay, o.nesterov, false};
  tc.schedule.kind = parse_schedule(o.schedule);
  tc.schedule.lr_per_256 = o.lr;
  tc.schedule.global_batch = global_batch;
  tc.schedule.total_steps = total_steps;
  tc.schedule.warmup_steps = static_cast<std::int64_t>(o.warmup_epochs * static_cast<double>(steps_per_epoch));
  for (double e : o.milestones) tc.schedule.milestones.push_back(static_cast<std::int64_t>(e * static_cast<double>(steps_per_epoch)));
  Trainer trainer(*net, tc);
  dist::GradientReducer reducer(*backend, comm, net->parameters(), job.reducer_config());
  reducer.attach(*net);
  trainer.set_gradient_sync([&] { reducer.synchronize(); });

  std::optional<data::Loader> eval_loader;
  if (has_validation) {
    data::LoaderConfig eval_cfg = train_cfg;
    eval_cfg.split = "validation";
    eval_cfg.training = false;
    eval_loader.emplace(manifest, o.data, eval_cfg);
  }
  TrainingLog log(comm, o.metrics, total_steps, global_batch);
  log.out() << "dptrain train: " << o.model << " on " << manifest.name << " (" << train_split.samples << " images, "
            << manifest.class_count() << " classes, " << model.image_size << "x" << model.image_size << "x"
            << manifest.channels << "), " << job.size() << " rank" << (job.size() == 1 ? "" : "s") << " x batch "
            << o.batch << " = " << global_batch << ", " << total_steps << " steps (" << steps_per_epoch
            << " per epoch), lr " << trainer.schedule().base() << " (" << o.lr << " per 256), " << backend->name()
            << "\n";
  if (job.size() > 1) {
    log.out() << "gradients: " << comm.name() << ", " << reducer.bucket_count() << " buckets of up to "
              << o.dist.bucket_mb << " MB, overlap " << (job.reducer_config().overlap ? "on" : "off") << ", "
              << job.compute_threads() << " compute thread(s) per rank\n"
              << describe(job.topology());
  }

  const auto start = clock::now();
  Evaluation last_eval;
  for (std::int64_t step = 0; step < total_steps; ++step) {
    const auto step_start = clock::now();
    data::Batch batch = train_loader.next();
    const double wait = since(step_start);
    backend->copy_from_host(batch.images, net->images());
    std::copy_n(batch.labels.data<std::int32_t>(), batch.labels.numel(), net->labels().data<std::int32_t>());
    const StepResult r = trainer.step(batch.epoch, batch.first_sample);
    DPTRAIN_CHECK(std::isfinite(r.loss), "the loss became ", r.loss, " at step ", step + 1,
                  "; lower --lr or check the data");
    log.record_step(r, o.batch, since(step_start), wait);
    const bool epoch_end = (step + 1) % steps_per_epoch == 0;
    if ((step + 1) % o.log_every == 0 || step + 1 == total_steps || epoch_end) {
      log.report_window(batch.epoch, step + 1, r.learning_rate, reducer.stats());
    }
    if ((epoch_end || step + 1 == total_steps) && eval_loader) {
      last_eval = evaluate(*net, trainer, *eval_loader, comm);
      log.report_evaluation(batch.epoch, step + 1, last_eval);
    }
  }
  const double seconds = since(start);
  log.report_summary(o.model, manifest.name, o.batch, total_steps, seconds, eval_loader ? &last_eval : nullptr,
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
  cmd->add_option("--batch-size", o->batch, "Images per step on each rank (the global batch is this times the ranks)")
      ->check(CLI::PositiveNumber)->capture_default_str();
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
  cmd->add_option("--threads", o->threads, "Data loading threads per rank")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--seed", o->seed, "Seed of the weights, the sample order and augmentation")->capture_default_str();
  cmd->add_option("--metrics", o->metrics, "Write JSON lines (steps, evaluations, summary) to this file (rank 0)");
  cmd->add_option("--log-every", o->log_every, "Print a line every this many steps")->check(CLI::PositiveNumber)->capture_default_str();
  add_distributed_options(cmd, o->dist);
  return [o] { return run_train(*o); };
}

}  // namespace dptrain::app
