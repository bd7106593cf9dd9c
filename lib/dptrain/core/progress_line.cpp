#include "dptrain/core/progress_line.hpp"

#include <cmath>
#include <cstdlib>
#include <sstream>

#include "dptrain/core/error.hpp"

namespace dptrain {

ProgressLine::ProgressLine(std::ostream* out, std::string what, std::int64_t total, std::string unit)
    : ProgressLine(out, std::move(what), total, std::move(unit), interval_from_environment()) {}

ProgressLine::ProgressLine(std::ostream* out, std::string what, std::int64_t total, std::string unit,
                           double interval_seconds)
    : out_(out),
      what_(std::move(what)),
      unit_(std::move(unit)),
      total_(total),
      interval_(interval_seconds),
      start_(clock::now()),
      last_(start_) {}

void ProgressLine::update(std::int64_t done) {
  if (!out_) return;
  const clock::time_point now = clock::now();
  if (std::chrono::duration<double>(now - last_).count() < interval_) return;
  last_ = now;
  ++lines_;
  // Formatted apart: the caller's stream keeps whatever precision and flags it had.
  std::ostringstream line;
  line << what_ << ": " << done;
  if (total_ > 0) line << " of " << total_;
  line << " " << unit_;
  if (total_ > 0)
    line << " (" << static_cast<int>(100.0 * static_cast<double>(done) / static_cast<double>(total_)) << "%)";
  line << ", " << static_cast<long long>(std::chrono::duration<double>(now - start_).count()) << " s\n";
  *out_ << line.str() << std::flush;
}

double ProgressLine::interval_from_environment() {
  const char* text = std::getenv("DPTRAIN_PROGRESS_SECONDS");
  if (!text || !*text) return kDefaultSeconds;
  char* end = nullptr;
  const double seconds = std::strtod(text, &end);
  DPTRAIN_CHECK(end && *end == '\0' && std::isfinite(seconds) && seconds >= 0,
                "DPTRAIN_PROGRESS_SECONDS must be a number of seconds >= 0, not '", text, "'");
  return seconds;
}

}  // namespace dptrain
