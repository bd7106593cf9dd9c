#include "dptrain/optim/schedule.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "dptrain/core/error.hpp"

namespace dptrain {

ScheduleKind parse_schedule(const std::string& name) {
  if (name == "constant") return ScheduleKind::constant;
  if (name == "step") return ScheduleKind::step;
  if (name == "poly") return ScheduleKind::poly;
  if (name == "cosine") return ScheduleKind::cosine;
  throw Error("unknown learning-rate schedule '" + name + "'; use constant, step, poly or cosine");
}

const char* schedule_name(ScheduleKind kind) {
  switch (kind) {
    case ScheduleKind::constant: return "constant";
    case ScheduleKind::step: return "step";
    case ScheduleKind::poly: return "poly";
    case ScheduleKind::cosine: return "cosine";
  }
  return "?";
}

LearningRateSchedule::LearningRateSchedule(ScheduleConfig config)
    : config_(std::move(config)), base_(config_.lr_per_256 * static_cast<double>(config_.global_batch) / 256.0) {
  DPTRAIN_CHECK(config_.global_batch > 0, "the global batch must be positive");
  DPTRAIN_CHECK(config_.lr_per_256 > 0, "the learning rate must be positive, not ", config_.lr_per_256);
  DPTRAIN_CHECK(config_.warmup_steps >= 0, "warm-up steps must not be negative");
  DPTRAIN_CHECK(std::is_sorted(config_.milestones.begin(), config_.milestones.end()),
                "step milestones must be in increasing order");
  if (config_.kind == ScheduleKind::poly || config_.kind == ScheduleKind::cosine) {
    DPTRAIN_CHECK(config_.total_steps > config_.warmup_steps,
                  "poly and cosine schedules need more steps in all than in the warm-up, not ", config_.total_steps,
                  " in all and ", config_.warmup_steps, " of warm-up");
  }
}

double LearningRateSchedule::at(std::int64_t step) const {
  const auto& c = config_;
  if (step < c.warmup_steps) {
    const double t = static_cast<double>(step) / static_cast<double>(c.warmup_steps);
    return base_ * (c.warmup_start_factor + (1.0 - c.warmup_start_factor) * t);
  }
  switch (c.kind) {
    case ScheduleKind::constant: return base_;
    case ScheduleKind::step: {
      const auto passed = std::upper_bound(c.milestones.begin(), c.milestones.end(), step) - c.milestones.begin();
      return base_ * std::pow(c.gamma, static_cast<double>(passed));
    }
    case ScheduleKind::poly:
    case ScheduleKind::cosine: {
      const double span = static_cast<double>(c.total_steps - c.warmup_steps);
      const double t = std::clamp(static_cast<double>(step - c.warmup_steps) / span, 0.0, 1.0);
      const double shape =
          c.kind == ScheduleKind::poly ? std::pow(1.0 - t, c.poly_power) : 0.5 * (1.0 + std::cos(std::numbers::pi * t));
      return c.final_lr + (base_ - c.final_lr) * shape;
    }
  }
  return base_;
}

}  // namespace dptrain
