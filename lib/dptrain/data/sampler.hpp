#pragma once
// Which sample sits at each position of an epoch. Training draws one global permutation of the split
// per epoch from (seed, epoch) alone; evaluation reads in stored order. Ranks never shuffle on their
// own: rank r of N takes its B consecutive positions of every global batch of N*B, so the samples of a
// step, and their order, are the same on any number of ranks, and resuming needs only (epoch, position).
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace dptrain::data {

class Sampler {
 public:
  // `size` samples; `shuffle` off gives the identity order (evaluation).
  Sampler(std::int64_t size, std::uint64_t seed, bool shuffle);

  std::int64_t size() const { return size_; }
  bool shuffled() const { return shuffle_; }

  // The sample index at `position` (0 <= position < size) of `epoch`. Thread safe: the permutation of
  // the epochs in use is computed once and shared.
  std::int64_t sample_at(std::int64_t epoch, std::int64_t position) const;

  // Rank `rank`'s part of the global batch starting at `batch_start`: the samples at positions
  // [batch_start + rank*B, batch_start + (rank+1)*B), cut at the end of the epoch (so it may be shorter
  // than B, or empty, for the last global batch of an epoch).
  std::vector<std::int64_t> rank_slice(std::int64_t epoch, std::int64_t batch_start, int per_rank_batch,
                                       int rank) const;

  // The whole order of one epoch (the cached copy; shared, never modified).
  std::shared_ptr<const std::vector<std::int64_t>> order(std::int64_t epoch) const;

  // Global batches in an epoch of `size` samples: size / G when the last incomplete batch is dropped,
  // ceil(size / G) when it is kept.
  static std::int64_t steps_per_epoch(std::int64_t size, std::int64_t global_batch, bool drop_last);

 private:
  std::shared_ptr<const std::vector<std::int64_t>> permutation(std::int64_t epoch) const;

  std::int64_t size_;
  std::uint64_t seed_;
  bool shuffle_;
  // Two epochs, because prefetch workers straddle an epoch boundary (the last batches of epoch e and
  // the first of e+1 are in flight together); one entry would recompute the permutation back and forth.
  struct Cached {
    std::int64_t epoch = -1;
    std::shared_ptr<const std::vector<std::int64_t>> order;
  };
  mutable std::mutex mutex_;
  mutable Cached cache_[2];
  mutable int oldest_ = 0;
};

}  // namespace dptrain::data
