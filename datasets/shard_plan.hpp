#pragma once
// Which sample goes to which shard. Shuffled once, with Philox under a fixed seed, so a conversion is
// reproducible on any number of ranks and threads, and stratified, so every shard holds every class
// that has at least as many samples as there are shards. A plain shuffle would not do that:
// ImageNet's 1000 classes in 1024 shards of ~1250 images leave each shard ~290 classes short.
#include <cstdint>
#include <vector>

namespace dptrain::datasets {

// `labels[i]` is sample i's class. Returns, per shard, the sample indices it holds, in the order it
// stores them. Shard sizes differ by at most one. Class c's samples are shuffled, then all classes are
// dealt round-robin (continuing from one class to the next), then each shard's list is shuffled.
std::vector<std::vector<std::int64_t>> plan_shards(const std::vector<std::int32_t>& labels, int shards,
                                                   std::uint64_t seed, std::uint64_t stream);

}  // namespace dptrain::datasets
