#include "dptrain/optim/schedule.hpp"

#include <catch2/catch.hpp>
#include <cmath>

#include "dptrain/core/error.hpp"

using namespace dptrain;

TEST_CASE("the base rate follows the linear scaling rule", "[optim][schedule]") {
  ScheduleConfig c;
  c.kind = ScheduleKind::constant;
  c.lr_per_256 = 0.1;
  c.global_batch = 1024;
  CHECK(LearningRateSchedule(c).base() == Approx(0.4));
  c.global_batch = 32;
  CHECK(LearningRateSchedule(c).at(1000) == Approx(0.0125));
}

TEST_CASE("step schedule with linear warm-up", "[optim][schedule]") {
  ScheduleConfig c;
  c.kind = ScheduleKind::step;
  c.lr_per_256 = 0.1;
  c.global_batch = 256;
  c.warmup_steps = 10;
  c.milestones = {30, 60};
  const LearningRateSchedule s(c);
  CHECK(s.at(0) == Approx(0.0));
  CHECK(s.at(5) == Approx(0.05));
  CHECK(s.at(10) == Approx(0.1));
  CHECK(s.at(29) == Approx(0.1));
  CHECK(s.at(30) == Approx(0.01));
  CHECK(s.at(60) == Approx(0.001));
}

TEST_CASE("poly and cosine decay to the final rate at the last step", "[optim][schedule]") {
  ScheduleConfig c;
  c.lr_per_256 = 0.2;
  c.global_batch = 256;
  c.total_steps = 110;
  c.warmup_steps = 10;
  c.kind = ScheduleKind::poly;
  c.poly_power = 2.0;
  const LearningRateSchedule poly(c);
  CHECK(poly.at(10) == Approx(0.2));
  CHECK(poly.at(60) == Approx(0.2 * 0.25));  // (1 - 0.5)^2
  CHECK(poly.at(110) == Approx(0.0).margin(1e-12));
  c.kind = ScheduleKind::cosine;
  c.final_lr = 0.002;
  const LearningRateSchedule cosine(c);
  CHECK(cosine.at(10) == Approx(0.2));
  CHECK(cosine.at(60) == Approx(0.002 + 0.198 * 0.5));
  CHECK(cosine.at(110) == Approx(0.002));
  CHECK(cosine.at(500) == Approx(0.002));
}

TEST_CASE("bad schedules are refused", "[optim][schedule]") {
  CHECK_THROWS_WITH(parse_schedule("linear"), Catch::Contains("unknown learning-rate schedule 'linear'"));
  ScheduleConfig c;
  c.kind = ScheduleKind::cosine;
  c.total_steps = 5;
  c.warmup_steps = 5;
  CHECK_THROWS_WITH(LearningRateSchedule(c), Catch::Contains("not 5 in all and 5 of warm-up"));
  c.kind = ScheduleKind::step;
  c.milestones = {50, 20};
  CHECK_THROWS_WITH(LearningRateSchedule(c), Catch::Contains("increasing order"));
}
