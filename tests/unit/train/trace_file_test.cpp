// Where --trace puts each rank's file, and which steps it records by default.
#include "dptrain/train/trace_file.hpp"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "dptrain/core/error.hpp"
#include "support/temp_dir.hpp"

using namespace dptrain;
using dptrain::testing::read_text;

TEST_CASE("the default trace window is the 5th to the 24th step of this run", "[train][trace]") {
  const TraceWindow fresh = trace_window("", 0);
  CHECK(fresh.first == 5);
  CHECK(fresh.last == 24);
  const TraceWindow resumed = trace_window("", 1000);  // a resume from the checkpoint of step 1000
  CHECK(resumed.first == 1005);
  CHECK(resumed.last == 1024);
  const TraceWindow given = trace_window("101:110", 1000);  // given: the log's step numbers as they are
  CHECK(given.first == 101);
  CHECK(given.last == 110);
  CHECK_THROWS_AS(trace_window("10:1", 0), Error);
}

TEST_CASE("each rank's trace replaces its file whole, leaving nothing else", "[train][trace]") {
  testing::TempDir dir("dptrain_trace");
  const std::string traces = (dir.path / "nested" / "traces").string();
  prepare_trace_directory(traces);
  prepare_trace_directory(traces);  // a second rank finds it made
  CHECK(std::filesystem::is_directory(traces));
  CHECK(trace_file_path(traces, 3) == traces + "/trace-rank-3.json");
  write_trace_file(traces, 3, "{\"traceEvents\": []}\n");
  write_trace_file(traces, 3, "{\"traceEvents\": [1]}\n");
  CHECK(read_text(trace_file_path(traces, 3)) == "{\"traceEvents\": [1]}\n");
  int files = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(traces)) ++files;
  CHECK(files == 1);  // no temporary left behind
}

TEST_CASE("a trace directory that cannot be one is refused at start-up", "[train][trace]") {
  testing::TempDir dir("dptrain_trace");
  const std::filesystem::path file = dir.path / "a-file";
  std::ofstream(file) << "x";
  CHECK_THROWS_WITH(prepare_trace_directory(file.string()), Catch::Contains("give a directory"));
  CHECK_THROWS_WITH(prepare_trace_directory((file / "below").string()), Catch::Contains("cannot create"));
}
