#include "dptrain/ckpt/checkpoint_every.hpp"

#include "dptrain/core/duration.hpp"
#include "dptrain/core/error.hpp"

namespace dptrain::ckpt {

CheckpointEvery CheckpointEvery::parse(const std::string& text, WallClock::time_point start) {
  CheckpointEvery every;
  every.last_ = start;
  if (text == "never" || text == "0") return every;
  std::string count = text;
  for (const char* unit : {"steps", "step"}) {
    if (count.ends_with(unit)) {
      count.resize(count.size() - std::string(unit).size());
      break;
    }
  }
  if (const auto n = parse_count(count); n && *n > 0) {
    every.steps_ = *n;
    return every;
  }
  // A bare number was a step count above: here only a time with a unit or a clock form.
  const std::optional<double> seconds = has_unit(text) ? duration_seconds(text) : std::nullopt;
  DPTRAIN_CHECK(seconds && *seconds >= 1, "--checkpoint-every '", text,
                "' is not a checkpoint interval; use a step count (500 or 500steps), a time (30s, 10m, 2h, "
                "01:30:00) or never");
  every.interval_ = std::chrono::seconds(static_cast<std::int64_t>(*seconds));
  return every;
}

bool CheckpointEvery::due(std::int64_t step, WallClock::time_point now) const {
  if (steps_ > 0) return step > 0 && step % steps_ == 0;
  if (interval_.count() > 0) return now - last_ >= interval_;
  return false;
}

std::string CheckpointEvery::to_string() const {
  if (steps_ > 0) return std::to_string(steps_) + " steps";
  if (interval_.count() > 0) return std::to_string(interval_.count()) + " s";
  return "never";
}

}  // namespace dptrain::ckpt
