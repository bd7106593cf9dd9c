#include "dptrain/data/sampler.hpp"

#include <algorithm>
#include <numeric>

#include "dptrain/core/error.hpp"
#include "dptrain/core/philox.hpp"

namespace dptrain::data {
namespace {
// The high 64 bits of a 64x64-bit product, portably (no __int128 under -Wpedantic).
std::uint64_t mulhi64(std::uint64_t a, std::uint64_t b) {
  const std::uint64_t a_lo = a & 0xffffffffu, a_hi = a >> 32, b_lo = b & 0xffffffffu, b_hi = b >> 32;
  const std::uint64_t lo_lo = a_lo * b_lo, hi_lo = a_hi * b_lo, lo_hi = a_lo * b_hi, hi_hi = a_hi * b_hi;
  const std::uint64_t cross = (lo_lo >> 32) + (hi_lo & 0xffffffffu) + lo_hi;
  return hi_hi + (hi_lo >> 32) + (cross >> 32);
}

// The Philox stream of one epoch's shuffle. Mixed (splitmix64's finaliser) so that neighbouring epochs
// get unrelated streams and the shuffle never shares a stream with another user of the seed.
std::uint64_t shuffle_stream(std::int64_t epoch) {
  std::uint64_t z = stream_id("data/shuffle") + static_cast<std::uint64_t>(epoch) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
}  // namespace

Sampler::Sampler(std::int64_t size, std::uint64_t seed, bool shuffle) : size_(size), seed_(seed), shuffle_(shuffle) {
  DPTRAIN_CHECK(size >= 0, "a sampler needs a non-negative dataset size, not ", size);
}

std::shared_ptr<const std::vector<std::int64_t>> Sampler::permutation(std::int64_t epoch) const {
  auto order = std::make_shared<std::vector<std::int64_t>>(static_cast<std::size_t>(size_));
  std::iota(order->begin(), order->end(), std::int64_t{0});
  if (!shuffle_) return order;
  // Fisher-Yates from the top: swap i with a uniform j in [0, i]. Draw i uses the two first words of
  // Philox block i, so the permutation is a pure function of (seed, epoch). 64 random bits scaled by a
  // multiply-high keep the bias below 2^-40 for any real dataset.
  const CounterRng rng(seed_, shuffle_stream(epoch));
  for (std::int64_t i = size_ - 1; i > 0; --i) {
    const PhiloxCounter words = rng.block(static_cast<std::uint64_t>(i));
    const std::uint64_t x = (static_cast<std::uint64_t>(words[0]) << 32) | words[1];
    const auto j = static_cast<std::int64_t>(mulhi64(x, static_cast<std::uint64_t>(i) + 1));
    std::swap((*order)[static_cast<std::size_t>(i)], (*order)[static_cast<std::size_t>(j)]);
  }
  return order;
}

std::shared_ptr<const std::vector<std::int64_t>> Sampler::order(std::int64_t epoch) const {
  DPTRAIN_CHECK(epoch >= 0, "epoch ", epoch, " is negative");
  std::lock_guard lock(mutex_);
  for (const Cached& c : cache_) {
    if (c.epoch == epoch) return c.order;
  }
  // Computed under the lock: two threads asking for a new epoch at once would otherwise both compute it.
  Cached& slot = cache_[oldest_];
  slot.order = permutation(epoch);
  slot.epoch = epoch;
  oldest_ = 1 - oldest_;
  return slot.order;
}

std::int64_t Sampler::sample_at(std::int64_t epoch, std::int64_t position) const {
  DPTRAIN_CHECK(position >= 0 && position < size_, "position ", position, " is outside an epoch of ", size_,
                " samples");
  if (!shuffle_) return position;  // no table needed for the identity
  return (*order(epoch))[static_cast<std::size_t>(position)];
}

std::vector<std::int64_t> Sampler::rank_slice(std::int64_t epoch, std::int64_t batch_start, int per_rank_batch,
                                              int rank) const {
  DPTRAIN_CHECK(per_rank_batch > 0 && rank >= 0 && batch_start >= 0, "rank_slice needs a positive batch (",
                per_rank_batch, "), a rank >= 0 (", rank, ") and a start >= 0 (", batch_start, ")");
  const std::int64_t first = batch_start + static_cast<std::int64_t>(rank) * per_rank_batch;
  const std::int64_t last = std::min(first + per_rank_batch, size_);
  std::vector<std::int64_t> samples;
  if (first >= last) return samples;
  samples.reserve(static_cast<std::size_t>(last - first));
  if (!shuffle_) {
    for (std::int64_t p = first; p < last; ++p) samples.push_back(p);
    return samples;
  }
  const auto table = order(epoch);
  samples.assign(table->begin() + first, table->begin() + last);
  return samples;
}

std::int64_t Sampler::steps_per_epoch(std::int64_t size, std::int64_t global_batch, bool drop_last) {
  DPTRAIN_CHECK(global_batch > 0 && size >= 0, "steps_per_epoch needs a positive global batch (", global_batch,
                ") and a non-negative size (", size, ")");
  return drop_last ? size / global_batch : (size + global_batch - 1) / global_batch;
}

}  // namespace dptrain::data
