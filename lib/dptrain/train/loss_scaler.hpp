#pragma once
// Loss scaling for fp16 training. fp16 gradients underflow (its smallest normal is 6e-5), so the loss
// gradient is multiplied by a scale S before the backward pass and the reduced gradients by 1/S after
// it. Dynamic scaling (as NVIDIA's Apex and NV-Caffe do) starts high; when a step's gradients hold an
// inf or NaN the step is skipped (no update) and S is halved, and after `growth_interval` clean steps
// in a row S is doubled. The reduced gradients are the same on every rank, so every rank takes the
// same decision without another collective. The scale and the clean-step count are checkpointed.
#include <cstdint>
#include <span>
#include <string>

#include "dptrain/backend/backend.hpp"
#include "dptrain/core/precision.hpp"

namespace dptrain {

struct LossScaleConfig {
  enum class Mode { none, fixed, dynamic } mode = Mode::none;
  double initial = 65536.0;  // 2^16 (dynamic), or the fixed scale
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  std::int64_t growth_interval = 2000;
  double min_scale = 1.0 / 65536;  // a scale this small means the model itself produces inf/NaN
};

// --loss-scale: auto (dynamic for fp16, none otherwise), none, dynamic, or a fixed positive number.
LossScaleConfig parse_loss_scale(const std::string& text, Precision precision);
std::string describe(const LossScaleConfig& config);

struct LossScaleState {
  double scale = 1.0;
  std::int64_t clean_steps = 0;  // since the last change of the scale; -1: the run had no loss scaling
};

class LossScaler {
 public:
  explicit LossScaler(LossScaleConfig config);

  bool enabled() const { return config_.mode != LossScaleConfig::Mode::none; }
  // The factor the loss gradient is multiplied by for the next backward pass (1 when disabled).
  float scale() const { return static_cast<float>(state_.scale); }
  // After the gradients are reduced: divides them by the scale and tells whether the step may be
  // applied (all finite). A dynamic scaler adapts its scale; a fixed one fails on inf/NaN, since
  // skipping forever would hide a diverged run.
  bool unscale(Backend& backend, std::span<Tensor* const> gradients, std::int64_t step);

  std::int64_t skipped_steps() const { return skipped_; }
  const LossScaleState& state() const { return state_; }
  // What a checkpoint stores: the state, or scale 1 with clean_steps -1 when scaling is off, so that
  // a resume with scaling on can tell "no scaler" from a dynamic scale that fell to 1.
  LossScaleState state_for_checkpoint() const;
  void restore(const LossScaleState& state);

 private:
  LossScaleConfig config_;
  LossScaleState state_;
  std::int64_t skipped_ = 0;
};

}  // namespace dptrain
