#include "dptrain/data/sampler.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <numeric>
#include <thread>

#include "dptrain/core/error.hpp"

using namespace dptrain;
using namespace dptrain::data;

namespace {
// Every sample rank r of N reads in one epoch, in the order the ranks' slices concatenate
// (step by step, rank by rank): the order one rank with the global batch would read.
std::vector<std::int64_t> epoch_in_rank_order(const Sampler& sampler, std::int64_t epoch, int batch, int world,
                                              bool drop_last) {
  const std::int64_t global = static_cast<std::int64_t>(batch) * world;
  const std::int64_t steps = Sampler::steps_per_epoch(sampler.size(), global, drop_last);
  std::vector<std::int64_t> read;
  for (std::int64_t step = 0; step < steps; ++step) {
    for (int rank = 0; rank < world; ++rank) {
      const auto slice = sampler.rank_slice(epoch, step * global, batch, rank);
      CHECK(slice.size() <= static_cast<std::size_t>(batch));
      read.insert(read.end(), slice.begin(), slice.end());
    }
  }
  return read;
}

bool is_permutation_of_range(std::vector<std::int64_t> v, std::int64_t n) {
  std::sort(v.begin(), v.end());
  std::vector<std::int64_t> expected(static_cast<std::size_t>(n));
  std::iota(expected.begin(), expected.end(), std::int64_t{0});
  return v == expected;
}
}  // namespace

TEST_CASE("steps_per_epoch drops or keeps the last incomplete global batch", "[data][sampler]") {
  CHECK(Sampler::steps_per_epoch(103, 8, true) == 12);
  CHECK(Sampler::steps_per_epoch(103, 8, false) == 13);
  CHECK(Sampler::steps_per_epoch(96, 8, true) == 12);
  CHECK(Sampler::steps_per_epoch(96, 8, false) == 12);
  CHECK(Sampler::steps_per_epoch(5, 8, true) == 0);
  CHECK(Sampler::steps_per_epoch(5, 8, false) == 1);
  CHECK_THROWS_AS(Sampler::steps_per_epoch(5, 0, true), Error);
}

TEST_CASE("each epoch is a permutation, and shuffle off is the stored order", "[data][sampler]") {
  for (std::int64_t n : {0, 1, 2, 3, 17, 1000}) {
    const Sampler shuffled(n, 7, true), ordered(n, 7, false);
    for (std::int64_t epoch : {0, 1, 5}) {
      std::vector<std::int64_t> order, identity;
      for (std::int64_t p = 0; p < n; ++p) {
        order.push_back(shuffled.sample_at(epoch, p));
        identity.push_back(ordered.sample_at(epoch, p));
      }
      CHECK(is_permutation_of_range(order, n));
      std::vector<std::int64_t> expected(static_cast<std::size_t>(n));
      std::iota(expected.begin(), expected.end(), std::int64_t{0});
      CHECK(identity == expected);
    }
  }
  const Sampler s(10, 1, true);
  CHECK_THROWS_AS(s.sample_at(0, 10), Error);
  CHECK_THROWS_AS(s.sample_at(0, -1), Error);
}

TEST_CASE("every rank's slices together read each sample once per epoch, for any world size", "[data][sampler]") {
  const std::int64_t n = 103;  // prime: no world size divides it, so every epoch has a tail
  const int batch = 4;
  const Sampler sampler(n, 2024, true);
  for (int world : {1, 2, 3, 4}) {
    INFO("world size " << world);
    const std::int64_t global = static_cast<std::int64_t>(batch) * world;
    for (std::int64_t epoch : {0, 3}) {
      // Kept tail: every sample exactly once.
      const auto all = epoch_in_rank_order(sampler, epoch, batch, world, false);
      CHECK(all.size() == static_cast<std::size_t>(n));
      CHECK(is_permutation_of_range(all, n));
      // Dropped tail: the first steps*G positions of the epoch, each once, and nothing else.
      const auto dropped = epoch_in_rank_order(sampler, epoch, batch, world, true);
      const std::int64_t kept = (n / global) * global;
      CHECK(dropped.size() == static_cast<std::size_t>(kept));
      CHECK(n - kept < global);
      for (std::int64_t p = 0; p < kept; ++p)
        CHECK(dropped[static_cast<std::size_t>(p)] == sampler.sample_at(epoch, p));
      auto unique = dropped;
      std::sort(unique.begin(), unique.end());
      CHECK(std::adjacent_find(unique.begin(), unique.end()) == unique.end());
    }
  }
}

