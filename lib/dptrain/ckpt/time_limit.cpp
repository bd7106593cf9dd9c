#include "dptrain/ckpt/time_limit.hpp"

#include <cstdlib>

#include "dptrain/core/duration.hpp"
#include "dptrain/core/error.hpp"

namespace dptrain::ckpt {

std::chrono::seconds parse_time_limit(const std::string& text) {
  const std::optional<double> seconds = duration_seconds(text, BareNumber::minutes);  // minutes, as sbatch --time
  DPTRAIN_CHECK(seconds && *seconds >= 1, "--time-limit '", text,
                "' is not a time limit; use 90s, 30m, 2h, HH:MM:SS, MM:SS, minutes, or D-HH:MM:SS as Slurm writes it");
  return std::chrono::seconds(static_cast<std::int64_t>(*seconds));
}

TimeLimit TimeLimit::from(const std::string& time_limit, WallClock::time_point start,
                          const std::optional<std::string>& slurm_end_time) {
  TimeLimit limit;
  if (!time_limit.empty()) limit.deadline_ = start + parse_time_limit(time_limit);
  if (slurm_end_time && !slurm_end_time->empty() && *slurm_end_time != "0") {
    const std::optional<std::int64_t> epoch = parse_count(*slurm_end_time);
    DPTRAIN_CHECK(epoch, "SLURM_JOB_END_TIME='", *slurm_end_time, "' is not a time in seconds since the epoch");
    const WallClock::time_point end{std::chrono::seconds(*epoch)};
    if (!limit.deadline_ || end < *limit.deadline_) limit.deadline_ = end;
  }
  return limit;
}

TimeLimit TimeLimit::from_environment(const std::string& time_limit) {
  const char* end = std::getenv("SLURM_JOB_END_TIME");
  return from(time_limit, WallClock::now(), end ? std::optional<std::string>(end) : std::nullopt);
}

double TimeLimit::seconds_left(WallClock::time_point now) const {
  if (!deadline_) return std::numeric_limits<double>::max();
  return std::chrono::duration<double>(*deadline_ - now).count();
}

bool TimeLimit::should_stop_now(std::chrono::duration<double> margin, WallClock::time_point now) const {
  return deadline_ && seconds_left(now) < margin.count();
}

std::chrono::duration<double> stop_margin(double last_write_seconds, double next_seconds, double slack_seconds) {
  return std::chrono::duration<double>(next_seconds + 2 * last_write_seconds + slack_seconds);
}

}  // namespace dptrain::ckpt
