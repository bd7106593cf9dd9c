#pragma once
// Synthetic data for benchmarks and tests: images uniform in [-1, 1) and labels uniform over the
// classes, drawn from Philox at (seed, global sample index), so any rank can make any sample.
#include <cstdint>

#include "dptrain/backend/backend.hpp"

namespace dptrain {

// Fills images [N,C,H,W] (on the backend's device) and host labels [N] for samples first..first+N-1.
void fill_synthetic_batch(Backend& backend, std::uint64_t seed, std::int64_t first_sample, int classes, Tensor& images,
                          Tensor& labels);

}  // namespace dptrain