TEST_CASE("the order read does not depend on the world size", "[data][sampler]") {
  const std::int64_t n = 96;
  const Sampler sampler(n, 5, true);
  std::vector<std::int64_t> one_rank;
  for (std::int64_t p = 0; p < n; ++p) one_rank.push_back(sampler.sample_at(2, p));
  for (int world : {1, 2, 3, 4}) {
    INFO("world size " << world);
    // 96 = 24 * 4 = 32 * 3: with batch 8 every world size reads the whole epoch.
    CHECK(epoch_in_rank_order(sampler, 2, 8, world, true) == one_rank);
  }
  // Rank r's slice is the r-th B-block of the global batch (B = 3, N = 4, step at position 12).
  for (int rank = 0; rank < 4; ++rank) {
    const auto slice = sampler.rank_slice(2, 12, 3, rank);
    REQUIRE(slice.size() == 3u);
    for (int j = 0; j < 3; ++j)
      CHECK(slice[static_cast<std::size_t>(j)] == one_rank[static_cast<std::size_t>(12 + rank * 3 + j)]);
  }
  // At the end of the epoch a slice is cut short, and a rank past the end gets nothing.
  CHECK(sampler.rank_slice(2, 90, 4, 1).size() == 2u);
  CHECK(sampler.rank_slice(2, 90, 4, 2).empty());
}

TEST_CASE("the permutation depends on the seed and the epoch only", "[data][sampler]") {
  const std::int64_t n = 500;
  auto order = [&](std::uint64_t seed, std::int64_t epoch) {
    const Sampler s(n, seed, true);
    std::vector<std::int64_t> v;
    for (std::int64_t p = 0; p < n; ++p) v.push_back(s.sample_at(epoch, p));
    return v;
  };
  const auto e0 = order(42, 0);
  CHECK(order(42, 0) == e0);  // a fresh sampler with the same seed: the same order
  CHECK(order(42, 1) != e0);
  CHECK(order(42, 2) != order(42, 1));
  CHECK(order(43, 0) != e0);
  std::vector<std::int64_t> identity(static_cast<std::size_t>(n));
  std::iota(identity.begin(), identity.end(), std::int64_t{0});
  CHECK(e0 != identity);
  // The cache holds two epochs; going back to an evicted one recomputes the same order.
  const Sampler s(n, 42, true);
  const std::int64_t first = s.sample_at(0, 0);
  (void)s.sample_at(1, 0);
  (void)s.sample_at(2, 0);
  CHECK(s.sample_at(0, 0) == first);
  CHECK(*s.order(0) == e0);
}

TEST_CASE("Fisher-Yates draws every permutation of four samples about equally often", "[data][sampler]") {
  // 24 permutations over 4800 epochs: 200 each on average, a standard deviation of about 14.
  const Sampler s(4, 9, true);
  std::map<std::vector<std::int64_t>, int> counts;
  for (std::int64_t epoch = 0; epoch < 4800; ++epoch) counts[*s.order(epoch)]++;
  CHECK(counts.size() == 24u);
  for (const auto& [permutation, count] : counts) {
    CHECK(count > 140);
    CHECK(count < 260);
  }
}

TEST_CASE("the sampler gives the same answers to concurrent readers", "[data][sampler]") {
  const std::int64_t n = 2000;
  const Sampler reference(n, 3, true);
  std::vector<std::vector<std::int64_t>> expected(4);
  for (std::int64_t epoch = 0; epoch < 4; ++epoch) expected[static_cast<std::size_t>(epoch)] = *reference.order(epoch);
  const Sampler shared(n, 3, true);
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      // Threads walk the epochs in different orders so the two-epoch cache keeps being replaced.
      for (int round = 0; round < 20; ++round) {
        const std::int64_t epoch = (t + round) % 4;
        for (std::int64_t p = 0; p < n; p += 97) {
          if (shared.sample_at(epoch, p) != expected[static_cast<std::size_t>(epoch)][static_cast<std::size_t>(p)]) {
            ++mismatches[static_cast<std::size_t>(t)];
          }
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(mismatches == std::vector<int>{0, 0, 0, 0});
}
