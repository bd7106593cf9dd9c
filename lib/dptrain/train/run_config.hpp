#pragma once
// What a training run is asked to do: everything `dptrain train` takes on its command line, as one
// type the command fills and TrainingRun (and the tests) consume.
//
// Its field table is the run's configuration as stored in every checkpoint (the `configuration`
// attribute, JSON) and shown by `dptrain inspect CKPT`; `dptrain eval` reads the model's shape from
// it. Options that do not change what is trained (where the metrics go, logging, loader threads,
// the checkpoint directory, the launch) are not stored.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "dptrain/core/fields.hpp"
#include "dptrain/distributed/job.hpp"
#include "dptrain/train/compute_options.hpp"
#include "dptrain/train/run_checkpoints.hpp"

namespace dptrain {

struct TrainingRunConfig {
  std::string model, data;
  std::string metrics;  // JSON lines to this file (rank 0); "" none
  int epochs = 0;       // exactly one of epochs and steps is positive
  std::int64_t steps = 0;
  int batch = 64;            // per rank
  bool batch_given = false;  // a resume keeps the checkpoint's global batch unless the batch was given
  int world_size = 1;        // stored: the ranks of the run (TrainingRun sets it)
  double lr = 0.1;           // per 256 images of global batch
  std::string schedule = "cosine";
  double warmup_epochs = 0;
  std::vector<double> milestones;  // epochs, for the step schedule
  float momentum = 0.9f, weight_decay = 1e-4f, label_smoothing = 0.f;
  bool nesterov = false, aux_heads = true, flip = false;
  int crop = 0, pad = 0;
  int loader_threads = 0;         // 0: what the rank can spare
  bool reset_classifier = false;  // a resume keeps the fresh classifier (fine-tuning to other classes)
  bool reschedule = false;        // --reschedule: a resume may change the length a poly or cosine decays over
  int log_every = 50;
  // --trace: each rank's trace of a window of steps to this directory ("" none); the window,
  // --trace-steps FIRST:LAST ("" the default: trace_window in train/trace_file.hpp).
  std::string trace, trace_steps;
  std::uint64_t seed = 1;
  distributed::JobOptions dist;
  BackendOptions device;
  CheckpointOptions checkpoints;

  // The stored configuration (keys as `dptrain train` has always written them).
  template <class Self, class Visit>
  static void fields(Self& c, Visit&& visit) {
    visit(Field{"model"}, c.model);
    visit(Field{"data"}, c.data);
    visit(Field{"epochs"}, c.epochs);
    visit(Field{"steps"}, c.steps);
    visit(Field{"batch_size"}, c.batch);
    visit(Field{"world_size"}, c.world_size);
    visit(Field{"lr_per_256"}, c.lr);
    visit(Field{"schedule"}, c.schedule);
    visit(Field{"warmup_epochs"}, c.warmup_epochs);
    visit(Field{"milestones"}, c.milestones);
    visit(Field{"momentum"}, c.momentum);
    visit(Field{"nesterov"}, c.nesterov);
    visit(Field{"weight_decay"}, c.weight_decay);
    visit(Field{"label_smoothing"}, c.label_smoothing);
    visit(Field{"aux_heads"}, c.aux_heads);
    visit(Field{"crop"}, c.crop);
    visit(Field{"pad"}, c.pad);
    visit(Field{"flip"}, c.flip);
    visit(Field{"seed"}, c.seed);
    visit(Field{"backend"}, c.device.backend);
    visit(Field{"precision"}, c.device.precision);
    visit(Field{"loss_scale"}, c.device.loss_scale);
    visit(Field{"allreduce"}, c.dist.allreduce);
    visit(Field{"bucket_mb"}, c.dist.bucket_mb);
    visit(Field{"checkpoint_every"}, c.checkpoints.every);
  }
};

// The stored configuration as the JSON text a checkpoint holds.
std::string stored_configuration(const TrainingRunConfig& config);
// A checkpoint's configuration read back: keys it lacks (an older dptrain) keep the defaults above;
// text that is not a JSON object gives the defaults.
TrainingRunConfig parse_stored_configuration(const std::string& json_text, const std::string& where);

}  // namespace dptrain
