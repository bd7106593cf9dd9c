// The time limit's margin counts the work before the run can next stop: the next step, and the
// evaluation after it at an epoch's end (measured, or guessed before the first one).
#include "dptrain/train/next_stop.hpp"

#include <catch2/catch.hpp>

using namespace dptrain;

TEST_CASE("the work before the next chance to stop includes an epoch end's evaluation", "[train][time_limit]") {
  NextStop next;
  next.step_seconds = 0.5;
  next.evaluation_batches = 400;
  CHECK(seconds_before_next_stop(next) == 0.5);  // a step in the middle of an epoch
  next.evaluates = true;
  CHECK(seconds_before_next_stop(next) == 0.5 + 400 * 0.5);  // before the first evaluation: a safe guess
  next.last_evaluation_seconds = 75;
  CHECK(seconds_before_next_stop(next) == 75.5);  // measured
  next.evaluates = false;
  CHECK(seconds_before_next_stop(next) == 0.5);
}

TEST_CASE("a step ends its epoch when no further global batch fits", "[train][time_limit]") {
  // 10 batches of 64 per epoch (640 samples): the step at 576 is the last.
  CHECK_FALSE(step_ends_epoch(0, 64, 640));
  CHECK_FALSE(step_ends_epoch(512, 64, 640));
  CHECK(step_ends_epoch(576, 64, 640));
  // A resume onto another global batch: the epoch's last step is the one after which less than a
  // batch is left.
  CHECK_FALSE(step_ends_epoch(500, 60, 640));
  CHECK(step_ends_epoch(540, 60, 640));
}
