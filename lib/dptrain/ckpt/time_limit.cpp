#include "dptrain/ckpt/time_limit.hpp"

#include <cstdlib>
#include <limits>
#include <vector>

#include "dptrain/ckpt/duration.hpp"
#include "dptrain/core/error.hpp"

namespace dptrain::ckpt {
namespace {
std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::size_t begin = 0;
  for (;;) {
    const std::size_t end = text.find(separator, begin);
    parts.push_back(text.substr(begin, end - begin));
    if (end == std::string::npos) return parts;
    begin = end + 1;
  }
}

// Slurm's forms; nullopt when `text` is not one of them.
std::optional<std::int64_t> slurm_seconds(const std::string& text) {
  std::int64_t days = 0;
  std::string clock = text;
  const bool has_days = text.find('-') != std::string::npos;
  if (has_days) {
    const auto parts = split(text, '-');
    if (parts.size() != 2) return std::nullopt;
    const auto d = parse_count(parts[0]);
    if (!d) return std::nullopt;
    days = *d;
    clock = parts[1];
  }
  std::vector<std::int64_t> fields;
  for (const std::string& part : split(clock, ':')) {
    const auto v = parse_count(part);
    if (!v) return std::nullopt;
    fields.push_back(*v);
  }
  if (fields.size() > 3) return std::nullopt;
  std::int64_t seconds = 0;
  if (has_days) {  // D-HH, D-HH:MM, D-HH:MM:SS
    const std::int64_t units[3] = {3600, 60, 1};
    for (std::size_t i = 0; i < fields.size(); ++i) seconds += fields[i] * units[i];
  } else if (fields.size() == 1) {  // MM
    seconds = fields[0] * 60;
  } else if (fields.size() == 2) {  // MM:SS
    seconds = fields[0] * 60 + fields[1];
  } else {  // HH:MM:SS
    seconds = fields[0] * 3600 + fields[1] * 60 + fields[2];
  }
  return days * 86400 + seconds;
}
}  // namespace

std::chrono::seconds parse_time_limit(const std::string& text) {
  if (const auto d = parse_suffixed_duration(text)) return *d;
  const std::optional<std::int64_t> seconds = slurm_seconds(text);
  DPTRAIN_CHECK(seconds && *seconds > 0, "--time-limit '", text,
                "' is not a time limit; use 90s, 30m, 2h, HH:MM:SS, MM:SS, minutes, or D-HH:MM:SS as Slurm writes it");
  return std::chrono::seconds(*seconds);
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

std::chrono::duration<double> stop_margin(double last_write_seconds, double slack_seconds) {
  return std::chrono::duration<double>(2 * last_write_seconds + slack_seconds);
}

}  // namespace dptrain::ckpt
