#pragma once
// A line at least every ten seconds while a long phase runs (validation after an epoch, `dptrain
// eval`, `dptrain data verify`), so that a user watching a terminal or a batch log sees it is alive
// and how far it got: "validation: 3200 of 10000 images (32%), 10 s". Printed by one rank only (the
// others pass no stream), so it needs no agreement between ranks. DPTRAIN_PROGRESS_SECONDS sets
// another interval (0: a line at every update, as the tests use).
#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>

namespace dptrain {

class ProgressLine {
 public:
  static constexpr double kDefaultSeconds = 10;

  // `out` null: silent. `unit` names what is counted ("images", "shards"); `total` <= 0: unknown.
  ProgressLine(std::ostream* out, std::string what, std::int64_t total, std::string unit);
  ProgressLine(std::ostream* out, std::string what, std::int64_t total, std::string unit, double interval_seconds);

  // `done` of the total so far: a line when the interval has passed since the start or the last line.
  void update(std::int64_t done);
  // Another line (a step report) has just said how far it got: the interval starts again from now.
  void restart_interval() { last_ = clock::now(); }
  int lines() const { return lines_; }

  // DPTRAIN_PROGRESS_SECONDS, or kDefaultSeconds when it is unset; a value that is not a number >= 0
  // is an Error naming it.
  static double interval_from_environment();

 private:
  using clock = std::chrono::steady_clock;
  std::ostream* out_;
  std::string what_, unit_;
  std::int64_t total_;
  double interval_;
  clock::time_point start_, last_;
  int lines_ = 0;
};

}  // namespace dptrain
