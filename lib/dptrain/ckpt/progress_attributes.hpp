#pragma once
// The progress and the optimizer's hyper-parameters as attributes of the /progress and /optimizer
// groups: scalars a person can read with h5dump, and a reader that names the missing field.
//
// /progress: the fields of Progress's table (training_state.hpp), one attribute each
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

}  // namespace dptrain::ckpt
