#pragma once
// A checkpoint as one JSON object: what `dptrain inspect CKPT --json` prints and its table shows.
// Keys: path, bytes, model, step, epoch, samples_in_epoch, world_size, global_batch, seed, loss_scale,
// learning_rate {schedule, base, per_256, total_steps, warmup_steps, milestones}, optimizer {type,
// momentum, weight_decay, nesterov, decay_all}, progress (every /progress attribute, by its name),
// dptrain_version, configuration (the stored JSON,
// parsed; the raw string if it does not parse), and parameters, buffers, momentum: arrays of
// {name, shape, count, mean, std, min, max, l2_norm} (NaN and infinities print as null).
#include <cstdint>
#include <nlohmann/json.hpp>

#include "dptrain/ckpt/training_state.hpp"

namespace dptrain::ckpt {

nlohmann::json checkpoint_summary(const TrainingState& state, std::uintmax_t bytes);

}  // namespace dptrain::ckpt
