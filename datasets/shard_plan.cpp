#include "datasets/shard_plan.hpp"

#include <map>
#include <utility>

#include "dptrain/core/error.hpp"
#include "dptrain/core/philox.hpp"

namespace dptrain::datasets {
namespace {
// Fisher-Yates with the generator's words drawn in sequence from `*draw`. The multiply-shift maps a
// 32-bit word onto [0, i] with a bias below i / 2^32, far below anything a shard order could show.
void shuffle(std::vector<std::int64_t>& items, const CounterRng& rng, std::uint64_t* draw) {
  for (std::size_t i = items.size(); i > 1; --i) {
    const auto j = static_cast<std::size_t>((std::uint64_t{rng.bits((*draw)++)} * i) >> 32);
    std::swap(items[i - 1], items[j]);
  }
}
}  // namespace

std::vector<std::vector<std::int64_t>> plan_shards(const std::vector<std::int32_t>& labels, int shards,
                                                   std::uint64_t seed, std::uint64_t stream) {
  DPTRAIN_CHECK(shards >= 1 && static_cast<std::size_t>(shards) <= labels.size(), "cannot split ", labels.size(),
                " samples into ", shards, " non-empty shards");
  std::map<std::int32_t, std::vector<std::int64_t>> by_class;
  for (std::size_t i = 0; i < labels.size(); ++i) by_class[labels[i]].push_back(static_cast<std::int64_t>(i));

  const CounterRng rng(seed, stream);
  std::uint64_t draw = 0;
  std::vector<std::vector<std::int64_t>> plan(static_cast<std::size_t>(shards));
  std::size_t dealt = 0;
  for (auto& [label, members] : by_class) {
    shuffle(members, rng, &draw);
    for (const std::int64_t sample : members) plan[dealt++ % plan.size()].push_back(sample);
  }
  for (auto& shard : plan) shuffle(shard, rng, &draw);
  return plan;
}

}  // namespace dptrain::datasets
