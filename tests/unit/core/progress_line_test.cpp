#include "dptrain/core/progress_line.hpp"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <iomanip>
#include <sstream>

#include "dptrain/core/error.hpp"

using namespace dptrain;

TEST_CASE("a progress line says how far a phase got, at most once an interval", "[core][progress]") {
  std::ostringstream out;
  out << std::fixed << std::setprecision(3);  // a caller's formatting does not leak into the line
  ProgressLine every(&out, "validation", 200, "images", 0);
  every.update(50);
  every.update(200);
  CHECK(every.lines() == 2);
  CHECK(out.str().rfind("validation: 50 of 200 images (25%), 0 s\nvalidation: 200 of 200 images (100%), 0 s\n", 0) ==
        0);

  std::ostringstream unknown;
  ProgressLine no_total(&unknown, "convert", 0, "files", 0);
  no_total.update(7);
  CHECK(unknown.str() == "convert: 7 files, 0 s\n");

  // A long interval prints nothing in a short phase; restarting it after another line keeps it quiet.
  std::ostringstream quiet;
  ProgressLine hourly(&quiet, "verify", 10, "shards", 3600);
  for (int i = 0; i <= 10; ++i) hourly.update(i);
  hourly.restart_interval();
  hourly.update(10);
  CHECK(hourly.lines() == 0);
  CHECK(quiet.str().empty());

  // No stream (the ranks that print nothing): silent, whatever the interval.
  ProgressLine silent(nullptr, "eval", 10, "images", 0);
  silent.update(5);
  CHECK(silent.lines() == 0);
}

TEST_CASE("DPTRAIN_PROGRESS_SECONDS sets the interval, and a bad value is named", "[core][progress]") {
  const char* saved = std::getenv("DPTRAIN_PROGRESS_SECONDS");
  const std::string before = saved ? saved : "";
  ::unsetenv("DPTRAIN_PROGRESS_SECONDS");
  CHECK(ProgressLine::interval_from_environment() == ProgressLine::kDefaultSeconds);
  ::setenv("DPTRAIN_PROGRESS_SECONDS", "2.5", 1);
  CHECK(ProgressLine::interval_from_environment() == 2.5);
  for (const char* bad : {"-1", "soon", "10s", "nan", "inf"}) {
    ::setenv("DPTRAIN_PROGRESS_SECONDS", bad, 1);
    CHECK_THROWS_WITH(ProgressLine::interval_from_environment(),
                      Catch::Contains("DPTRAIN_PROGRESS_SECONDS must be a number of seconds >= 0"));
  }
  if (saved) {
    ::setenv("DPTRAIN_PROGRESS_SECONDS", before.c_str(), 1);
  } else {
    ::unsetenv("DPTRAIN_PROGRESS_SECONDS");
  }
}
