#pragma once
// When a job must stop: its wall-clock deadline from `--time-limit` (counted from the start of the
// run) and from Slurm's SLURM_JOB_END_TIME (epoch seconds), the earlier of the two. The training loop
// asks should_stop_now(margin) between steps, with a margin large enough to write one more checkpoint
// and exit before Slurm kills the job (stop_margin: the work until the next chance to stop, twice
// the last write, plus slack).
#include <chrono>
#include <optional>
#include <string>

namespace dptrain::ckpt {

using WallClock = std::chrono::system_clock;

// A time limit as Slurm writes it ("MM", "MM:SS", "HH:MM:SS", "D-HH", "D-HH:MM", "D-HH:MM:SS"; a bare
// number is minutes, as in `sbatch --time`) or with a unit ("90s", "30m", "2h", "1d"). Throws an Error
// quoting the text and the accepted forms.
std::chrono::seconds parse_time_limit(const std::string& text);

class TimeLimit {
 public:
  TimeLimit() = default;  // no deadline
  // `time_limit`: the --time-limit text ("" for none), counted from `start`. `slurm_end_time`: the
  // value of SLURM_JOB_END_TIME (nullopt when unset; "0" or empty, Slurm's "unlimited", is ignored).
  static TimeLimit from(const std::string& time_limit, WallClock::time_point start,
                        const std::optional<std::string>& slurm_end_time);
  // The same, reading SLURM_JOB_END_TIME from the environment and starting now.
  static TimeLimit from_environment(const std::string& time_limit);

  std::optional<WallClock::time_point> deadline() const { return deadline_; }
  // Seconds until the deadline (negative once past); a very large number without a deadline.
  double seconds_left(WallClock::time_point now = WallClock::now()) const;
  // Whether less than `margin` is left: time to write the last checkpoint and stop.
  bool should_stop_now(std::chrono::duration<double> margin, WallClock::time_point now = WallClock::now()) const;

 private:
  std::optional<WallClock::time_point> deadline_;
};

// The margin to stop with after a step: `next_seconds`, the work the run does before it can next stop
// (the next step, and the evaluation after it when that step ends an epoch), twice the duration of
// the last checkpoint write (the next may be slower: a busy file system), plus `slack` for leaving
// the loop and exiting.
std::chrono::duration<double> stop_margin(double last_write_seconds, double next_seconds, double slack_seconds = 60);

}  // namespace dptrain::ckpt
