// The signal flag: SIGUSR1 and SIGTERM set it, a second signal is counted and does not kill.
#include <catch2/catch.hpp>

#include <csignal>

#include "dptrain/ckpt/preemption.hpp"

using namespace dptrain;

TEST_CASE("SIGUSR1 sets the preemption flag and a second SIGTERM is only counted", "[ckpt]") {
  ckpt::install_preemption_handlers();
  ckpt::install_preemption_handlers();  // idempotent
  ckpt::reset_preemption_for_testing();
  CHECK_FALSE(ckpt::preemption_requested());
  REQUIRE(std::raise(SIGUSR1) == 0);
  CHECK(ckpt::preemption_requested());
  CHECK(ckpt::preemption_signal_count() == 1);
  CHECK(ckpt::last_preemption_signal() == SIGUSR1);
  REQUIRE(std::raise(SIGTERM) == 0);  // with the default action this would end the test process
  CHECK(ckpt::preemption_signal_count() == 2);
  CHECK(ckpt::last_preemption_signal() == SIGTERM);
  ckpt::reset_preemption_for_testing();
  CHECK_FALSE(ckpt::preemption_requested());
}
