#include "datasets/progress.hpp"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <iostream>

#include "dptrain/core/progress_line.hpp"

namespace dptrain::datasets {

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const auto s = static_cast<long long>(std::llround(seconds));
  char text[48];
  if (s >= 3600) {
    std::snprintf(text, sizeof text, "%lldh%02lldm", s / 3600, s / 60 % 60);
  } else if (s >= 60) {
    std::snprintf(text, sizeof text, "%lldm%02llds", s / 60, s % 60);
  } else {
    std::snprintf(text, sizeof text, "%llds", s);
  }
  return text;
}

Progress::Progress(std::string what, std::int64_t total, bool enabled)
    : Progress(std::move(what), total, enabled, isatty(STDERR_FILENO) == 1, std::cerr) {}

Progress::Progress(std::string what, std::int64_t total, bool enabled, bool terminal, std::ostream& out)
    : what_(std::move(what)),
      total_(total),
      enabled_(enabled && total > 0),
      terminal_(terminal),
      out_(&out),
      interval_(ProgressLine::interval_from_environment()),
      start_(std::chrono::steady_clock::now()),
      last_print_(start_) {}

Progress::~Progress() {
  // A destructor must not throw; an exception on the way out already reports what went wrong.
  try {
    if (!std::uncaught_exceptions()) finish();
  } catch (...) {
  }
}

void Progress::add(std::int64_t count) {
  if (!enabled_) return;
  const std::lock_guard lock(mutex_);
  done_ += count;
  const auto now = std::chrono::steady_clock::now();
  if (terminal_) {
    if (now - last_print_ >= std::chrono::milliseconds(200)) print(false);
  } else if (done_ < total_ && (done_ * 100 >= static_cast<std::int64_t>(next_percent_) * total_ ||
                                std::chrono::duration<double>(now - last_print_).count() >= interval_)) {
    print(false);
    while (next_percent_ <= 100 && done_ * 100 >= static_cast<std::int64_t>(next_percent_) * total_) next_percent_ += 5;
  }
}

void Progress::finish() {
  if (!enabled_) return;
  const std::lock_guard lock(mutex_);
  if (finished_) return;
  finished_ = true;
  print(true);
}

void Progress::print(bool final_line) {
  last_print_ = std::chrono::steady_clock::now();
  const double elapsed = std::chrono::duration<double>(last_print_ - start_).count();
  const double rate = elapsed > 0 ? static_cast<double>(done_) / elapsed : 0.0;
  const double fraction = std::min(1.0, static_cast<double>(done_) / static_cast<double>(total_));
  char numbers[160];
  if (final_line) {
    std::snprintf(numbers, sizeof numbers, "%lld/%lld in %s (%.0f/s)", static_cast<long long>(done_),
                  static_cast<long long>(total_), format_duration(elapsed).c_str(), rate);
  } else {
    const double eta = rate > 0 ? static_cast<double>(total_ - done_) / rate : NAN;
    std::snprintf(numbers, sizeof numbers, "%3.0f%% %lld/%lld, %.0f/s, ETA %s", 100.0 * fraction,
                  static_cast<long long>(done_), static_cast<long long>(total_), rate, format_duration(eta).c_str());
  }
  if (terminal_) {
    constexpr int kWidth = 30;
    const int filled = static_cast<int>(fraction * kWidth);
    std::string bar(static_cast<std::size_t>(filled), '=');
    if (filled < kWidth) bar += '>' + std::string(static_cast<std::size_t>(kWidth - filled - 1), ' ');
    // \33[K clears what a longer previous line left behind.
    *out_ << '\r' << what_ << " [" << bar << "] " << numbers << "\33[K" << (final_line ? "\n" : "") << std::flush;
  } else {
    *out_ << what_ << ": " << numbers << '\n' << std::flush;
  }
}

}  // namespace dptrain::datasets
