// A straggler is a rank whose compute time is more than 10% over the median rank's.
#include "dptrain/train/stragglers.hpp"

#include <catch2/catch.hpp>

using namespace dptrain;

TEST_CASE("the median of an odd and an even count", "[train][stragglers]") {
  CHECK(median({}) == 0);
  CHECK(median({3}) == 3);
  CHECK(median({5, 1, 3}) == 3);
  CHECK(median({4, 1, 3, 2}) == 2.5);
}

TEST_CASE("ranks more than 10% over the median are stragglers", "[train][stragglers]") {
  CHECK(find_stragglers({0.010, 0.010, 0.010, 0.0125}) == std::vector<int>{3});  // 25% over
  CHECK(find_stragglers({0.010, 0.0105, 0.010, 0.0109}).empty());                // under 10% over 0.01025
  CHECK(find_stragglers({0.030, 0.010, 0.010, 0.010, 0.031}) == std::vector<int>{0, 4});
  CHECK(find_stragglers({0.5}).empty());                                // one rank has nobody to wait for it
  CHECK(find_stragglers({0.010, 0.020}, 0.10) == std::vector<int>{1});  // the median of two is their mean
  // On short steps the floor decides: +14% of 5.5 ms (0.77 ms) is noise, +1.5 ms is not.
  CHECK(find_stragglers({0.0055, 0.00627, 0.0055, 0.0055}).empty());
  CHECK(find_stragglers({0.0055, 0.0070, 0.0055, 0.0055}) == std::vector<int>{1});
  CHECK(find_stragglers({0.0055, 0.00627, 0.0055, 0.0055}, 0.10, 0.0) == std::vector<int>{1});
}

TEST_CASE("figures below a fraction of the median are the slow ones (preflight)", "[train][stragglers]") {
  CHECK(find_below_median({100, 98, 40, 101}, 0.8) == std::vector<int>{2});  // 40 < 0.8 * 99
  CHECK(find_below_median({100, 98, 80, 101}, 0.8).empty());                 // 80 >= 79.2
  CHECK(find_below_median({100, 50}, 0.8) == std::vector<int>{1});           // the median of two is their mean: 75
  CHECK(find_below_median({100, 70}, 0.8).empty());                          // 70 >= 0.8 * 85
  CHECK(find_below_median({10, 10, 1, 1, 10}, 0.8) == std::vector<int>{2, 3});
  CHECK(find_below_median({42}, 0.8).empty());  // one figure: nothing to compare with
  CHECK(find_below_median({}, 0.8).empty());
  CHECK(find_below_median({5, 5, 5}, 1.0).empty());  // equal is not below
}
