// dptrain train: trains a model from HDF5 shards on this process (more ranks come with the
// distributed issue), evaluates on the validation split after every epoch, prints human lines and
// writes JSON lines to --metrics.
#include <chrono>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <optional>

#include "commands.hpp"
#include "dptrain/data/loader.hpp"
#include "dptrain/data/manifest.hpp"
#include "dptrain/net/models/registry.hpp"
#include "dptrain/train/accuracy.hpp"
#include "dptrain/train/trainer.hpp"
#include "json_writer.hpp"

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
};

using clock = std::chrono::steady_clock;
double since(clock::time_point t) { return std::chrono::duration<double>(clock::now() - t).count(); }

struct Evaluation {
  double loss = 0, top1 = 0, top5 = 0;
  std::int64_t samples = 0;
  double seconds = 0;
};

Evaluation evaluate(Net& net, Trainer& trainer, data::Loader& loader) {
  Evaluation e;
  const auto start = clock::now();
  loader.seek(0, 0);
  double loss_sum = 0;
  std::int64_t top1 = 0, top5 = 0;
  for (;;) {
    data::Batch batch = loader.next();
    if (batch.end) break;
    if (batch.valid == 0) continue;  // only padding on this rank
    net.backend().copy_from_host(batch.images, net.images());
    std::copy_n(batch.labels.data<std::int32_t>(), batch.labels.numel(), net.labels().data<std::int32_t>());
    const StepResult r = trainer.evaluate_batch();
    // Padding samples of a final partial batch do not count.
    const Tensor p = net.backend().to_host(net.probabilities()).slice_samples(0, batch.valid);
    const Tensor l = net.labels().slice_samples(0, batch.valid);
    const int classes = static_cast<int>(p.shape()[1]);
    top1 += top_k_correct(p, l, 1);
    top5 += top_k_correct(p, l, std::min(5, classes));
    loss_sum += r.loss * batch.valid;
    e.samples += batch.valid;
  }
  e.loss = e.samples ? loss_sum / static_cast<double>(e.samples) : 0;
  e.top1 = e.samples ? static_cast<double>(top1) / static_cast<double>(e.samples) : 0;
  e.top5 = e.samples ? static_cast<double>(top5) / static_cast<double>(e.samples) : 0;
  e.seconds = since(start);
  return e;
}

