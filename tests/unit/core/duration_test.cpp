#include "dptrain/core/duration.hpp"

#include <catch2/catch.hpp>

#include "dptrain/core/error.hpp"

using dptrain::parse_duration_seconds;

TEST_CASE("durations in the forms users and Slurm write them") {
  CHECK(parse_duration_seconds("300", "--x") == 300);
  CHECK(parse_duration_seconds("45s", "--x") == 45);
  CHECK(parse_duration_seconds("5m", "--x") == 300);
  CHECK(parse_duration_seconds("1.5h", "--x") == 5400);
  CHECK(parse_duration_seconds("2d", "--x") == 172800);
  CHECK(parse_duration_seconds("01:30:00", "--x") == 5400);
  CHECK(parse_duration_seconds("10:30", "--x") == 630);
  CHECK(parse_duration_seconds("1-02:00:00", "--x") == 93600);
  CHECK(parse_duration_seconds("2-12", "--x") == 216000);    // Slurm's D-HH
  CHECK(parse_duration_seconds("1-00:30", "--x") == 88200);  // and D-HH:MM
}

TEST_CASE("a bare number is seconds, or minutes where Slurm's --time says so") {
  CHECK(dptrain::duration_seconds("45") == 45);
  CHECK(dptrain::duration_seconds("45", dptrain::BareNumber::minutes) == 2700);
  CHECK(dptrain::duration_seconds("45s", dptrain::BareNumber::minutes) == 45);
  CHECK(dptrain::duration_seconds("10:30", dptrain::BareNumber::minutes) == 630);
  CHECK_FALSE(dptrain::duration_seconds("5x"));
  CHECK_FALSE(dptrain::duration_seconds("1-2-3"));
  CHECK(dptrain::parse_count("000123") == 123);
  CHECK_FALSE(dptrain::parse_count("1234567890123"));  // 13 digits
  CHECK_FALSE(dptrain::parse_count("+5"));
}

TEST_CASE("a malformed duration names the flag and the text") {
  for (const char* bad : {"", "m", "5x", "-5", "1:2:3:4", "a:10", "5 m", "1-2-3", "5:", ".", "1e3", "inf", "1.2.3",
                          "0x10", "99999999999d"}) {
    INFO(bad);
    CHECK_THROWS_WITH(parse_duration_seconds(bad, "--stall-timeout"),
                      Catch::Contains("--stall-timeout '" + std::string(bad) + "' is not a duration"));
  }
}
