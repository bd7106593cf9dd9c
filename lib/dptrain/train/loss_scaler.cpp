#include "dptrain/train/loss_scaler.hpp"

#include <cmath>
#include <cstdlib>
#include <sstream>

#include "dptrain/core/error.hpp"

namespace dptrain {

LossScaleConfig parse_loss_scale(const std::string& text, Precision precision) {
  LossScaleConfig c;
  if (text == "auto") {
    c.mode = needs_loss_scaling(precision) ? LossScaleConfig::Mode::dynamic : LossScaleConfig::Mode::none;
  } else if (text == "none") {
    c.mode = LossScaleConfig::Mode::none;
  } else if (text == "dynamic") {
    c.mode = LossScaleConfig::Mode::dynamic;
  } else {
    char* end = nullptr;
    const double value = std::strtod(text.c_str(), &end);
    DPTRAIN_CHECK(!text.empty() && end && *end == '\0' && std::isfinite(value) && value > 0,
                  "--loss-scale must be "
                  "auto, none, dynamic or a positive number, not '",
                  text, "'");
    c.mode = LossScaleConfig::Mode::fixed;
    c.initial = value;
  }
  if (c.mode == LossScaleConfig::Mode::none) c.initial = 1.0;
  return c;
}

std::string describe(const LossScaleConfig& c) {
  std::ostringstream out;
  switch (c.mode) {
    case LossScaleConfig::Mode::none: return "none";
    case LossScaleConfig::Mode::fixed: out << "fixed " << c.initial; break;
    case LossScaleConfig::Mode::dynamic:
      out << "dynamic from " << c.initial << " (x" << c.growth_factor << " after " << c.growth_interval
          << " clean steps, x" << c.backoff_factor << " and skip on overflow)";
      break;
  }
  return out.str();
}

LossScaler::LossScaler(LossScaleConfig config) : config_(config) {
  DPTRAIN_CHECK(config_.initial > 0 && std::isfinite(config_.initial), "the loss scale must be positive");
  DPTRAIN_CHECK(config_.growth_interval > 0 && config_.growth_factor > 1 && config_.backoff_factor > 0 &&
                    config_.backoff_factor < 1,
                "loss scaler: growth interval and factors out of range");
  state_.scale = enabled() ? config_.initial : 1.0;
}

bool LossScaler::unscale(Backend& backend, std::span<Tensor* const> gradients, std::int64_t step) {
  if (!enabled()) return true;
  const bool finite = backend.scale_and_check_finite(gradients, static_cast<float>(1.0 / state_.scale));
  if (config_.mode == LossScaleConfig::Mode::fixed) {
    DPTRAIN_CHECK(finite, "the gradients overflowed at step ", step, " with the fixed --loss-scale ", state_.scale,
                  "; use --loss-scale dynamic or a smaller scale");
    return true;
  }
  if (!finite) {
    ++skipped_;
    state_.scale *= config_.backoff_factor;
    state_.clean_steps = 0;
    DPTRAIN_CHECK(state_.scale >= config_.min_scale, "the gradients are inf or NaN at step ", step,
                  " even with a "
                  "loss scale of ",
                  state_.scale / config_.backoff_factor,
                  ": the run has diverged; lower --lr or "
                  "check the data");
    return false;
  }
  if (++state_.clean_steps >= config_.growth_interval) {
    state_.scale *= config_.growth_factor;
    state_.clean_steps = 0;
  }
  return true;
}

void LossScaler::restore(const LossScaleState& state) {
  if (!enabled()) return;  // a checkpoint of a scaled run resumed without scaling: nothing to restore
  // A checkpoint of a run without loss scaling (clean_steps < 0, see state_for_checkpoint) leaves
  // this scaler at its own start.
  if (config_.mode != LossScaleConfig::Mode::dynamic || state.clean_steps < 0) return;
  DPTRAIN_CHECK(state.scale > 0 && std::isfinite(state.scale), "the checkpoint's loss scale ", state.scale,
                " is not a positive number");
  state_ = state;
}

LossScaleState LossScaler::state_for_checkpoint() const { return enabled() ? state_ : LossScaleState{1.0, -1}; }

}  // namespace dptrain