int run_train(const TrainOptions& o) {
  DPTRAIN_CHECK((o.epochs > 0) != (o.steps > 0), "give exactly one of --epochs and --steps");
  const data::Manifest manifest = data::Manifest::read(o.data);
  const data::SplitInfo& train_split = manifest.split("train");
  const bool has_validation = manifest.splits.contains("validation");

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

  data::LoaderConfig train_cfg;
  train_cfg.split = "train";
  train_cfg.batch = o.batch;
  train_cfg.training = true;
  train_cfg.crop = model.image_size;
  train_cfg.pad = o.pad;
  train_cfg.flip = o.flip;
  train_cfg.threads = o.threads;
  train_cfg.seed = o.seed;
  data::Loader train_loader(manifest, o.data, train_cfg);
  const std::int64_t steps_per_epoch = train_loader.steps_per_epoch();
  DPTRAIN_CHECK(steps_per_epoch > 0, o.data, ": the train split has ", train_split.samples,
                " samples, fewer than one global batch of ", o.batch);
  const std::int64_t total_steps = o.steps > 0 ? o.steps : o.epochs * steps_per_epoch;

  TrainerConfig tc;
  tc.seed = o.seed;
  tc.sgd = SgdConfig{o.momentum, o.weight_decay, o.nesterov, false};
  tc.schedule.kind = parse_schedule(o.schedule);
  tc.schedule.lr_per_256 = o.lr;
  tc.schedule.global_batch = o.batch;
  tc.schedule.total_steps = total_steps;
  tc.schedule.warmup_steps = static_cast<std::int64_t>(o.warmup_epochs * static_cast<double>(steps_per_epoch));
  for (double e : o.milestones) tc.schedule.milestones.push_back(static_cast<std::int64_t>(e * static_cast<double>(steps_per_epoch)));
  Trainer trainer(*net, tc);

  std::optional<data::Loader> eval_loader;
  if (has_validation) {
    data::LoaderConfig eval_cfg = train_cfg;
    eval_cfg.split = "validation";
    eval_cfg.training = false;
    eval_loader.emplace(manifest, o.data, eval_cfg);
  }
  std::ofstream metrics;
  if (!o.metrics.empty()) {
    metrics.open(o.metrics);
    DPTRAIN_CHECK(metrics.good(), o.metrics, ": cannot write the metrics file");
  }

  std::cout << "dptrain train: " << o.model << " on " << manifest.name << " (" << train_split.samples << " images, "
            << manifest.class_count() << " classes, " << model.image_size << "x" << model.image_size << "x"
            << manifest.channels << "), batch " << o.batch << ", " << total_steps << " steps (" << steps_per_epoch
            << " per epoch), lr " << trainer.schedule().base() << " (" << o.lr << " per 256), " << backend->name()
            << "\n";
  const auto start = clock::now();
  auto window_start = clock::now();
  double window_loss = 0;
  std::int64_t window_correct = 0, window_samples = 0, images = 0;
  double wait_before = 0;
  Evaluation last_eval;
  for (std::int64_t step = 0; step < total_steps; ++step) {
    data::Batch batch = train_loader.next();
    backend->copy_from_host(batch.images, net->images());
    std::copy_n(batch.labels.data<std::int32_t>(), batch.labels.numel(), net->labels().data<std::int32_t>());
    const StepResult r = trainer.step(batch.epoch, batch.first_sample);
    DPTRAIN_CHECK(std::isfinite(r.loss), "the loss became ", r.loss, " at step ", step + 1,
                  "; lower --lr or check the data");
    window_loss += r.loss;
    window_correct += r.top1;
    window_samples += o.batch;
    images += o.batch;
    const bool epoch_end = (step + 1) % steps_per_epoch == 0;
    if ((step + 1) % o.log_every == 0 || step + 1 == total_steps || epoch_end) {
      const double seconds = since(window_start);
      const double rate = static_cast<double>(window_samples) / seconds;
      const double wait = train_loader.wait_seconds() - wait_before;
      const double eta = static_cast<double>(total_steps - step - 1) * o.batch / rate;
      const std::int64_t steps_in_window = window_samples / o.batch;
      std::cout << "epoch " << batch.epoch + 1 << "  step " << step + 1 << "/" << total_steps << "  loss " << std::fixed
                << std::setprecision(4) << window_loss / static_cast<double>(steps_in_window) << "  acc "
                << std::setprecision(3) << static_cast<double>(window_correct) / static_cast<double>(window_samples)
                << "  " << std::setprecision(1) << rate << " img/s  data wait " << std::setprecision(1)
                << 100.0 * wait / seconds << "%  lr " << std::setprecision(5) << r.learning_rate << "  eta "
                << std::setprecision(0) << eta << " s\n";
      if (metrics.is_open()) {
        JsonWriter j(metrics);
        j.field("type", "step").field("epoch", batch.epoch).field("step", step + 1);
        j.field("loss", window_loss / static_cast<double>(steps_in_window));
        j.field("accuracy", static_cast<double>(window_correct) / static_cast<double>(window_samples));
        j.field("images_per_sec", rate).field("data_wait_fraction", wait / seconds).field("learning_rate", r.learning_rate);
        j.close();
      }
      wait_before = train_loader.wait_seconds();
      window_loss = 0;
      window_correct = window_samples = 0;
      window_start = clock::now();
    }
    if ((epoch_end || step + 1 == total_steps) && eval_loader) {
      last_eval = evaluate(*net, trainer, *eval_loader);
      std::cout << "validation after epoch " << batch.epoch + 1 << ": loss " << std::setprecision(4) << last_eval.loss
                << "  top-1 " << std::setprecision(4) << last_eval.top1 << "  top-5 " << last_eval.top5 << "  ("
                << last_eval.samples << " images, " << std::setprecision(1) << last_eval.seconds << " s)\n";
      if (metrics.is_open()) {
        JsonWriter j(metrics);
        j.field("type", "eval").field("epoch", batch.epoch).field("step", step + 1).field("loss", last_eval.loss);
        j.field("top1", last_eval.top1).field("top5", last_eval.top5).field("samples", last_eval.samples);
        j.close();
      }
      window_start = clock::now();  // evaluation time is not training throughput
    }
  }
  const double seconds = since(start);
  std::cout << std::setprecision(1) << "trained " << total_steps << " steps in " << seconds << " s; ";
  if (eval_loader) std::cout << "validation top-1 " << std::setprecision(4) << last_eval.top1 << "; ";
  std::cout << "data wait " << std::setprecision(1) << train_loader.wait_seconds() << " s\n";
  if (metrics.is_open()) {
    JsonWriter j(metrics);
    j.field("type", "summary").field("model", o.model).field("dataset", manifest.name).field("batch_size", o.batch);
    j.field("world_size", 1).field("steps", total_steps).field("seconds", seconds);
    j.field("images_per_sec_overall", static_cast<double>(images) / seconds);
    j.field("validation_top1", last_eval.top1).field("validation_top5", last_eval.top5);
    j.close();
  }
  return 0;
}
}  // namespace

Command add_train_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("train", "Train a model from a dataset directory (HDF5 shards + manifest.json)");
  auto o = std::make_shared<TrainOptions>();
  cmd->add_option("--model", o->model, "Model name (see 'dptrain inspect --list')")->required();
  cmd->add_option("--data", o->data, "Dataset directory made by 'dptrain data convert'")->required()->check(CLI::ExistingDirectory);
  auto* epochs = cmd->add_option("--epochs", o->epochs, "Train this many epochs")->check(CLI::PositiveNumber);
  auto* steps = cmd->add_option("--steps", o->steps, "Train this many steps")->check(CLI::PositiveNumber);
  epochs->excludes(steps);
  cmd->add_option("--batch-size", o->batch, "Images per step on this rank")->check(CLI::PositiveNumber)->capture_default_str();
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
  cmd->add_option("--threads", o->threads, "Data loading threads")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--seed", o->seed, "Seed of the weights, the sample order and augmentation")->capture_default_str();
  cmd->add_option("--metrics", o->metrics, "Write JSON lines (steps, evaluations, summary) to this file");
  cmd->add_option("--log-every", o->log_every, "Print a line every this many steps")->check(CLI::PositiveNumber)->capture_default_str();
  return [o] { return run_train(*o); };
}

}  // namespace dptrain::app
