#pragma once
// Progress of a long conversion on stderr. On a terminal: one line redrawn in place (bar, count,
// rate, ETA) at most a few times a second. Otherwise (a Slurm log, a pipe): a plain line about every
// 5%, because a log full of carriage returns is unreadable, and at least one every ten seconds
// (DPTRAIN_PROGRESS_SECONDS, as for training's progress lines: core/progress_line.hpp), since 5% of
// ImageNet takes minutes.
#include <chrono>
#include <cstdint>
#include <mutex>
#include <ostream>
#include <string>

namespace dptrain::datasets {

class Progress {
 public:
  // `enabled` false makes every call a no-op (tests, ranks other than 0). `terminal` defaults to
  // whether stderr is a terminal.
  Progress(std::string what, std::int64_t total, bool enabled);
  Progress(std::string what, std::int64_t total, bool enabled, bool terminal, std::ostream& out);
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  ~Progress();

  // Thread-safe: `count` more items are done.
  void add(std::int64_t count);
  // Prints the final line (once).
  void finish();

 private:
  void print(bool final_line);

  std::string what_;
  std::int64_t total_ = 0, done_ = 0;
  bool enabled_ = false, terminal_ = false, finished_ = false;
  std::ostream* out_;
  int next_percent_ = 5;  // the next plain line, when not on a terminal
  double interval_;       // seconds: the longest wait between plain lines
  std::chrono::steady_clock::time_point start_, last_print_;
  std::mutex mutex_;
};

// "1h02m", "3m07s", "12s"
std::string format_duration(double seconds);

}  // namespace dptrain::datasets
