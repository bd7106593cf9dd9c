#pragma once
// How often to checkpoint: every N steps ("500", "500steps") or every interval of wall-clock time
// ("30s", "10m", "2h"), or "never" ("0"). Time-based checkpoints suit preemptible jobs whose step time
// varies; step-based ones give the same files on every run.
#include <cstdint>
#include <string>

#include "dptrain/ckpt/time_limit.hpp"

namespace dptrain::ckpt {

class CheckpointEvery {
 public:
  // Throws an Error quoting `text` and the accepted forms.
  static CheckpointEvery parse(const std::string& text, WallClock::time_point start = WallClock::now());

  // Whether a checkpoint is due after `step` completed steps: a multiple of N, or `interval` passed
  // since the last write (or the start).
  bool due(std::int64_t step, WallClock::time_point now = WallClock::now()) const;
  // Restarts the interval after a checkpoint was written (any checkpoint, a preemption's too).
  void mark_written(WallClock::time_point now = WallClock::now()) { last_ = now; }

  bool never() const { return steps_ == 0 && interval_.count() == 0; }
  std::int64_t steps() const { return steps_; }                // 0 unless step-based
  std::chrono::seconds interval() const { return interval_; }  // 0 unless time-based
  std::string to_string() const;                               // "500 steps", "600 s", "never"

 private:
  std::int64_t steps_ = 0;
  std::chrono::seconds interval_{0};
  WallClock::time_point last_;
};

}  // namespace dptrain::ckpt
