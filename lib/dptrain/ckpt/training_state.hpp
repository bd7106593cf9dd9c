#pragma once
// What a checkpoint holds: everything a run needs to continue exactly, on any backend and any number
// of ranks. Tensors are fp32 host copies in plain (NCHW) layout, addressed by the parameters' stable
// names, so the state does not depend on the device, the memory layout or the order of the layers.
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "dptrain/core/fields.hpp"
#include "dptrain/core/tensor.hpp"
#include "dptrain/optim/schedule.hpp"
#include "dptrain/optim/sgd.hpp"

namespace dptrain {
class Net;
}

namespace dptrain::ckpt {

struct NamedTensor {
  std::string name;
  Tensor value;  // host, f32, plain
};

// Where the run stands. The data position is global (not per rank), so a job resumes on any world size.
// The table below is the /progress group's attributes, the broadcast of a resume and `inspect`'s rows.
struct Progress {
  std::int64_t epoch = 0;
  std::int64_t global_step = 0;       // steps completed
  std::int64_t samples_in_epoch = 0;  // global position in the epoch: samples consumed by all ranks
  std::uint64_t seed = 1;
  std::int64_t global_batch = 0;
  std::int64_t world_size = 1;  // at save; informational, a resume may use another
  ScheduleConfig schedule;      // kind, lr per 256, global batch, total steps, warm-up, ...
  double base_lr = 0;           // the schedule's scaled base rate, for readers without dptrain (0: capture computes it)
  double loss_scale = 1.0;      // mixed precision's dynamic loss scale (1.0 while training is fp32)
  std::int64_t loss_scale_clean_steps = -1;  // clean steps since the scale last changed; -1: no loss scaling

  template <class Self, class Visit>
  static void fields(Self& p, Visit&& visit) {
    visit(Field{"epoch"}, p.epoch);
    visit(Field{"global_step"}, p.global_step);
    visit(Field{"samples_in_epoch"}, p.samples_in_epoch);
    visit(Field{"seed"}, p.seed);
    visit(Field{"global_batch"}, p.global_batch);
    visit(Field{"world_size"}, p.world_size);
    visit(Field{"loss_scale"}, p.loss_scale);
    // Added with mixed precision: checkpoints written before it come from runs without loss scaling.
    visit(Field{"loss_scale_clean_steps", Field::optional}, p.loss_scale_clean_steps);
    visit(Field{"lr_schedule"}, p.schedule.kind);
    visit(Field{"lr_base"}, p.base_lr);
    visit(Field{"lr_per_256"}, p.schedule.lr_per_256);
    visit(Field{"lr_global_batch"}, p.schedule.global_batch);
    visit(Field{"lr_total_steps"}, p.schedule.total_steps);
    visit(Field{"lr_warmup_steps"}, p.schedule.warmup_steps);
    visit(Field{"lr_warmup_start_factor"}, p.schedule.warmup_start_factor);
    visit(Field{"lr_milestones"}, p.schedule.milestones);
    visit(Field{"lr_gamma"}, p.schedule.gamma);
    visit(Field{"lr_poly_power"}, p.schedule.poly_power);
    visit(Field{"lr_final"}, p.schedule.final_lr);
  }
};

struct OptimizerState {
  std::string type = "sgd";
  SgdConfig sgd;
  std::vector<NamedTensor> momentum;  // named like the parameter it belongs to

  // The /optimizer group's attributes (the momentum tensors are datasets beside them).
  template <class Self, class Visit>
  static void fields(Self& o, Visit&& visit) {
    visit(Field{"type"}, o.type);
    visit(Field{"momentum"}, o.sgd.momentum);
    visit(Field{"weight_decay"}, o.sgd.weight_decay);
    visit(Field{"nesterov"}, o.sgd.nesterov);
    visit(Field{"decay_all"}, o.sgd.decay_all);
  }
};

struct TrainingState {
  std::string model;
  std::vector<NamedTensor> parameters;  // in the model's build order
  std::vector<NamedTensor> buffers;     // batch-norm running statistics
  OptimizerState optimizer;
  Progress progress;
  std::string configuration;  // the run's full configuration as JSON, given by the caller
  std::string dptrain_version;
  // What the backend chose by measuring (cuDNN's convolution algorithms, backend/tuned_choices.hpp),
  // so a resume on the same GPU and libraries computes as the run did; "" on the CPU.
  std::string tuned_choices;
  std::string source;  // the file this state was read from ("" when captured); named in errors
};

// Copies the net's parameters and buffers and the optimizer's momentum to the host (through the
// backend, so any device works). `configuration` is stored as given.
TrainingState capture_state(Net& net, Sgd& sgd, const std::string& model, const Progress& progress,
                            std::string configuration);

// Copies the state's tensors into the net and the optimizer. Everything is validated first (the
// model name, then every parameter, buffer and momentum buffer: missing, extra or of another shape)
// and nothing is modified unless all of it fits; the error names the checkpoint and the tensor.
// Hyper-parameters and progress are left to the caller, who decides what a resume keeps.
// Parameters named in `keep_fresh` (a classifier re-initialised for another class count) keep the
// net's values, and their saved tensors and momentum are ignored. A state at step 0 without momentum
// (imported weights) leaves the momentum at zero.
void apply_state(const TrainingState& state, const std::string& model, Net& net, Sgd& sgd,
                 const std::set<std::string>& keep_fresh = {});

// Sgd names its buffers "<parameter>/momentum"; checkpoints name them after the parameter.
std::string momentum_parameter_name(const std::string& buffer_name);

}  // namespace dptrain::ckpt
