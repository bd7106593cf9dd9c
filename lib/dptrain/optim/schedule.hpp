#pragma once
// Learning-rate schedules as pure functions of the global step, so a resumed run (on any number of
// ranks) continues exactly where it stopped. The base rate follows the linear scaling rule of Goyal et
// al. (2017): `lr_per_256` is for 256 images of global batch and scales with the global batch.
#include <cstdint>
#include <string>
#include <vector>

namespace dptrain {

enum class ScheduleKind { constant, step, poly, cosine };

struct ScheduleConfig {
  ScheduleKind kind = ScheduleKind::step;
  double lr_per_256 = 0.1;
  std::int64_t global_batch = 256;
  std::int64_t total_steps = 0;   // poly and cosine decay to the end of training
  std::int64_t warmup_steps = 0;  // linear warm-up from warmup_start_factor * base
  double warmup_start_factor = 0.0;
  std::vector<std::int64_t> milestones;  // step: multiply by `gamma` at each milestone step
  double gamma = 0.1;
  double poly_power = 2.0;
  double final_lr = 0.0;  // poly and cosine end here
};

ScheduleKind parse_schedule(const std::string& name);  // "constant", "step", "poly", "cosine"
const char* schedule_name(ScheduleKind kind);
// ScheduleKind as a field of a record (core/fields.hpp).
inline const char* field_text(ScheduleKind kind) { return schedule_name(kind); }
inline void parse_field_text(const std::string& text, ScheduleKind& kind) { kind = parse_schedule(text); }

class LearningRateSchedule {
 public:
  explicit LearningRateSchedule(ScheduleConfig config);
  double base() const { return base_; }
  double at(std::int64_t step) const;  // the rate for step `step` (0-based)

 private:
  ScheduleConfig config_;
  double base_;
};

}  // namespace dptrain
