#pragma once
// The progress and the optimizer's hyper-parameters as attributes of the /progress and /optimizer
// groups: scalars a person can read with h5dump, and a reader that names the missing field.
//
// /progress: epoch, global_step, samples_in_epoch, seed, global_batch, world_size, loss_scale, loss_scale_clean_steps,
//   lr_schedule ("constant" | "step" | "poly" | "cosine"), lr_base, lr_per_256, lr_global_batch,
//   lr_total_steps, lr_warmup_steps, lr_warmup_start_factor, lr_milestones (int64 array, steps),
//   lr_gamma, lr_poly_power, lr_final
// /optimizer: type, momentum, weight_decay, nesterov (0/1), decay_all (0/1)
#include <hdf5.h>

#include <string>

#include "dptrain/ckpt/training_state.hpp"

namespace dptrain::ckpt {

void write_progress(hid_t group, const Progress& progress);
Progress read_progress(hid_t group, const std::string& path_for_errors);

void write_optimizer_attributes(hid_t group, const OptimizerState& optimizer);
// Fills type and hyper-parameters; the momentum tensors are read separately.
OptimizerState read_optimizer_attributes(hid_t group, const std::string& path_for_errors);

std::string schedule_name(ScheduleKind kind);

}  // namespace dptrain::ckpt
