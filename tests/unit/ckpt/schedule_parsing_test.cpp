// --time-limit, SLURM_JOB_END_TIME and --checkpoint-every, including the errors for bad input.
#include <catch2/catch.hpp>

#include "dptrain/ckpt/checkpoint_every.hpp"
#include "dptrain/ckpt/time_limit.hpp"

using namespace dptrain;
using namespace std::chrono_literals;
using ckpt::WallClock;

TEST_CASE("time limits in units and as Slurm writes them", "[ckpt]") {
  CHECK(ckpt::parse_time_limit("90s") == 90s);
  CHECK(ckpt::parse_time_limit("30m") == 1800s);
  CHECK(ckpt::parse_time_limit("2h") == 7200s);
  CHECK(ckpt::parse_time_limit("1d") == 86400s);
  CHECK(ckpt::parse_time_limit("1-02:00:00") == 93600s);
  CHECK(ckpt::parse_time_limit("02:30:15") == 9015s);
  CHECK(ckpt::parse_time_limit("45") == 2700s);  // minutes, as sbatch --time
  CHECK(ckpt::parse_time_limit("10:30") == 630s);
  CHECK(ckpt::parse_time_limit("2-12") == 216000s);
  CHECK(ckpt::parse_time_limit("1-00:30") == 88200s);
  CHECK(ckpt::parse_time_limit("1.5h") == 5400s);
  for (const char* bad : {"", "abc", "10x", "-5m", "1:2:3:4", "1-2-3", "0", "0s", "0.5s", " 5m", "5m ", "h", "1e999",
                          "1e3m", "0x10", "99999999999d"}) {
    CAPTURE(bad);
    CHECK_THROWS_WITH(ckpt::parse_time_limit(bad),
                      Catch::Contains(std::string("--time-limit '") + bad + "' is not a time limit"));
  }
}

TEST_CASE("the deadline is the earlier of --time-limit and SLURM_JOB_END_TIME", "[ckpt]") {
  const WallClock::time_point start{std::chrono::seconds(1'000'000)};
  CHECK_FALSE(ckpt::TimeLimit::from("", start, std::nullopt).deadline());
  CHECK_FALSE(ckpt::TimeLimit{}.should_stop_now(1000s, start));
  const auto limit = ckpt::TimeLimit::from("1h", start, std::nullopt);
  CHECK(limit.deadline() == start + 1h);
  CHECK(ckpt::TimeLimit::from("1h", start, "1001800").deadline() == start + 30min);
  CHECK(ckpt::TimeLimit::from("10m", start, "1001800").deadline() == start + 10min);
  CHECK(ckpt::TimeLimit::from("", start, "1001800").deadline() == start + 30min);
  CHECK_FALSE(ckpt::TimeLimit::from("", start, "0").deadline());  // Slurm's "no limit"
  CHECK_THROWS_WITH(ckpt::TimeLimit::from("", start, "soon"), Catch::Contains("SLURM_JOB_END_TIME='soon'"));
  // Stop once less than the margin (the next step and its evaluation, twice the last write, plus
  // slack) is left.
  const auto margin = ckpt::stop_margin(20, 0, 60);
  CHECK(margin.count() == 100);
  CHECK_FALSE(limit.should_stop_now(margin, start + 3499s));
  CHECK(limit.should_stop_now(margin, start + 3501s));
  // An epoch's end with 5 minutes of evaluation next: the run stops 5 minutes earlier.
  const auto before_evaluation = ckpt::stop_margin(20, 300, 60);
  CHECK(before_evaluation.count() == 400);
  CHECK(limit.should_stop_now(before_evaluation, start + 3201s));
  CHECK_FALSE(limit.should_stop_now(before_evaluation, start + 3199s));
  CHECK(limit.seconds_left(start + 1h + 5s) == -5);
}

TEST_CASE("checkpoint-every in steps or wall-clock time", "[ckpt]") {
  const WallClock::time_point t0{std::chrono::seconds(5000)};
  for (const char* text : {"500", "500steps", "500step"}) {
    const auto every = ckpt::CheckpointEvery::parse(text, t0);
    CHECK(every.steps() == 500);
    CHECK_FALSE(every.due(0, t0));
    CHECK_FALSE(every.due(499, t0 + 10h));
    CHECK(every.due(500, t0));
    CHECK(every.due(1000, t0));
    CHECK(every.to_string() == "500 steps");
  }
  auto every = ckpt::CheckpointEvery::parse("10m", t0);
  CHECK(every.interval() == 600s);
  CHECK_FALSE(every.due(1, t0 + 599s));
  CHECK(every.due(1, t0 + 600s));
  every.mark_written(t0 + 650s);
  CHECK_FALSE(every.due(2, t0 + 1200s));
  CHECK(every.due(2, t0 + 1250s));
  CHECK(ckpt::CheckpointEvery::parse("30s", t0).interval() == 30s);
  CHECK(ckpt::CheckpointEvery::parse("2h", t0).interval() == 7200s);
  CHECK(ckpt::CheckpointEvery::parse("1.5h", t0).interval() == 5400s);
  CHECK(ckpt::CheckpointEvery::parse("01:30:00", t0).interval() == 5400s);
  CHECK(ckpt::CheckpointEvery::parse("never", t0).never());
  CHECK_FALSE(ckpt::CheckpointEvery::parse("0", t0).due(1000, t0 + 100h));
  for (const char* bad :
       {"", "steps", "-5", "5x", "500 steps", "0s", "0.5s", "1:2:3:4", "2.5", "1000.0", "1e3", "1234567890123"}) {
    CAPTURE(bad);
    CHECK_THROWS_WITH(ckpt::CheckpointEvery::parse(bad, t0),
                      Catch::Contains(std::string("--checkpoint-every '") + bad + "' is not a checkpoint interval"));
  }
}
